import HearthRules

/// Parses a Storage rules file (`rules_version = '2'; service firebase.storage { match … }`) into a
/// ``RulesFile``, collecting every syntax error it can find.
///
/// After an error the parser skips to the end of the statement (`;`, or the end of the block of a
/// broken `match`) and goes on, so one upload reports as many problems as it can.
///
/// For example:
/// ```swift
/// var parser = RulesParser("service firebase.storage { match /b/{bucket}/o { allow read; } }")
/// let file = parser.parseFile()  // parser.diagnostics is empty
/// ```
struct RulesParser: RulesScanner {
    let source: SourceText
    var bytes: [UInt8] { source.bytes }
    var offset = 0
    var diagnostics: [Diagnostic] = []
    var functions: [FunctionDeclaration] = []
    var version = "1"
    /// Set when a statement that failed already skipped to its end (a function skips its body).
    var recovered = false
    /// Expression nesting beyond this is refused, so hostile rules cannot exhaust the stack of the
    /// checker and evaluator (which recurse over the tree).
    static let maximumDepth = 100
    /// Likewise for match blocks inside match blocks.
    static let maximumMatchDepth = 50
    var depth = 0

    /// `<` is not `<=`, `!` is not `!=`, and `==` or `!=` followed by `=` is JavaScript, not rules.
    static let longerOperators: [StaticString] = ["<=", ">=", "!=", "===", "!=="]
    static let stringSyntax = RulesStringSyntax.storageRules
    static let identifiersMayStartWithDollar = false

    init(_ text: String) {
        source = SourceText(text)
    }

    init(_ source: SourceText) {
        self.source = source
    }

    // MARK: File

