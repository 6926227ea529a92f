/// Evaluates checked expressions against one request. Errors are values of their own (thrown
/// ``EvaluationError``s); the caller turns a condition that fails into "not granted".
///
/// `&&` and `||` absorb errors as CEL does: `false && error` and `error && false` are false,
/// `true || error` and `error || true` are true. Function calls nest at most 20 deep (Firebase's limit),
/// one evaluation makes at most ``maximumCalls`` calls, and evaluation recurses at most
/// ``maximumNesting`` levels, so no rules file can run away or exhaust the stack.
///
/// For example:
/// ```swift
/// var evaluator = StorageRulesEvaluator(functions: file.functions, source: source, request: request, resource: .null)
/// let value = try evaluator.evaluate(condition, in: StorageRulesEvaluator.Scope(wildcards: [["uid": .string("ada")]]))
/// ```
struct StorageRulesEvaluator {
    let functions: [FunctionDeclaration]
    let source: SourceText
    /// The `request` variable (a map) and `resource` (a map or null).
    let request: RuleValue
    let resource: RuleValue
    var calls = 0
    /// How deep evaluation is, counting every expression level through every function call.
    var nesting = 0

    static let maximumCallDepth = 20
    static let maximumCalls = 10_000
    /// The parser allows 100 levels per expression and Firebase 20 nested calls; together that could
    /// recurse 2,000 levels, more than a thread's stack holds in debug builds. Real rules stay far below.
    static let maximumNesting = 300

    /// The names an expression sees besides `request` and `resource`.
    struct Scope {
        /// Parameters and `let`s of the function being evaluated; a `let` that failed fails only when used.
        var locals: [String: Result<RuleValue, EvaluationError>] = [:]
        /// Wildcard bindings, one frame per enclosing match, outermost first.
        var wildcards: ArraySlice<[String: RuleValue]> = []
        var callDepth = 0
    }

    init(functions: [FunctionDeclaration], source: SourceText, request: RuleValue, resource: RuleValue) {
        self.functions = functions
        self.source = source
        self.request = request
        self.resource = resource
    }

    mutating func evaluate(_ expression: RuleExpression, in scope: Scope) throws(EvaluationError) -> RuleValue {
        nesting += 1
        defer { nesting -= 1 }
        guard nesting <= StorageRulesEvaluator.maximumNesting else {
            throw EvaluationError("evaluation nested deeper than \(StorageRulesEvaluator.maximumNesting) levels")
        }
        // Each case is one call and binds nothing: a debug build's frame holds every case's payloads and
        // temporaries, and this function recurses once per level of the expression.
        switch expression.kind {
        case .null, .bool, .int, .float, .string: return literal(expression)
        case .identifier: return try identifier(expression, scope)
        case .list, .map, .path: return try collection(expression, scope)
        case .unary: return try unary(expression, scope)
        case .binary: return try binary(expression, scope)
        case .isType, .conditional: return try test(expression, scope)
        case .member, .index, .range: return try access(expression, scope)
        case .call, .builtin, .userCall: return try call(expression, scope)
        }
    }

    func literal(_ expression: RuleExpression) -> RuleValue {
        switch expression.kind {
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .float(let d): .float(d)
        case .string(let s): .string(s)
        default: .null
        }
    }

    func identifier(_ expression: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        guard case .identifier(let name) = expression.kind else { preconditionFailure() }
        return try lookup(name, scope)
    }

    mutating func collection(_ expression: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        switch expression.kind {
        case .list(let elements): return .list(try values(elements, scope))
        case .map(let entries): return try map(entries, scope)
        case .path(let segments): return try path(segments, scope)
        default: preconditionFailure()
        }
    }

    mutating func unary(_ expression: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        guard case .unary(let op, let operand) = expression.kind else { preconditionFailure() }
        return try unary(op, operand, scope)
    }

    mutating func binary(_ expression: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        guard case .binary(let op, let left, let right) = expression.kind else { preconditionFailure() }
        return try binary(op, left, right, scope)
    }

    mutating func test(_ expression: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        switch expression.kind {
        case .isType(let operand, let type): return .bool(try evaluate(operand, in: scope).isOf(type))
        case .conditional(let test, let yes, let no): return try conditional(test, yes, no, scope)
        default: preconditionFailure()
        }
    }

