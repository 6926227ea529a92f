/// Parses one rule expression (the grammar of rest-and-rules.md §5.4) into an ``Expression``.
///
/// For example:
/// ```swift
/// let expression = try Parser.parse("auth != null && $uid === auth.uid")
/// ```
public struct Parser {
    let bytes: [UInt8]
    var offset = 0
    /// Nesting beyond this is rejected, so hostile rules cannot exhaust the stack.
    static let maximumDepth = 200
    var depth = 0

    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    public static func parse(_ text: String) throws(Diagnostic) -> Expression {
        var parser = Parser(text)
        parser.skipSpace()
        let expression = try parser.conditional()
        parser.skipSpace()
        guard parser.offset == parser.bytes.count else { throw parser.error("unexpected '\(parser.character)'") }
        return expression
    }

    // MARK: Grammar

    mutating func conditional() throws(Diagnostic) -> Expression {
        depth += 1
        defer { depth -= 1 }
        guard depth < Parser.maximumDepth else { throw error("expression nested too deeply") }
        let test = try logicalOr()
        guard take("?") else { return test }
        let yes = try conditional()
        guard take(":") else { throw error("expected ':'") }
        let no = try conditional()
        return .conditional(test, yes, no)
    }

    mutating func logicalOr() throws(Diagnostic) -> Expression {
        var left = try logicalAnd()
        while take("||") { left = .binary(.or, left, try logicalAnd()) }
        return left
    }

    mutating func logicalAnd() throws(Diagnostic) -> Expression {
        var left = try equality()
        while take("&&") { left = .binary(.and, left, try equality()) }
        return left
    }

    mutating func equality() throws(Diagnostic) -> Expression {
        var left = try relational()
        while true {
            if take("===") || take("==") {
                left = .binary(.equal, left, try relational())
            } else if take("!==") || take("!=") {
                left = .binary(.notEqual, left, try relational())
            } else {
                return left
            }
        }
    }

    mutating func relational() throws(Diagnostic) -> Expression {
        var left = try additive()
        while true {
            if take("<=") {
                left = .binary(.lessOrEqual, left, try additive())
            } else if take(">=") {
                left = .binary(.greaterOrEqual, left, try additive())
            } else if take("<") {
                left = .binary(.less, left, try additive())
            } else if take(">") {
                left = .binary(.greater, left, try additive())
            } else {
                return left
            }
        }
    }

    mutating func additive() throws(Diagnostic) -> Expression {
        var left = try multiplicative()
        while true {
            if take("+") {
                left = .binary(.add, left, try multiplicative())
            } else if take("-") {
                left = .binary(.subtract, left, try multiplicative())
            } else {
                return left
            }
        }
    }

    mutating func multiplicative() throws(Diagnostic) -> Expression {
        var left = try unary()
        while true {
            if peek("**") { throw error("'**' is not supported") }
            if take("*") {
                left = .binary(.multiply, left, try unary())
            } else if take("/") {
                left = .binary(.divide, left, try unary())
            } else if take("%") {
                left = .binary(.remainder, left, try unary())
            } else {
                return left
            }
        }
    }

    mutating func unary() throws(Diagnostic) -> Expression {
        depth += 1
        defer { depth -= 1 }
        guard depth < Parser.maximumDepth else { throw error("expression nested too deeply") }
        if take("!") { return .not(try unary()) }
        if take("-") { return .negate(try unary()) }
        if peek("+") { throw error("unary '+' is not supported") }
        return try postfix()
    }

    mutating func postfix() throws(Diagnostic) -> Expression {
        var expression = try primary()
        while true {
            if take(".") {
                skipSpace()
                guard let name = identifierText() else { throw error("expected a member name after '.'") }
                expression = .member(expression, name)
            } else if take("[") {
                let index = try conditional()
                guard take("]") else { throw error("expected ']'") }
                expression = .index(expression, index)
            } else if take("(") {
                var arguments: [Expression] = []
                if !take(")") {
                    repeat { arguments.append(try argument()) } while take(",")
                    guard take(")") else { throw error("expected ')'") }
                }
                expression = .call(expression, arguments)
            } else {
                return expression
            }
        }
    }