    mutating func parseFile() -> RulesFile {
        var body = Block()
        skipTrivia()
        if takeKeyword("rules_version") {
            do throws(Diagnostic) {
                try expect("=", "expected '=' after rules_version")
                skipTrivia()
                let at = offset
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "'") || bytes[offset] == UInt8(ascii: "\"") else {
                    throw error("expected the version as a string: rules_version = '2';")
                }
                let text = try stringLiteral()
                if text == "1" || text == "2" {
                    version = text
                } else {
                    diagnostics.append(source.diagnostic("unsupported rules_version '\(text)'; use '2' (or '1')", at: at))
                }
                _ = take(";")
            } catch {
                diagnostics.append(error)
                recover(skippingBlock: false)
            }
        }
        skipTrivia()
        let serviceStart = offset
        if takeKeyword("service") {
            skipTrivia()
            let nameStart = offset
            var name = ""
            while offset < bytes.count, isIdentifierPart(bytes[offset]) || bytes[offset] == UInt8(ascii: ".") {
                name.append(Character(Unicode.Scalar(bytes[offset])))
                offset += 1
            }
            if name != "firebase.storage" {
                let message = name == "cloud.firestore"
                    ? "this is a Cloud Firestore rules file; Storage rules declare 'service firebase.storage'"
                    : "expected 'service firebase.storage'" + (name.isEmpty ? "" : ", not '\(name)'")
                diagnostics.append(source.diagnostic(message, at: nameStart))
            }
            skipTrivia()
            let braceAt = offset
            if take("{") {
                body = parseBlock(isService: true, openedAt: braceAt, matchDepth: 0)
            } else {
                diagnostics.append(source.diagnostic("expected '{' after the service name", at: offset))
            }
        } else {
            let message = offset >= bytes.count
                ? "the rules file is empty: expected 'service firebase.storage { … }'"
                : "expected 'service firebase.storage { … }'"
            diagnostics.append(source.diagnostic(message, at: serviceStart))
            // Nothing else can be understood without the service block.
            offset = bytes.count
        }
        skipTrivia()
        if offset < bytes.count {
            diagnostics.append(source.diagnostic("unexpected \(describeHere()) after the service block", at: offset))
        }
        return RulesFile(version: version, body: body, functions: functions)
    }

    /// The statements up to the closing `}` of a service or match body (the `{` already taken).
    mutating func parseBlock(isService: Bool, openedAt: Int, matchDepth: Int) -> Block {
        var block = Block()
        while true {
            skipTrivia()
            guard offset < bytes.count else {
                let (line, column) = source.position(of: openedAt)
                let what = isService ? "service block" : "match block"
                diagnostics.append(source.diagnostic("missing '}' to close the \(what) opened at \(line):\(column)", at: offset))
                return block
            }
            if take("}") { return block }
            if take(";") { continue }  // A stray semicolon is harmless.
            let statementStart = offset
            // A broken match or function is skipped with its whole block.
            var skipsBlock = false
            do throws(Diagnostic) {
                if takeKeyword("match") {
                    skipsBlock = true
                    block.matches.append(try parseMatch(at: statementStart, matchDepth: matchDepth + 1))
                } else if takeKeyword("allow") {
                    let allow = try parseAllow(at: statementStart)
                    if isService {
                        diagnostics.append(source.diagnostic("allow statements must be inside a match block", at: statementStart))
                    } else {
                        block.allows.append(allow)
                    }
                } else if takeKeyword("function") {
                    skipsBlock = true
                    block.functionIndexes.append(try parseFunction(at: statementStart, matchDepth: matchDepth))
                } else {
                    throw error("expected 'match', 'allow' or 'function', found \(describeHere())")
                }
            } catch {
                diagnostics.append(error)
                if !recovered { recover(skippingBlock: skipsBlock) }
                recovered = false
                if offset == statementStart { offset += 1 }
            }
        }
    }

    mutating func parseMatch(at start: Int, matchDepth: Int) throws(Diagnostic) -> MatchBlock {
        guard matchDepth <= RulesParser.maximumMatchDepth else {
            throw source.diagnostic("match blocks nested more than \(RulesParser.maximumMatchDepth) deep", at: start)
        }
        skipTrivia()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "/") else {
            throw error("expected a path starting with '/' after match")
        }
        var pattern: [PathPatternSegment] = []
        var names: Set<String> = []
        var recursiveAt: Int?
        while offset < bytes.count, bytes[offset] == UInt8(ascii: "/") {
            offset += 1
            let segmentStart = offset
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "{") {
                offset += 1
                guard let name = identifierText(skipping: false) else { throw error("expected a wildcard name after '{'") }
                var segment = PathPatternSegment.single(name)
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "=") {
                    guard peek("=**}") else { throw error("expected '=**}' to end a recursive wildcard") }
                    offset += 3
                    segment = .recursive(name)
                    if recursiveAt != nil {
                        throw source.diagnostic("a match path may hold only one recursive wildcard", at: segmentStart)
                    }
                    recursiveAt = pattern.count
                }
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "}") else {
                    throw error("expected '}' to end the wildcard {\(name)")
                }
                offset += 1
                if !names.insert(name).inserted {
                    throw source.diagnostic("the wildcard '\(name)' appears twice in this path", at: segmentStart)
                }
                pattern.append(segment)
            } else {
                while offset < bytes.count, isPathCharacter(bytes[offset]) { offset += 1 }
                guard offset > segmentStart else { throw error("empty path segment") }
                pattern.append(.literal(String(decoding: bytes[segmentStart..<offset], as: UTF8.self)))
            }
        }
        if let recursiveAt, version == "1", recursiveAt != pattern.count - 1 {
            throw source.diagnostic("in rules_version '1' a recursive wildcard must be the last segment; use rules_version = '2'", at: start)
        }
        skipTrivia()
        let braceAt = offset
        guard take("{") else { throw error("expected '{' after the match path") }
        let body = parseBlock(isService: false, openedAt: braceAt, matchDepth: matchDepth)
        return MatchBlock(pattern: pattern, body: body, offset: start)
    }

    mutating func parseAllow(at start: Int) throws(Diagnostic) -> AllowStatement {
        var methods: Set<StorageRuleMethod> = []
        repeat {
            skipTrivia()
            let nameStart = offset
            guard let name = identifierText() else { throw error("expected a method (read, write, get, list, create, update or delete)") }
            switch name {
            case "read": methods.formUnion([.get, .list])
            case "write": methods.formUnion([.create, .update, .delete])
            default:
                if let method = StorageRuleMethod(rawValue: name) {
                    methods.insert(method)
                } else {
                    // Not fatal: the rest of the statement is still worth checking.
                    diagnostics.append(source.diagnostic(
                        "unknown method '\(name)' in allow; use read, write, get, list, create, update or delete", at: nameStart))
                }
            }
        } while take(",")
        var condition: RuleExpression?
        if take(":") {
            guard takeKeyword("if") else { throw error("expected 'if' after ':' in allow") }
            condition = try expression()
        }
        // The semicolon may be left out before the next statement or the end of the block.
        if !take(";"), !(peek("}") || peekKeyword("allow") || peekKeyword("match") || peekKeyword("function")) {
            throw error(condition == nil ? "expected ':' or ';' after the methods of allow" : "expected ';' after the condition, found \(describeHere())")
        }
        let end = lastNonTrivia(before: offset)
        let (line, column) = source.position(of: start)
        return AllowStatement(methods: methods, condition: condition, line: line, column: column, text: source.collapsedText(from: start, to: end))
    }

    /// The offset just after the last non-blank byte before `offset` (so statement text has no trailing space).
    func lastNonTrivia(before offset: Int) -> Int {
        var end = offset
        while end > 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[end - 1]) { end -= 1 }
        return end
    }

    /// Parses a function declaration, stores it in ``functions`` and returns its index.
    mutating func parseFunction(at start: Int, matchDepth: Int) throws(Diagnostic) -> Int {
        skipTrivia()
        let nameStart = offset
        guard let name = identifierText() else { throw error("expected a function name") }
        try expect("(", "expected '(' after the function name")
        var parameters: [String] = []
        if !take(")") {
            repeat {
                skipTrivia()
                let parameterStart = offset
                guard let parameter = identifierText() else { throw error("expected a parameter name") }
                if parameters.contains(parameter) {
                    throw source.diagnostic("parameter '\(parameter)' appears twice", at: parameterStart)
                }
                parameters.append(parameter)
            } while take(",")
            try expect(")", "expected ',' or ')' in the parameter list")
        }
        skipTrivia()
        let bodyStart = offset
        try expect("{", "expected '{' to start the body of function '\(name)'")
        do throws(Diagnostic) {
            return try functionBody(name: name, nameStart: nameStart, parameters: parameters, matchDepth: matchDepth)
        } catch {
            // Skip the whole body, so the rest of the enclosing block still parses.
            offset = bodyStart
            skipBalancedBlock()
            recovered = true
            throw error
        }
    }

    mutating func functionBody(name: String, nameStart: Int, parameters: [String], matchDepth: Int) throws(Diagnostic) -> Int {
        var lets: [(name: String, value: RuleExpression)] = []
        var result: RuleExpression?
        while true {
            skipTrivia()
            if peek("}") {
                guard let result else { throw error("function '\(name)' must end with a return statement") }
                offset += 1
                functions.append(FunctionDeclaration(
                    name: name, parameters: parameters, lets: lets, result: result, offset: nameStart, depth: matchDepth))
                return functions.count - 1
            }
            if result != nil { throw error("nothing may follow the return statement of function '\(name)'") }
            if takeKeyword("let") {
                skipTrivia()
                let letStart = offset
                guard let variable = identifierText() else { throw error("expected a variable name after let") }
                if parameters.contains(variable) || lets.contains(where: { $0.name == variable }) {
                    throw source.diagnostic("'\(variable)' is already defined in function '\(name)'", at: letStart)
                }
                try expect("=", "expected '=' after let \(variable)")
                lets.append((variable, try expression()))
                try expect(";", "expected ';' after the let statement")
            } else if takeKeyword("return") {
                result = try expression()
                _ = take(";")
            } else {
                throw error("expected 'let' or 'return' in the body of function '\(name)', found \(describeHere())")
            }
        }
    }

    /// Skips the rest of a broken statement: to just after its `;`, or (for a broken match) past its
    /// block, or up to the `}` that closes the enclosing block.
    mutating func recover(skippingBlock: Bool) {
        var nesting = 0
        while offset < bytes.count {
            let c = bytes[offset]
            if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") {
                skipString()
                continue
            }
            if c == UInt8(ascii: "/"), offset + 1 < bytes.count, bytes[offset + 1] == UInt8(ascii: "/") || bytes[offset + 1] == UInt8(ascii: "*") {
                skipTrivia()
                continue
            }
            switch c {
            case UInt8(ascii: "("), UInt8(ascii: "["): nesting += 1
            case UInt8(ascii: ")"), UInt8(ascii: "]"): nesting = max(0, nesting - 1)
            case UInt8(ascii: "{"):
                if skippingBlock, nesting == 0 {
                    skipBalancedBlock()
                    return
                }
                nesting += 1
            case UInt8(ascii: "}"):
                if nesting == 0 { return }
                nesting -= 1
            case UInt8(ascii: ";"):
                if nesting == 0 {
                    offset += 1
                    return
                }
            default: break
            }
            offset += 1
        }
    }

    /// Past a string literal, or past its opening quote if it is unterminated.
    mutating func skipString() {
        let start = offset
        if (try? stringLiteral()) == nil { offset = start + 1 }
    }

    /// From a `{`, to just after its matching `}`.
    mutating func skipBalancedBlock() {
        var nesting = 0
        while offset < bytes.count {
            let c = bytes[offset]
            if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") {
                skipString()
                continue
            }
            if c == UInt8(ascii: "/"), offset + 1 < bytes.count, bytes[offset + 1] == UInt8(ascii: "/") || bytes[offset + 1] == UInt8(ascii: "*") {
                skipTrivia()
                continue
            }
            if c == UInt8(ascii: "{") { nesting += 1 }
            if c == UInt8(ascii: "}") {
                nesting -= 1
                if nesting == 0 {
                    offset += 1
                    return
                }
            }
            offset += 1
        }
    }

    // MARK: Lone expressions

    /// One expression and nothing else (the expression fixtures and tests use this).
    mutating func parseLoneExpression() throws(Diagnostic) -> RuleExpression {
        let result = try expression()
        skipTrivia()
        guard offset == bytes.count else { throw error("unexpected \(describeHere())") }
        return result
    }
}