    mutating func access(_ expression: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        switch expression.kind {
        case .member(let base, let name): return try member(try evaluate(base, in: scope), name, base)
        case .index(let base, let index): return try self.index(try evaluate(base, in: scope), try evaluate(index, in: scope), base)
        case .range(let base, let lower, let upper):
            return try range(try evaluate(base, in: scope), try evaluate(lower, in: scope), try evaluate(upper, in: scope), base)
        default: preconditionFailure()
        }
    }

    mutating func call(_ expression: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        switch expression.kind {
        case .call(let callee, let arguments): return try methodCall(callee, arguments, scope)
        case .builtin(let name, let arguments): return try builtin(name, try values(arguments, scope))
        case .userCall(let index, let arguments): return try call(index, arguments, scope)
        default: preconditionFailure()
        }
    }

    mutating func values(_ expressions: [RuleExpression], _ scope: Scope) throws(EvaluationError) -> [RuleValue] {
        var values: [RuleValue] = []
        values.reserveCapacity(expressions.count)
        for expression in expressions { values.append(try evaluate(expression, in: scope)) }
        return values
    }

    mutating func map(_ entries: [(key: RuleExpression, value: RuleExpression)], _ scope: Scope) throws(EvaluationError) -> RuleValue {
        var map = RuleMap()
        for (keyExpression, valueExpression) in entries {
            guard case .string(let key) = try evaluate(keyExpression, in: scope) else {
                throw EvaluationError("map keys must be strings: \(describe(keyExpression))")
            }
            map[key] = try evaluate(valueExpression, in: scope)
        }
        return .map(map)
    }

    mutating func path(_ segments: [RuleExpression.PathLiteralSegment], _ scope: Scope) throws(EvaluationError) -> RuleValue {
        var parts: [String] = []
        for segment in segments {
            switch segment {
            case .literal(let text): parts.append(text)
            case .interpolated(let inner):
                let value = try evaluate(inner, in: scope)
                switch value {
                case .string(let s): parts.append(contentsOf: RulePath(parsing: s).segments)
                case .path(let p): parts.append(contentsOf: p.segments)
                case .int, .float, .bool: parts.append(value.text)
                default: throw EvaluationError("$(…) in a path needs a string, not \(value.typeName)")
                }
            }
        }
        return .path(RulePath(segments: parts, absolute: true))
    }

    mutating func unary(_ op: RuleExpression.UnaryOperator, _ operand: RuleExpression, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        let value = try evaluate(operand, in: scope)
        switch (op, value) {
        case (.not, .bool(let b)): return .bool(!b)
        case (.negate, .int(let i)):
            guard i != .min else { throw EvaluationError("integer overflow") }
            return .int(-i)
        case (.negate, .float(let d)): return .float(-d)
        case (.negate, .duration(let d)): return .duration(try d.negated())
        default: throw EvaluationError("'\(op.rawValue)' cannot apply to \(value.typeName) (\(describe(operand)))")
        }
    }

    mutating func conditional(
        _ test: RuleExpression, _ yes: RuleExpression, _ no: RuleExpression, _ scope: Scope
    ) throws(EvaluationError) -> RuleValue {
        guard case .bool(let b) = try evaluate(test, in: scope) else {
            throw EvaluationError("the test of ?: must be a boolean: \(describe(test))")
        }
        return try evaluate(b ? yes : no, in: scope)
    }

    /// `receiver.name(arguments)`: the checker leaves only method calls as `.call`.
    mutating func methodCall(_ callee: RuleExpression, _ arguments: [RuleExpression], _ scope: Scope) throws(EvaluationError) -> RuleValue {
        guard case .member(let base, let name) = callee.kind else { throw EvaluationError("only methods can be called here") }
        let receiver = try evaluate(base, in: scope)
        return try method(receiver, name, try values(arguments, scope), base)
    }

    func lookup(_ name: String, _ scope: Scope) throws(EvaluationError) -> RuleValue {
        if let local = scope.locals[name] { return try local.get() }
        for frame in scope.wildcards.reversed() {
            if let value = frame[name] { return value }
        }
        switch name {
        case "request": return request
        case "resource": return resource
        default: throw EvaluationError("unknown variable '\(name)'")
        }
    }