    mutating func argument() throws(Diagnostic) -> Expression {
        skipSpace()
        if peek("/") { return try regex() }
        if take("[") {
            var elements: [Expression] = []
            if !take("]") {
                repeat { elements.append(try conditional()) } while take(",")
                guard take("]") else { throw error("expected ']'") }
            }
            return .array(elements)
        }
        return try conditional()
    }

    mutating func primary() throws(Diagnostic) -> Expression {
        skipSpace()
        guard offset < bytes.count else { throw error("unexpected end of expression") }
        let c = bytes[offset]
        if take("(") {
            let inner = try conditional()
            guard take(")") else { throw error("expected ')'") }
            return inner
        }
        if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") { return .string(try stringLiteral()) }
        if isDigit(c) || (c == UInt8(ascii: ".") && offset + 1 < bytes.count && isDigit(bytes[offset + 1])) {
            return .number(try numberLiteral())
        }
        let start = offset
        if let name = identifierText() {
            switch name {
            case "true": return .bool(true)
            case "false": return .bool(false)
            case "null": return .null
            case "var", "let", "function", "new", "typeof", "instanceof", "in", "this", "undefined":
                offset = start
                throw error("'\(name)' is not supported in rules")
            default: return .identifier(name, offset: start)
            }
        }
        throw error("unexpected '\(character)'")
    }

    // MARK: Tokens

    /// Where a regular expression leaves the subset Firebase's rules support (`^` only first, `$` only
    /// last, no `(?…)` groups, no backreferences), and why.
    static func unsupportedRegexFeature(_ body: [UInt8]) -> (index: Int, message: String)? {
        var inClass = false
        var index = 0
        while index < body.count {
            let c = body[index]
            if c == UInt8(ascii: "\\"), index + 1 < body.count {
                if !inClass, body[index + 1] >= UInt8(ascii: "1"), body[index + 1] <= UInt8(ascii: "9") {
                    return (index, "backreferences are not supported in regular expressions")
                }
                index += 2
                continue
            }
            if inClass {
                if c == UInt8(ascii: "]") { inClass = false }
            } else if c == UInt8(ascii: "[") {
                inClass = true
            } else if c == UInt8(ascii: "^"), index != 0 {
                return (index, "'^' is only allowed at the start of a regular expression")
            } else if c == UInt8(ascii: "$"), index != body.count - 1 {
                return (index, "'$' is only allowed at the end of a regular expression")
            } else if c == UInt8(ascii: "("), index + 1 < body.count, body[index + 1] == UInt8(ascii: "?") {
                return (index, "(?…) groups are not supported in regular expressions")
            }
            index += 1
        }
        return nil
    }

    mutating func regex() throws(Diagnostic) -> Expression {
        let start = offset
        offset += 1
        var body: [UInt8] = []
        var inClass = false
        while offset < bytes.count {
            let c = bytes[offset]
            if c == UInt8(ascii: "\\"), offset + 1 < bytes.count {
                body.append(c)
                body.append(bytes[offset + 1])
                offset += 2
                continue
            }
            if c == UInt8(ascii: "[") { inClass = true }
            if c == UInt8(ascii: "]") { inClass = false }
            if c == UInt8(ascii: "/") && !inClass { break }
            body.append(c)
            offset += 1
        }
        guard offset < bytes.count else {
            offset = start
            throw error("unterminated regular expression")
        }
        if let (index, message) = Parser.unsupportedRegexFeature(body) {
            offset = start + 1 + index
            throw error(message)
        }
        offset += 1
        var caseInsensitive = false
        while offset < bytes.count, isIdentifierPart(bytes[offset]) {
            guard bytes[offset] == UInt8(ascii: "i"), !caseInsensitive else {
                throw error("only the 'i' flag is supported in regular expressions")
            }
            caseInsensitive = true
            offset += 1
        }
        skipSpace()
        return .regex(pattern: String(decoding: body, as: UTF8.self), caseInsensitive: caseInsensitive)
    }