// MARK: - Expressions

extension RulesParser {
    /// `a ? b : c`, the lowest precedence.
    mutating func expression() throws(Diagnostic) -> RuleExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth < RulesParser.maximumDepth else { throw error("expression nested too deeply") }
        let test = try logicalOr()
        guard take("?") else { return test }
        let yes = try expression()
        try expect(":", "expected ':' in the conditional expression")
        let no = try expression()
        return RuleExpression(.conditional(test, yes, no), test.start, no.end)
    }

    mutating func logicalOr() throws(Diagnostic) -> RuleExpression {
        var left = try logicalAnd()
        var links = 0
        while take("||") {
            try link(&links)
            let right = try logicalAnd()
            left = RuleExpression(.binary(.or, left, right), left.start, right.end)
        }
        return left
    }

    mutating func logicalAnd() throws(Diagnostic) -> RuleExpression {
        var left = try relation()
        var links = 0
        while take("&&") {
            try link(&links)
            let right = try relation()
            left = RuleExpression(.binary(.and, left, right), left.start, right.end)
        }
        return left
    }

    /// `== != < <= > >= in is`: one level, as in CEL.
    mutating func relation() throws(Diagnostic) -> RuleExpression {
        var left = try additive()
        var links = 0
        while true {
            try link(&links)
            let op: RuleExpression.BinaryOperator
            if take("==") {
                op = .equal
            } else if take("!=") {
                op = .notEqual
            } else if take("<=") {
                op = .lessOrEqual
            } else if take(">=") {
                op = .greaterOrEqual
            } else if take("<") {
                op = .less
            } else if take(">") {
                op = .greater
            } else if takeKeyword("in") {
                op = .in
            } else if takeKeyword("is") {
                skipTrivia()
                let typeStart = offset
                guard let name = identifierText(), let type = RuleExpression.TypeName(rawValue: name) else {
                    offset = typeStart
                    let names = RuleExpression.TypeName.allCases.map(\.rawValue).joined(separator: ", ")
                    throw error("expected a type name after 'is' (\(names))")
                }
                left = RuleExpression(.isType(left, type), left.start, typeStart + name.utf8.count)
                continue
            } else {
                if peek("===") || peek("!==") { throw error("use '==' and '!=' (there is no '===' in Storage rules)") }
                return left
            }
            let right = try additive()
            left = RuleExpression(.binary(op, left, right), left.start, right.end)
        }
    }

    mutating func additive() throws(Diagnostic) -> RuleExpression {
        var left = try multiplicative()
        var links = 0
        while true {
            try link(&links)
            let op: RuleExpression.BinaryOperator
            if take("+") {
                op = .add
            } else if take("-") {
                op = .subtract
            } else {
                return left
            }
            let right = try multiplicative()
            left = RuleExpression(.binary(op, left, right), left.start, right.end)
        }
    }

    mutating func multiplicative() throws(Diagnostic) -> RuleExpression {
        var left = try unary()
        var links = 0
        while true {
            try link(&links)
            let op: RuleExpression.BinaryOperator
            if take("*") {
                op = .multiply
            } else if take("/") {
                op = .divide
            } else if take("%") {
                op = .remainder
            } else {
                return left
            }
            let right = try unary()
            left = RuleExpression(.binary(op, left, right), left.start, right.end)
        }
    }

    mutating func unary() throws(Diagnostic) -> RuleExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth < RulesParser.maximumDepth else { throw error("expression nested too deeply") }
        skipTrivia()
        let start = offset
        if take("!") {
            let operand = try unary()
            return RuleExpression(.unary(.not, operand), start, operand.end)
        }
        if take("-") {
            skipTrivia()
            // `-9223372036854775808` is a valid int although its magnitude alone is not.
            if offset < bytes.count, isDigit(bytes[offset]) {
                var literal = try number(negative: true)
                literal.start = start
                return try postfix(literal)
            }
            let operand = try unary()
            return RuleExpression(.unary(.negate, operand), start, operand.end)
        }
        return try postfix(try primary())
    }

    mutating func postfix(_ base: RuleExpression) throws(Diagnostic) -> RuleExpression {
        var result = base
        var links = 0
        while true {
            try link(&links)
            if take(".") {
                skipTrivia()
                guard let name = identifierText() else { throw error("expected a member name after '.'") }
                result = RuleExpression(.member(result, name), result.start, offset)
            } else if take("[") {
                let index = try expression()
                if take(":") {
                    let upper = try expression()
                    try expect("]", "expected ']' to end the range")
                    result = RuleExpression(.range(result, index, upper), result.start, offset)
                } else {
                    try expect("]", "expected ']'")
                    result = RuleExpression(.index(result, index), result.start, offset)
                }
            } else if take("(") {
                let callAt = offset - 1
                switch result.kind {
                case .identifier, .member: break
                default:
                    throw source.diagnostic("only functions and methods can be called", at: callAt)
                }
                var arguments: [RuleExpression] = []
                if !take(")") {
                    repeat { arguments.append(try expression()) } while take(",")
                    try expect(")", "expected ',' or ')' in the arguments")
                }
                result = RuleExpression(.call(result, arguments), result.start, offset)
            } else {
                return result
            }
        }
    }

    mutating func primary() throws(Diagnostic) -> RuleExpression {
        skipTrivia()
        let start = offset
        guard offset < bytes.count else { throw error("unexpected end of the rules, expected an expression") }
        let c = bytes[offset]
        if take("(") {
            let inner = try expression()
            try expect(")", "expected ')'")
            return RuleExpression(inner.kind, start, offset)
        }
        if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") {
            let text = try stringLiteral()
            return RuleExpression(.string(text), start, offset)
        }
        if isDigit(c) || (c == UInt8(ascii: ".") && offset + 1 < bytes.count && isDigit(bytes[offset + 1])) {
            return try number(negative: false)
        }
        if take("[") {
            var elements: [RuleExpression] = []
            while !take("]") {
                elements.append(try expression())
                if !take(",") {
                    try expect("]", "expected ',' or ']' in the list")
                    break
                }
            }
            return RuleExpression(.list(elements), start, offset)
        }
        if take("{") {
            var entries: [(key: RuleExpression, value: RuleExpression)] = []
            while !take("}") {
                let key = try expression()
                try expect(":", "expected ':' after the map key")
                entries.append((key, try expression()))
                if !take(",") {
                    try expect("}", "expected ',' or '}' in the map")
                    break
                }
            }
            return RuleExpression(.map(entries), start, offset)
        }
        if c == UInt8(ascii: "/") { return try pathLiteral() }
        if let name = identifierText(skipping: false) {
            let end = offset
            switch name {
            case "true": return RuleExpression(.bool(true), start, end)
            case "false": return RuleExpression(.bool(false), start, end)
            case "null": return RuleExpression(.null, start, end)
            case "in", "is", "if", "let", "return", "function", "match", "allow", "service":
                offset = start
                throw error("unexpected keyword '\(name)', expected an expression")
            default: return RuleExpression(.identifier(name), start, end)
            }
        }
        throw error("unexpected \(describeHere()), expected an expression")
    }

    /// Left-leaning chains (`a + b + c…`, `a.b.c…`) nest as deeply as parentheses: count each link.
    mutating func link(_ links: inout Int) throws(Diagnostic) {
        links += 1
        guard depth + links < RulesParser.maximumDepth else { throw error("expression nested too deeply") }
    }

    /// `/a/b/$(expr)`: a path literal (only where an operand is expected, so `/` is not division).
    mutating func pathLiteral() throws(Diagnostic) -> RuleExpression {
        let start = offset
        var segments: [RuleExpression.PathLiteralSegment] = []
        while offset < bytes.count, bytes[offset] == UInt8(ascii: "/") {
            offset += 1
            if peek("$(") {
                offset += 2
                let inner = try expression()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: ")") else { throw error("expected ')' to end $(…)") }
                offset += 1
                segments.append(.interpolated(inner))
            } else {
                let segmentStart = offset
                while offset < bytes.count, isPathCharacter(bytes[offset]), bytes[offset] != UInt8(ascii: ")"),
                    bytes[offset] != UInt8(ascii: ","), bytes[offset] != UInt8(ascii: "]"), bytes[offset] != UInt8(ascii: ";")
                {
                    offset += 1
                }
                guard offset > segmentStart else { throw error("empty path segment") }
                segments.append(.literal(String(decoding: bytes[segmentStart..<offset], as: UTF8.self)))
            }
        }
        return RuleExpression(.path(segments), start, offset)
    }

    /// An int (64-bit) or float literal; the sign, when given, belongs to the literal.
    mutating func number(negative: Bool) throws(Diagnostic) -> RuleExpression {
        let start = offset
        if bytes[offset] == UInt8(ascii: "0"), offset + 1 < bytes.count, bytes[offset + 1] | 0x20 == UInt8(ascii: "x") {
            offset += 2
            let digitsStart = offset
            while offset < bytes.count, isHexDigit(bytes[offset]) { offset += 1 }
            guard offset > digitsStart else { throw source.diagnostic("expected hexadecimal digits after 0x", at: start) }
            let text = (negative ? "-" : "") + String(decoding: bytes[digitsStart..<offset], as: UTF8.self)
            guard let value = Int64(text, radix: 16) else { throw source.diagnostic("integer literal out of range", at: start) }
            return RuleExpression(.int(value), start, offset)
        }
        var isFloat = false
        while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        if offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "."), isDigit(bytes[offset + 1]) {
            isFloat = true
            offset += 1
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] | 0x20 == UInt8(ascii: "e") {
            var probe = offset + 1
            if probe < bytes.count, bytes[probe] == UInt8(ascii: "+") || bytes[probe] == UInt8(ascii: "-") { probe += 1 }
            if probe < bytes.count, isDigit(bytes[probe]) {
                isFloat = true
                offset = probe
                while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
            }
        }
        let text = (negative ? "-" : "") + String(decoding: bytes[start..<offset], as: UTF8.self)
        if isFloat {
            guard let value = Double(text) else { throw source.diagnostic("invalid number", at: start) }
            return RuleExpression(.float(value), start, offset)
        }
        guard let value = Int64(text) else {
            throw source.diagnostic("integer literal out of range (ints are 64-bit; write a float such as 1e20)", at: start)
        }
        return RuleExpression(.int(value), start, offset)
    }

    // MARK: Tokens

    /// A string in '…' or "…". Escapes: \n \t \r \b \f \v \0 \\ \' \" \uXXXX \xHH; any other escaped
    /// character keeps its backslash, so regular expressions such as '\d+' and '\.' read as written.
    mutating func stringLiteral() throws(Diagnostic) -> String {
        try scanString()
    }

    mutating func identifierText(skipping: Bool = true) -> String? {
        if skipping { skipTrivia() }
        return scanIdentifier()
    }

    /// Consumes an operator or punctuation token, making sure a shorter token does not eat a longer one.
    mutating func take(_ token: StaticString) -> Bool {
        skipTrivia()
        return scanOperator(token)
    }

    mutating func expect(_ token: StaticString, _ message: @autoclosure () -> String) throws(Diagnostic) {
        guard take(token) else { throw error(message()) }
    }

    mutating func takeKeyword(_ word: String) -> Bool {
        skipTrivia()
        guard peekKeyword(word) else { return false }
        offset += word.utf8.count
        return true
    }

    func peekKeyword(_ word: String) -> Bool {
        let count = word.utf8.count
        guard offset + count <= bytes.count, bytes[offset..<(offset + count)].elementsEqual(word.utf8) else { return false }
        return offset + count == bytes.count || !isIdentifierPart(bytes[offset + count])
    }

    /// Skips whitespace and comments (`// …` and `/* … */`).
    mutating func skipTrivia() {
        while offset < bytes.count {
            let c = bytes[offset]
            if isWhitespace(c) {
                offset += 1
            } else if c == UInt8(ascii: "/"), offset + 1 < bytes.count, bytes[offset + 1] == UInt8(ascii: "/") {
                while offset < bytes.count, bytes[offset] != 0x0A { offset += 1 }
            } else if c == UInt8(ascii: "/"), offset + 1 < bytes.count, bytes[offset + 1] == UInt8(ascii: "*") {
                let start = offset
                offset += 2
                while offset < bytes.count, !(bytes[offset] == UInt8(ascii: "*") && offset + 1 < bytes.count && bytes[offset + 1] == UInt8(ascii: "/")) {
                    offset += 1
                }
                if offset >= bytes.count {
                    diagnostics.append(source.diagnostic("unterminated comment", at: start))
                    return
                }
                offset += 2
            } else {
                return
            }
        }
    }

    /// What is at the current offset, for messages: `'x'`, `'allow'`, or "the end of the rules".
    func describeHere() -> String {
        guard offset < bytes.count else { return "the end of the rules" }
        if isIdentifierStart(bytes[offset]) {
            var end = offset
            while end < bytes.count, isIdentifierPart(bytes[end]) { end += 1 }
            return "'\(String(decoding: bytes[offset..<end], as: UTF8.self))'"
        }
        // One whole UTF-8 character.
        var end = offset + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        return "'\(String(decoding: bytes[offset..<end], as: UTF8.self))'"
    }

    func error(_ message: String) -> Diagnostic {
        source.diagnostic(message, at: offset)
    }

    /// Bytes a literal path segment may hold: anything but blanks, '/', braces and quotes.
    func isPathCharacter(_ c: UInt8) -> Bool {
        !(c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == UInt8(ascii: "/") || c == UInt8(ascii: "{")
            || c == UInt8(ascii: "}") || c == UInt8(ascii: "'") || c == UInt8(ascii: "\""))
    }
}
