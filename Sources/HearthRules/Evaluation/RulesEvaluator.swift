import Foundation
import HearthCore

/// Evaluates a checked expression. Any runtime error makes the whole rule false (rest-and-rules.md §5.2.5).
///
/// For example:
/// ```swift
/// let rule = try CompiledRule(source: "auth != null", kind: .read, variables: [])
/// #expect(rule.evaluate(in: context) == false)
/// ```
struct RulesEvaluator {
    let context: RuleContext

    /// A runtime error: the rule fails.
    struct Failure: Error {}

    /// Values at run time.
    enum Value {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        /// An `auth` object or array (member access gives null when absent).
        case json(JSONValue)
        case snapshot(Node, DatabasePath, root: Node)
        /// `val()` of a node with children: not null, equal to nothing.
        case opaque
        case query
    }

    func evaluate(_ expression: Expression) -> Bool {
        guard case .bool(let result)? = try? value(expression) else { return false }
        return result
    }

    func value(_ expression: Expression) throws -> Value {
        switch expression {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .number(let n): return .number(n)
        case .string(let s): return .string(s)
        case .regex, .array: throw Failure()
        case .identifier(let name, _):
            switch name {
            case "auth": return RulesEvaluator.wrap(context.auth)
            case "now": return .number(context.now)
            case "root": return .snapshot(context.root, .root, root: context.root)
            case "data": return .snapshot(context.dataNode ?? context.root.child(at: context.path), context.path, root: context.root)
            case "newData":
                guard let newRoot = context.newRoot else { throw Failure() }
                return .snapshot(context.newDataNode ?? newRoot.child(at: context.path), context.path, root: newRoot)
            case "query": return .query
            default:
                guard let bound = context.variables[name] else { throw Failure() }
                return .string(bound)
            }
        case .not(let operand):
            guard case .bool(let b) = try value(operand) else { throw Failure() }
            return .bool(!b)
        case .negate(let operand):
            guard case .number(let n) = try value(operand) else { throw Failure() }
            return .number(-n)
        case .binary(let op, _, _) where op == .and || op == .or:
            return try logicalChain(op, expression)
        case .binary(let op, let left, let right):
            return try binary(op, left, right)
        case .conditional(let test, let yes, let no):
            guard case .bool(let b) = try value(test) else { throw Failure() }
            return try value(b ? yes : no)
        case .member(let base, let name):
            return try member(try value(base), name)
        case .index(let base, let index):
            let key = try value(index)
            switch key {
            case .string(let name): return try member(try value(base), name)
            case .number(let n): return try member(try value(base), JavaScriptNumber.format(n))
            default: throw Failure()
            }
        case .call(let callee, let arguments):
            let (baseExpression, name): (Expression, String)
            switch callee {
            case .member(let b, let n): (baseExpression, name) = (b, n)
            case .index(let b, .string(let n)): (baseExpression, name) = (b, n)
            default: throw Failure()
            }
            return try call(try value(baseExpression), name, arguments)
        }
    }

    static func wrap(_ json: JSONValue) -> Value {
        switch json {
        case .null: .null
        case .bool(let b): .bool(b)
        case .number(let n): .number(n)
        case .string(let s): .string(s)
        case .array, .object: .json(json)
        }
    }

    /// `a || b || c` (or `&&`), left-nested as deep as it is long: evaluated along the chain, left to
    /// right with JavaScript's short circuit, instead of by recursion down it (a whitelist of thousands
    /// of values would exhaust the stack).
    func logicalChain(_ op: BinaryOperator, _ expression: Expression) throws -> Value {
        var operands: [Expression] = []
        var current = expression
        while case .binary(let next, let left, let right) = current, next == op {
            operands.append(right)
            current = left
        }
        operands.append(current)
        for operand in operands.reversed() {
            guard case .bool(let b) = try value(operand) else { throw Failure() }
            if b == (op == .or) { return .bool(b) }
        }
        return .bool(op == .and)
    }