    mutating func stringLiteral() throws(Diagnostic) -> String {
        let quote = bytes[offset]
        let start = offset
        offset += 1
        var out: [UInt8] = []
        while offset < bytes.count, bytes[offset] != quote {
            var c = bytes[offset]
            if c == UInt8(ascii: "\\"), offset + 1 < bytes.count {
                offset += 1
                c = bytes[offset]
                switch c {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "u"):
                    guard offset + 4 < bytes.count, let value = UInt32(String(decoding: bytes[(offset + 1)...(offset + 4)], as: UTF8.self), radix: 16),
                        let scalar = Unicode.Scalar(value)
                    else { throw error("invalid \\u escape") }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                    offset += 4
                default: out.append(c)
                }
                offset += 1
                continue
            }
            out.append(c)
            offset += 1
        }
        guard offset < bytes.count else {
            offset = start
            throw error("unterminated string")
        }
        offset += 1
        skipSpace()
        return String(decoding: out, as: UTF8.self)
    }

    mutating func numberLiteral() throws(Diagnostic) -> Double {
        let start = offset
        if bytes[offset] == UInt8(ascii: "0"), offset + 1 < bytes.count, bytes[offset + 1] | 0x20 == UInt8(ascii: "x") {
            offset += 2
            while offset < bytes.count, isHex(bytes[offset]) { offset += 1 }
            let text = String(decoding: bytes[(start + 2)..<offset], as: UTF8.self)
            guard let value = UInt64(text, radix: 16) else { throw error("invalid number") }
            skipSpace()
            return Double(value)
        }
        while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] | 0x20 == UInt8(ascii: "e") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        guard let value = Double(String(decoding: bytes[start..<offset], as: UTF8.self)) else {
            offset = start
            throw error("invalid number")
        }
        skipSpace()
        return value
    }

    mutating func identifierText() -> String? {
        guard offset < bytes.count, isIdentifierStart(bytes[offset]) else { return nil }
        let start = offset
        while offset < bytes.count, isIdentifierPart(bytes[offset]) { offset += 1 }
        let name = String(decoding: bytes[start..<offset], as: UTF8.self)
        skipSpace()
        return name
    }

    /// Consumes an operator or punctuation token, making sure a shorter token does not eat a longer one.
    mutating func take(_ token: StaticString) -> Bool {
        skipSpace()
        guard peek(token) else { return false }
        let count = token.utf8CodeUnitCount
        let next = offset + count < bytes.count ? bytes[offset + count] : 0
        // '=' alone is assignment; '&' and '|' alone are bitwise: all rejected by not matching here.
        switch String(describing: token) {
        case "<", ">", "!": if next == UInt8(ascii: "=") { return false }
        case "*": if next == UInt8(ascii: "*") { return false }
        default: break
        }
        offset += count
        skipSpace()
        return true
    }

    func peek(_ token: StaticString) -> Bool {
        let count = token.utf8CodeUnitCount
        guard offset + count <= bytes.count else { return false }
        let base = token.utf8Start
        for i in 0..<count where bytes[offset + i] != base[i] { return false }
        return true
    }

    mutating func skipSpace() {
        while offset < bytes.count, bytes[offset] == 0x20 || bytes[offset] == 0x09 || bytes[offset] == 0x0A || bytes[offset] == 0x0D {
            offset += 1
        }
    }

    var character: String {
        offset < bytes.count ? String(decoding: [bytes[offset]], as: UTF8.self) : "end of expression"
    }

    func error(_ message: String) -> Diagnostic {
        let (line, column) = RulesSourceMap.position(of: offset, in: bytes)
        return Diagnostic(line: line, column: column, message: message)
    }

    func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    func isHex(_ c: UInt8) -> Bool { isDigit(c) || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "f")) }
    func isIdentifierStart(_ c: UInt8) -> Bool {
        (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "z")) || c == UInt8(ascii: "_") || c == UInt8(ascii: "$")
    }
    func isIdentifierPart(_ c: UInt8) -> Bool { isIdentifierStart(c) || isDigit(c) }
}

extension Diagnostic: Error {}
