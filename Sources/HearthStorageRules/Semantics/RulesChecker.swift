import HearthRules

/// Upload-time checks of a parsed rules file, and name resolution for the evaluator.
///
/// Every identifier must name a variable in scope (`request`, `resource`, a wildcard of an enclosing
/// match, a parameter or an earlier `let`); every call must name a visible user function with the right
/// number of arguments, a built-in function, or a known method. Calls are rewritten to
/// ``RuleExpression/Kind/userCall(function:_:)`` and ``RuleExpression/Kind/builtin(_:_:)`` so evaluation
/// does no lookups by name. Values' types are left to run time, as in Firebase.
///
/// For example:
/// ```swift
/// var checker = RulesChecker(source: source, functions: file.functions)
/// let resolved = checker.check(file)  // checker.diagnostics lists e.g. "unknown function 'isOwner'"
/// ```
struct RulesChecker {
    let source: SourceText
    var functions: [FunctionDeclaration]
    var diagnostics: [Diagnostic] = []

    init(source: SourceText, functions: [FunctionDeclaration]) {
        self.source = source
        self.functions = functions
    }

    /// What a name means where it is used.
    struct Scope {
        var functions: [String: Int] = [:]
        var variables: Set<String> = []
    }

    static let globals: Set<String> = ["request", "resource"]
    static let namespaces: Set<String> = ["math", "timestamp", "duration", "latlng", "hashing", "firestore"]

    /// Built-in functions and how many arguments each takes.
    static let builtins: [String: Int] = [
        "int": 1, "float": 1, "string": 1, "bool": 1, "path": 1, "debug": 1,
        "math.abs": 1, "math.ceil": 1, "math.floor": 1, "math.round": 1, "math.sqrt": 1, "math.pow": 2,
        "math.isInfinite": 1, "math.isNaN": 1,
        "timestamp.date": 3, "timestamp.value": 1,
        "duration.value": 2, "duration.time": 4, "duration.abs": 1,
        "latlng.value": 2,
    ]

    /// Methods of every type, with the argument counts they accept (types are only known at run time).
    static let methods: [String: Set<Int>] = [
        // string
        "size": [0], "matches": [1], "lower": [0], "upper": [0], "trim": [0], "split": [1], "replace": [2], "toUtf8": [0],
        // list and set
        "hasAll": [1], "hasAny": [1], "hasOnly": [1], "join": [0, 1], "concat": [1], "removeAll": [1], "toSet": [0],
        "difference": [1], "union": [1], "intersection": [1],
        // map and map diff
        "keys": [0], "values": [0], "get": [2], "diff": [1],
        "addedKeys": [0], "removedKeys": [0], "changedKeys": [0], "affectedKeys": [0], "unchangedKeys": [0],
        // timestamp and duration
        "date": [0], "year": [0], "month": [0], "day": [0], "hours": [0], "minutes": [0], "seconds": [0], "nanos": [0],
        "dayOfWeek": [0], "dayOfYear": [0], "time": [0], "toMillis": [0],
        // latlng and bytes
        "latitude": [0], "longitude": [0], "distance": [1], "toBase64": [0], "toHexString": [0],
    ]

    /// Checks the file and returns it with calls resolved.
    mutating func check(_ file: RulesFile) -> RulesFile {
        var resolved = file
        resolved.body = checkBlock(file.body, scope: Scope())
        resolved.functions = functions
        return resolved
    }

    mutating func checkBlock(_ block: Block, scope outer: Scope) -> Block {
        var scope = outer
        // The block's functions are visible in all of it, before and after their declaration.
        var declaredHere: [String: Int] = [:]
        for index in block.functionIndexes {
            let function = functions[index]
            if let earlier = declaredHere[function.name] {
                let (line, column) = source.position(of: functions[earlier].offset)
                diagnostics.append(source.diagnostic("function '\(function.name)' is already defined at \(line):\(column)", at: function.offset))
                continue
            }
            declaredHere[function.name] = index
            scope.functions[function.name] = index
        }
        for index in block.functionIndexes where declaredHere[functions[index].name] == index {
            checkFunction(index, scope: scope)
        }
        var result = block
        for (i, allow) in block.allows.enumerated() {
            guard let condition = allow.condition else { continue }
            switch condition.kind {
            case .null, .int, .float, .string, .list, .map, .path:
                diagnostics.append(source.diagnostic("the condition of allow must be a boolean", at: condition.start))
            default: break
            }
            result.allows[i].condition = resolve(condition, scope)
        }
        for (i, match) in block.matches.enumerated() {
            var inner = scope
            for segment in match.pattern {
                if let name = segment.variable { inner.variables.insert(name) }
            }
            result.matches[i].body = checkBlock(match.body, scope: inner)
        }
        return result
    }

    mutating func checkFunction(_ index: Int, scope outer: Scope) {
        var scope = outer
        var function = functions[index]
        scope.variables.formUnion(function.parameters)
        for i in function.lets.indices {
            function.lets[i].value = resolve(function.lets[i].value, scope)
            scope.variables.insert(function.lets[i].name)
        }
        function.result = resolve(function.result, scope)
        functions[index] = function
    }