    func binary(_ op: BinaryOperator, _ leftExpression: Expression, _ rightExpression: Expression) throws -> Value {
        let left = try value(leftExpression)
        switch op {
        case .and:
            guard case .bool(let l) = left else { throw Failure() }
            if !l { return .bool(false) }
            guard case .bool(let r) = try value(rightExpression) else { throw Failure() }
            return .bool(r)
        case .or:
            guard case .bool(let l) = left else { throw Failure() }
            if l { return .bool(true) }
            guard case .bool(let r) = try value(rightExpression) else { throw Failure() }
            return .bool(r)
        default: break
        }
        let right = try value(rightExpression)
        switch op {
        case .equal: return .bool(try equal(left, right))
        case .notEqual: return .bool(!(try equal(left, right)))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let order: Int
            switch (left, right) {
            case let (.number(a), .number(b)):
                if a.isNaN || b.isNaN { return .bool(false) }
                order = a < b ? -1 : (a == b ? 0 : 1)
            case let (.string(a), .string(b)): order = UTF16Order.compare(a, b)
            default: throw Failure()
            }
            switch op {
            case .less: return .bool(order < 0)
            case .lessOrEqual: return .bool(order <= 0)
            case .greater: return .bool(order > 0)
            default: return .bool(order >= 0)
            }
        case .add:
            switch (left, right) {
            case let (.number(a), .number(b)): return .number(a + b)
            case let (.string(a), .string(b)): return .string(a + b)
            case let (.string(a), .number(b)): return .string(a + JavaScriptNumber.format(b))
            case let (.number(a), .string(b)): return .string(JavaScriptNumber.format(a) + b)
            default: throw Failure()
            }
        case .subtract, .multiply, .divide, .remainder:
            guard case .number(let a) = left, case .number(let b) = right else { throw Failure() }
            switch op {
            case .subtract: return .number(a - b)
            case .multiply: return .number(a * b)
            case .divide: return .number(b == 0 ? .nan : a / b)
            default: return .number(a.truncatingRemainder(dividingBy: b))
            }
        default: throw Failure()
        }
    }