    mutating func call(_ index: Int, _ arguments: [RuleExpression], _ scope: Scope) throws(EvaluationError) -> RuleValue {
        let function = functions[index]
        guard scope.callDepth < StorageRulesEvaluator.maximumCallDepth else {
            throw EvaluationError("function calls nest deeper than \(StorageRulesEvaluator.maximumCallDepth) (in \(function.name))")
        }
        calls += 1
        guard calls <= StorageRulesEvaluator.maximumCalls else { throw EvaluationError("more than \(StorageRulesEvaluator.maximumCalls) function calls") }
        var inner = Scope()
        inner.callDepth = scope.callDepth + 1
        // A function sees the wildcards of the matches around its declaration, not those of its caller.
        inner.wildcards = scope.wildcards.prefix(function.depth)
        for (parameter, argument) in zip(function.parameters, arguments) {
            inner.locals[parameter] = .success(try evaluate(argument, in: scope))
        }
        for (name, expression) in function.lets {
            do throws(EvaluationError) {
                inner.locals[name] = .success(try evaluate(expression, in: inner))
            } catch {
                inner.locals[name] = .failure(error)
            }
        }
        return try evaluate(function.result, in: inner)
    }

    mutating func binary(
        _ op: RuleExpression.BinaryOperator, _ leftExpression: RuleExpression, _ rightExpression: RuleExpression, _ scope: Scope
    ) throws(EvaluationError) -> RuleValue {
        if op == .and || op == .or {
            // The deciding value wins even over an error on the other side.
            let decisive = op == .or
            var firstError: EvaluationError?
            do throws(EvaluationError) {
                let left = try evaluate(leftExpression, in: scope)
                guard case .bool(let l) = left else {
                    throw EvaluationError("'\(op.rawValue)' needs booleans, not \(left.typeName) (\(describe(leftExpression)))")
                }
                if l == decisive { return .bool(decisive) }
            } catch {
                firstError = error
            }
            let right = try evaluate(rightExpression, in: scope)
            guard case .bool(let r) = right else {
                throw EvaluationError("'\(op.rawValue)' needs booleans, not \(right.typeName) (\(describe(rightExpression)))")
            }
            if r == decisive { return .bool(decisive) }
            if let firstError { throw firstError }
            return .bool(r)
        }
        let left = try evaluate(leftExpression, in: scope)
        let right = try evaluate(rightExpression, in: scope)
        switch op {
        case .equal: return .bool(RuleValue.equal(left, right))
        case .notEqual: return .bool(!RuleValue.equal(left, right))
        case .less: return .bool(try RuleValue.compare(left, right) < 0)
        case .lessOrEqual: return .bool(try RuleValue.compare(left, right) <= 0)
        case .greater: return .bool(try RuleValue.compare(left, right) > 0)
        case .greaterOrEqual: return .bool(try RuleValue.compare(left, right) >= 0)
        case .in: return .bool(try contains(right, left, rightExpression))
        default: return try arithmetic(op, left, right)
        }
    }

    /// `element in collection`: list or set membership, or a key of a map.
    func contains(_ collection: RuleValue, _ element: RuleValue, _ expression: RuleExpression) throws(EvaluationError) -> Bool {
        switch collection {
        case .list(let items), .set(let items): return items.contains { RuleValue.equal($0, element) }
        case .map(let map):
            guard case .string(let key) = element else { return false }
            return map[key] != nil
        case .null: throw EvaluationError("\(describe(expression)) is null")
        default: throw EvaluationError("'in' needs a list, set or map on its right, not \(collection.typeName)")
        }
    }

    func arithmetic(_ op: RuleExpression.BinaryOperator, _ left: RuleValue, _ right: RuleValue) throws(EvaluationError) -> RuleValue {
        switch (left, right) {
        case let (.int(a), .int(b)):
            let (result, overflow): (Int64, Bool)
            switch op {
            case .add: (result, overflow) = a.addingReportingOverflow(b)
            case .subtract: (result, overflow) = a.subtractingReportingOverflow(b)
            case .multiply: (result, overflow) = a.multipliedReportingOverflow(by: b)
            case .divide:
                guard b != 0 else { throw EvaluationError("division by zero") }
                (result, overflow) = a.dividedReportingOverflow(by: b)
            default:
                guard b != 0 else { throw EvaluationError("modulus by zero") }
                (result, overflow) = a.remainderReportingOverflow(dividingBy: b)
            }
            guard !overflow else { throw EvaluationError("integer overflow") }
            return .int(result)
        case (.int, .float), (.float, .int), (.float, .float):
            let a = left.doubleValue!
            let b = right.doubleValue!
            switch op {
            case .add: return .float(a + b)
            case .subtract: return .float(a - b)
            case .multiply: return .float(a * b)
            case .divide: return .float(a / b)
            default: return .float(a.truncatingRemainder(dividingBy: b))
            }
        case let (.string(a), .string(b)) where op == .add: return .string(a + b)
        case let (.list(a), .list(b)) where op == .add: return .list(a + b)
        case let (.bytes(a), .bytes(b)) where op == .add: return .bytes(a + b)
        case let (.timestamp(t), .duration(d)) where op == .add: return .timestamp(try t.adding(d))
        case let (.duration(d), .timestamp(t)) where op == .add: return .timestamp(try t.adding(d))
        case let (.timestamp(t), .duration(d)) where op == .subtract: return .timestamp(try t.subtracting(d))
        case let (.timestamp(a), .timestamp(b)) where op == .subtract: return .duration(try a.since(b))
        case let (.duration(a), .duration(b)) where op == .add: return .duration(try a.adding(b))
        case let (.duration(a), .duration(b)) where op == .subtract: return .duration(try a.adding(try b.negated()))
        default:
            throw EvaluationError("'\(op.rawValue)' cannot apply to \(left.typeName) and \(right.typeName)")
        }
    }