    /// The expression with its calls resolved; problems go to ``diagnostics``.
    mutating func resolve(_ expression: RuleExpression, _ scope: Scope) -> RuleExpression {
        var result = expression
        switch expression.kind {
        case .null, .bool, .int, .float, .string, .userCall, .builtin: break
        case .identifier(let name):
            if scope.variables.contains(name) || RulesChecker.globals.contains(name) { break }
            if name == "firestore" {
                report("firestore.* is not available in Hearth: Storage rules here cannot read Cloud Firestore documents", expression)
            } else if RulesChecker.namespaces.contains(name) {
                report("'\(name)' is a namespace: call one of its functions, such as \(name == "math" ? "math.abs(x)" : "\(name).value(…)")", expression)
            } else if scope.functions[name] != nil {
                report("'\(name)' is a function: call it, \(name)(…)", expression)
            } else {
                report("unknown variable '\(name)'", expression)
            }
        case .list(let elements):
            result.kind = .list(elements.map { resolve($0, scope) })
        case .map(let entries):
            result.kind = .map(entries.map { (resolve($0.key, scope), resolve($0.value, scope)) })
        case .path(let segments):
            result.kind = .path(segments.map { segment in
                if case .interpolated(let inner) = segment { return .interpolated(resolve(inner, scope)) }
                return segment
            })
        case .unary(let op, let operand):
            result.kind = .unary(op, resolve(operand, scope))
        case .binary(let op, let left, let right):
            result.kind = .binary(op, resolve(left, scope), resolve(right, scope))
        case .isType(let operand, let type):
            result.kind = .isType(resolve(operand, scope), type)
        case .conditional(let test, let yes, let no):
            result.kind = .conditional(resolve(test, scope), resolve(yes, scope), resolve(no, scope))
        case .member(let base, let name):
            if case .identifier(let namespace) = base.kind, isNamespace(namespace, scope) {
                if namespace == "firestore" {
                    report("firestore.* is not available in Hearth: Storage rules here cannot read Cloud Firestore documents", expression)
                } else {
                    report("\(namespace).\(name) is a function: call it", expression)
                }
                break
            }
            result.kind = .member(resolve(base, scope), name)
        case .index(let base, let index):
            result.kind = .index(resolve(base, scope), resolve(index, scope))
        case .range(let base, let lower, let upper):
            result.kind = .range(resolve(base, scope), resolve(lower, scope), resolve(upper, scope))
        case .call(let callee, let arguments):
            let resolvedArguments = arguments.map { resolve($0, scope) }
            result.kind = resolveCall(callee, resolvedArguments, scope, expression) ?? expression.kind
        }
        return result
    }

    func isNamespace(_ name: String, _ scope: Scope) -> Bool {
        RulesChecker.namespaces.contains(name) && !scope.variables.contains(name)
    }

    /// The resolved form of a call, or nil (with a diagnostic) when it cannot be resolved.
    mutating func resolveCall(
        _ callee: RuleExpression, _ arguments: [RuleExpression], _ scope: Scope, _ call: RuleExpression
    ) -> RuleExpression.Kind? {
        switch callee.kind {
        case .identifier(let name):
            if let index = scope.functions[name] {
                let function = functions[index]
                guard function.parameters.count == arguments.count else {
                    report("function '\(name)' takes \(count(function.parameters.count)), not \(arguments.count)", callee)
                    return nil
                }
                return .userCall(function: index, arguments)
            }
            if let arity = RulesChecker.builtins[name] {
                guard arity == arguments.count else {
                    report("\(name)() takes \(count(arity)), not \(arguments.count)", callee)
                    return nil
                }
                return .builtin(name, arguments)
            }
            if ["get", "exists", "getAfter", "existsAfter"].contains(name) {
                report("unknown function '\(name)': Firestore's \(name)() does not exist in Storage rules (and firestore.* is not available in Hearth)", callee)
            } else {
                report("unknown function '\(name)'", callee)
            }
            return nil
        case .member(let base, let name):
            if case .identifier(let namespace) = base.kind, isNamespace(namespace, scope) {
                let qualified = "\(namespace).\(name)"
                switch namespace {
                case "firestore":
                    report("firestore.* is not available in Hearth: Storage rules here cannot read Cloud Firestore documents", callee)
                    return nil
                case "hashing":
                    report("hashing.* is not available in Hearth", callee)
                    return nil
                default: break
                }
                guard let arity = RulesChecker.builtins[qualified] else {
                    report("unknown function \(qualified)", callee)
                    return nil
                }
                guard arity == arguments.count else {
                    report("\(qualified)() takes \(count(arity)), not \(arguments.count)", callee)
                    return nil
                }
                return .builtin(qualified, arguments)
            }
            guard let arities = RulesChecker.methods[name] else {
                report("unknown method '\(name)'", callee, at: callee.end - name.utf8.count)
                return nil
            }
            guard arities.contains(arguments.count) else {
                let expected = arities.sorted().map { count($0) }.joined(separator: " or ")
                report("\(name)() takes \(expected), not \(arguments.count)", callee, at: callee.end - name.utf8.count)
                return nil
            }
            return .call(RuleExpression(.member(resolve(base, scope), name), callee.start, callee.end), arguments)
        default:
            report("only functions and methods can be called", callee)
            return nil
        }
    }

    func count(_ n: Int) -> String { n == 1 ? "1 argument" : "\(n) arguments" }

    mutating func report(_ message: String, _ expression: RuleExpression, at offset: Int? = nil) {
        diagnostics.append(source.diagnostic(message, at: offset ?? expression.start))
    }
}