    /// `==`: strict, no conversion; different types are unequal, not an error.
    func equal(_ a: Value, _ b: Value) throws -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x.utf8.elementsEqual(y.utf8)
        case (.snapshot, _), (_, .snapshot): throw Failure()
        case let (.json(x), .json(y)): return x == y
        default: return false
        }
    }

    func member(_ base: Value, _ name: String) throws -> Value {
        switch base {
        case .null: return .null  // auth.foo.bar is null, not an error
        case .json(let json):
            switch json {
            case .object(let members): return members.first { $0.key == name }.map { RulesEvaluator.wrap($0.value) } ?? .null
            case .array(let items):
                guard let index = Int(name), items.indices.contains(index) else { return .null }
                return RulesEvaluator.wrap(items[index])
            default: return .null
            }
        case .string(let s):
            guard name == "length" else { throw Failure() }
            return .number(Double(s.utf16.count))
        case .query:
            let q = context.query
            switch name {
            case "orderByKey": return .bool(q.orderByKey)
            case "orderByPriority": return .bool(q.orderByPriority)
            case "orderByValue": return .bool(q.orderByValue)
            case "orderByChild": return q.orderByChild.map(Value.string) ?? .null
            case "startAt": return RulesEvaluator.wrap(q.startAt)
            case "endAt": return RulesEvaluator.wrap(q.endAt)
            case "equalTo": return RulesEvaluator.wrap(q.equalTo)
            case "limitToFirst": return q.limitToFirst.map(Value.number) ?? .null
            case "limitToLast": return q.limitToLast.map(Value.number) ?? .null
            default: throw Failure()
            }
        default: throw Failure()
        }
    }

    func call(_ base: Value, _ name: String, _ arguments: [Expression]) throws -> Value {
        switch base {
        case .snapshot(let node, let path, let root): return try snapshotMethod(node, path, root, name, arguments)
        case .string(let s): return try stringMethod(s, name, arguments)
        default: throw Failure()
        }
    }

    func stringArgument(_ arguments: [Expression], _ index: Int) throws -> String {
        guard arguments.indices.contains(index), case .string(let s) = try value(arguments[index]) else { throw Failure() }
        return s
    }

    func snapshotMethod(_ node: Node, _ path: DatabasePath, _ root: Node, _ name: String, _ arguments: [Expression]) throws -> Value {
        switch name {
        case "val":
            switch node {
            case .leaf(let v, _): return RulesEvaluator.primitive(v)
            case .children(let c): return c.entries.isEmpty ? .null : .opaque
            }
        case "child":
            let relative = try relativePath(try stringArgument(arguments, 0))
            return .snapshot(node.child(at: relative), path.appending(relative), root: root)
        case "parent":
            guard let parent = path.parent else { throw Failure() }
            return .snapshot(root.child(at: parent), parent, root: root)
        case "hasChild":
            return .bool(!node.child(at: try relativePath(try stringArgument(arguments, 0))).isEmpty)
        case "hasChildren":
            guard let argument = arguments.first else { return .bool(node.childCount > 0) }
            guard case .array(let names) = argument else { throw Failure() }
            for name in names {
                guard case .string(let s) = try value(name) else { throw Failure() }
                if node.child(at: try relativePath(s)).isEmpty { return .bool(false) }
            }
            return .bool(true)
        case "exists": return .bool(!node.isEmpty)
        case "getPriority":
            switch node.priority {
            case .number(let n)?: return .number(n)
            case .string(let s)?: return .string(s)
            case nil: return .null
            }
        case "isNumber": return .bool({ if case .leaf(.number, _) = node { true } else { false } }())
        case "isString": return .bool({ if case .leaf(.string, _) = node { true } else { false } }())
        case "isBoolean": return .bool({ if case .leaf(.bool, _) = node { true } else { false } }())
        default: throw Failure()
        }
    }

    static func primitive(_ value: Primitive) -> Value {
        switch value {
        case .bool(let b): .bool(b)
        case .number(let n): .number(n)
        case .string(let s): .string(s)
        }
    }

    func relativePath(_ text: String) throws -> DatabasePath {
        do {
            // Most rules name one child ('title'): skip splitting.
            if !text.utf8.contains(UInt8(ascii: "/")) { return DatabasePath(keys: [try Key(validating: text)]) }
            return try DatabasePath(text)
        } catch {
            throw Failure()
        }
    }

    func stringMethod(_ s: String, _ name: String, _ arguments: [Expression]) throws -> Value {
        switch name {
        case "contains":
            let needle = try stringArgument(arguments, 0)
            return .bool(needle.isEmpty || s.utf16.count >= needle.utf16.count && s.range(of: needle, options: .literal) != nil)
        case "beginsWith": return .bool(s.utf8.starts(with: try stringArgument(arguments, 0).utf8))
        case "endsWith":
            let suffix = Array(try stringArgument(arguments, 0).utf8)
            return .bool(Array(s.utf8).suffix(suffix.count).elementsEqual(suffix))
        case "replace":
            let target = try stringArgument(arguments, 0)
            let replacement = try stringArgument(arguments, 1)
            guard !target.isEmpty else { return .string(s) }
            return .string(s.replacingOccurrences(of: target, with: replacement, options: .literal))
        case "toLowerCase": return .string(s.lowercased())
        case "toUpperCase": return .string(s.uppercased())
        case "matches":
            guard arguments.count == 1, case .regex(let pattern, let caseInsensitive) = arguments[0] else { throw Failure() }
            let icuPattern = RulesRegex.icuPattern(pattern)
            guard let regex = try? NSRegularExpression(pattern: icuPattern, options: caseInsensitive ? [.caseInsensitive] : []) else {
                throw Failure()
            }
            let range = NSRange(s.startIndex..., in: s)
            return .bool(regex.firstMatch(in: s, options: [], range: range) != nil)
        default: throw Failure()
        }
    }
}
