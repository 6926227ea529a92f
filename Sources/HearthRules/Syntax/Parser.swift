/// Parses one rule expression (the grammar of rest-and-rules.md §5.4) into an ``Expression``.
///
/// For example:
/// ```swift
/// let expression = try Parser.parse("auth != null && $uid === auth.uid")
/// ```
public struct Parser: RulesScanner {
    package let bytes: [UInt8]
    package var offset = 0
    /// Nesting beyond this is rejected, so hostile rules cannot exhaust the stack.
    static let maximumDepth = 200
    /// The tree's depth beyond this is rejected too: a chain (`a + b + c`, `a.b().c()`) is built
    /// left-nested, as deep as it is long, and the checker and the evaluator recurse through it
    /// (100,000 operators had exhausted the stack). Chains of `||` and `&&` are walked along instead, and
    /// have a limit of their own (``maximumLogicalOperands``).
    static let maximumTreeDepth = 200
    /// Operands of one `||` or `&&` chain: a whitelist of ten thousand values.
    static let maximumLogicalOperands = 10_000
    var depth = 0
    var treeDepth = 0

    /// `<` is not `<=`, `!` is not `!=`, `*` is not `**` (which rules reject).
    package static let longerOperators: [StaticString] = ["<=", ">=", "!=", "**"]
    package static let stringSyntax = RulesStringSyntax.databaseRules
    package static let identifiersMayStartWithDollar = true

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

    /// One level of nesting deeper (the tree one level deeper too).
    mutating func deepen() throws(Diagnostic) {
        depth += 1
        guard depth < Parser.maximumDepth else { throw error("expression nested too deeply") }
        try lengthen()
    }

    /// One more operator of a chain: the tree one level deeper.
    mutating func lengthen() throws(Diagnostic) {
        treeDepth += 1
        guard treeDepth < Parser.maximumTreeDepth else { throw error("expression too long") }
    }

    mutating func conditional() throws(Diagnostic) -> Expression {
        let entry = (depth, treeDepth)
        defer { (depth, treeDepth) = entry }
        try deepen()
        let test = try logicalOr()
        guard take("?") else { return test }
        let yes = try conditional()
        guard take(":") else { throw error("expected ':'") }
        let no = try conditional()
        return .conditional(test, yes, no)
    }

    mutating func logicalOr() throws(Diagnostic) -> Expression {
        try logicalChain("||", .or) { parser throws(Diagnostic) in try parser.logicalAnd() }
    }

    mutating func logicalAnd() throws(Diagnostic) -> Expression {
        try logicalChain("&&", .and) { parser throws(Diagnostic) in try parser.equality() }
    }

    /// `operand (token operand)*`, left-nested. The checker and the evaluator walk such a chain along
    /// rather than down, so it costs no depth; it has its own limit (``maximumLogicalOperands``).
    mutating func logicalChain(
        _ token: StaticString, _ op: BinaryOperator, _ operand: (inout Parser) throws(Diagnostic) -> Expression
    ) throws(Diagnostic) -> Expression {
        var left = try operand(&self)
        var operands = 1
        while take(token) {
            operands += 1
            guard operands <= Parser.maximumLogicalOperands else { throw error("expression too long") }
            left = .binary(op, left, try operand(&self))
        }
        return left
    }

    mutating func equality() throws(Diagnostic) -> Expression {
        var left = try relational()
        let entry = (depth, treeDepth)
        defer { (depth, treeDepth) = entry }
        while true {
            if take("===") || take("==") {
                try lengthen()
                left = .binary(.equal, left, try relational())
            } else if take("!==") || take("!=") {
                try lengthen()
                left = .binary(.notEqual, left, try relational())
            } else {
                return left
            }
        }
    }

    mutating func relational() throws(Diagnostic) -> Expression {
        var left = try additive()
        let entry = (depth, treeDepth)
        defer { (depth, treeDepth) = entry }
        while true {
            if take("<=") {
                try lengthen()
                left = .binary(.lessOrEqual, left, try additive())
            } else if take(">=") {
                try lengthen()
                left = .binary(.greaterOrEqual, left, try additive())
            } else if take("<") {
                try lengthen()
                left = .binary(.less, left, try additive())
            } else if take(">") {
                try lengthen()
                left = .binary(.greater, left, try additive())
            } else {
                return left
            }
        }
    }

    mutating func additive() throws(Diagnostic) -> Expression {
        var left = try multiplicative()
        let entry = (depth, treeDepth)
        defer { (depth, treeDepth) = entry }
        while true {
            if take("+") {
                try lengthen()
                left = .binary(.add, left, try multiplicative())
            } else if take("-") {
                try lengthen()
                left = .binary(.subtract, left, try multiplicative())
            } else {
                return left
            }
        }
    }

    mutating func multiplicative() throws(Diagnostic) -> Expression {
        var left = try unary()
        let entry = (depth, treeDepth)
        defer { (depth, treeDepth) = entry }
        while true {
            if peek("**") { throw error("'**' is not supported") }
            if take("*") {
                try lengthen()
                left = .binary(.multiply, left, try unary())
            } else if take("/") {
                try lengthen()
                left = .binary(.divide, left, try unary())
            } else if take("%") {
                try lengthen()
                left = .binary(.remainder, left, try unary())
            } else {
                return left
            }
        }
    }

    mutating func unary() throws(Diagnostic) -> Expression {
        let entry = (depth, treeDepth)
        defer { (depth, treeDepth) = entry }
        try deepen()
        if take("!") { return .not(try unary()) }
        if take("-") { return .negate(try unary()) }
        if peek("+") { throw error("unary '+' is not supported") }
        return try postfix()
    }

    mutating func postfix() throws(Diagnostic) -> Expression {
        var expression = try primary()
        let entry = (depth, treeDepth)
        defer { (depth, treeDepth) = entry }
        while true {
            if take(".") {
                skipSpace()
                guard let name = identifierText() else { throw error("expected a member name after '.'") }
                try lengthen()
                expression = .member(expression, name)
            } else if take("[") {
                let index = try conditional()
                guard take("]") else { throw error("expected ']'") }
                try lengthen()
                expression = .index(expression, index)
            } else if take("(") {
                var arguments: [Expression] = []
                if !take(")") {
                    repeat { arguments.append(try argument()) } while take(",")
                    guard take(")") else { throw error("expected ')'") }
                }
                try lengthen()
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
        let text = try scanString()
        skipSpace()
        return text
    }

    mutating func numberLiteral() throws(Diagnostic) -> Double {
        let start = offset
        if bytes[offset] == UInt8(ascii: "0"), offset + 1 < bytes.count, bytes[offset + 1] | 0x20 == UInt8(ascii: "x") {
            offset += 2
            while offset < bytes.count, isHexDigit(bytes[offset]) { offset += 1 }
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
        guard let name = scanIdentifier() else { return nil }
        skipSpace()
        return name
    }

    /// Consumes an operator or punctuation token, making sure a shorter token does not eat a longer one.
    /// '=' alone is assignment; '&' and '|' alone are bitwise: all rejected by not matching here.
    mutating func take(_ token: StaticString) -> Bool {
        skipSpace()
        guard scanOperator(token) else { return false }
        skipSpace()
        return true
    }

    mutating func skipSpace() { skipWhitespace() }

    var character: String {
        offset < bytes.count ? String(decoding: [bytes[offset]], as: UTF8.self) : "end of expression"
    }

    package func error(_ message: String) -> Diagnostic {
        let (line, column) = RulesSourceMap.position(of: offset, in: bytes)
        return Diagnostic(line: line, column: column, message: message)
    }
}

extension Diagnostic: Error {}