    func member(_ base: RuleValue, _ name: String, _ baseExpression: RuleExpression) throws(EvaluationError) -> RuleValue {
        switch base {
        case .map(let map):
            guard let value = map[name] else { throw EvaluationError("\(describe(baseExpression)) has no key '\(name)'") }
            return value
        case .null: throw EvaluationError("\(describe(baseExpression)) is null")
        default: throw EvaluationError("\(describe(baseExpression)) is a \(base.typeName), which has no field '\(name)'")
        }
    }

    func index(_ base: RuleValue, _ index: RuleValue, _ baseExpression: RuleExpression) throws(EvaluationError) -> RuleValue {
        switch (base, index) {
        case let (.map(map), .string(key)):
            guard let value = map[key] else { throw EvaluationError("\(describe(baseExpression)) has no key '\(key)'") }
            return value
        case let (.list(items), .int(i)):
            guard i >= 0, i < items.count else { throw EvaluationError("index \(i) is out of range for a list of size \(items.count)") }
            return items[Int(i)]
        case let (.string(s), .int(i)):
            let scalars = Array(s.unicodeScalars)
            guard i >= 0, i < scalars.count else { throw EvaluationError("index \(i) is out of range for a string of size \(scalars.count)") }
            return .string(String(scalars[Int(i)]))
        case let (.path(p), .int(i)):
            guard i >= 0, i < p.segments.count else { throw EvaluationError("index \(i) is out of range for a path of \(p.segments.count) segments") }
            return .string(p.segments[Int(i)])
        case let (.bytes(b), .int(i)):
            guard i >= 0, i < b.count else { throw EvaluationError("index \(i) is out of range for bytes of size \(b.count)") }
            return .int(Int64(b[Int(i)]))
        case (.null, _): throw EvaluationError("\(describe(baseExpression)) is null")
        default: throw EvaluationError("cannot index \(base.typeName) with \(index.typeName)")
        }
    }

    func range(_ base: RuleValue, _ lower: RuleValue, _ upper: RuleValue, _ baseExpression: RuleExpression) throws(EvaluationError) -> RuleValue {
        guard case .int(let i) = lower, case .int(let j) = upper else { throw EvaluationError("a range [i:j] needs ints") }
        func bounds(_ count: Int) throws(EvaluationError) -> Range<Int> {
            guard i >= 0, i <= j, j <= count else { throw EvaluationError("range [\(i):\(j)] is out of bounds for size \(count)") }
            return Int(i)..<Int(j)
        }
        switch base {
        case .list(let items): return .list(Array(items[try bounds(items.count)]))
        case .string(let s):
            let scalars = Array(s.unicodeScalars)
            var out = String.UnicodeScalarView()
            out.append(contentsOf: scalars[try bounds(scalars.count)])
            return .string(String(out))
        case .bytes(let b): return .bytes(Array(b[try bounds(b.count)]))
        case .path(let p): return .path(RulePath(segments: Array(p.segments[try bounds(p.segments.count)]), absolute: p.absolute))
        case .null: throw EvaluationError("\(describe(baseExpression)) is null")
        default: throw EvaluationError("cannot take a range of \(base.typeName)")
        }
    }

    /// An expression's source for messages ("request.auth is null"), shortened when long.
    func describe(_ expression: RuleExpression) -> String {
        let text = source.collapsedText(from: expression.start, to: expression.end)
        return text.count > 60 ? String(text.prefix(57)) + "…" : text
    }
}

extension RuleValue {
    /// An int or float as a Double; nil for other types.
    var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .float(let d): d
        default: nil
        }
    }
}

