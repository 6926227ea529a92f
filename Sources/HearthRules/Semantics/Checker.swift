import Foundation

/// Upload-time checks of one expression: known variables, known methods, a boolean result.
///
/// Deliberately conservative: it rejects what Firebase rejects for sure (rest-and-rules.md §5.3.1) and
/// leaves values of unknown type (`auth.…`, `val()`) to be checked at run time.
struct Checker {
    /// The static types the checker tracks.
    enum StaticType: Equatable {
        case boolean, number, string, null, snapshot, query, regex, array, any
    }

    enum RuleKind {
        case read, write, validate
    }

    let kind: RuleKind
    let variables: Set<String>

    static let snapshotMethods: [String: StaticType] = [
        "val": .any, "child": .snapshot, "parent": .snapshot, "hasChild": .boolean, "hasChildren": .boolean,
        "exists": .boolean, "getPriority": .any, "isNumber": .boolean, "isString": .boolean, "isBoolean": .boolean,
    ]
    static let stringMethods: [String: StaticType] = [
        "contains": .boolean, "beginsWith": .boolean, "endsWith": .boolean, "replace": .string,
        "toLowerCase": .string, "toUpperCase": .string, "matches": .boolean,
    ]
    static let queryMembers: [String: StaticType] = [
        "orderByKey": .boolean, "orderByPriority": .boolean, "orderByValue": .boolean, "orderByChild": .any,
        "startAt": .any, "endAt": .any, "equalTo": .any, "limitToFirst": .any, "limitToLast": .any,
    ]

    func check(_ expression: Expression) throws(Diagnostic) {
        // Both branches of a top-level `?:` must be able to be boolean (`x ? 7 : true` is refused).
        if case .conditional(let test, let yes, let no) = expression {
            try requireBooleanish(try type(of: test), "?:")
            try check(yes)
            try check(no)
            return
        }
        let type = try type(of: expression)
        switch type {
        case .boolean, .any: return
        default: throw Diagnostic(column: 1, message: "the rule must evaluate to a boolean")
        }
    }

    func type(of expression: Expression) throws(Diagnostic) -> StaticType {
        switch expression {
        case .null: return .null
        case .bool: return .boolean
        case .number: return .number
        case .string: return .string
        case .regex: throw Diagnostic(column: 1, message: "a regular expression is only allowed as the argument of matches()")
        case .array: throw Diagnostic(column: 1, message: "an array is only allowed as the argument of hasChildren()")
        case .identifier(let name, let offset):
            switch name {
            case "auth": return .any
            case "now": return .number
            case "root", "data": return .snapshot
            case "newData":
                guard kind != .read else { throw Diagnostic(column: offset + 1, message: "newData is not available in .read rules") }
                return .snapshot
            case "query":
                guard kind == .read else { throw Diagnostic(column: offset + 1, message: "query is only available in .read rules") }
                return .query
            default:
                guard variables.contains(name) else { throw Diagnostic(column: offset + 1, message: "unknown variable '\(name)'") }
                return .string
            }
        case .not(let operand):
            try requireBooleanish(try type(of: operand), "!")
            return .boolean
        case .negate(let operand):
            let t = try type(of: operand)
            guard t == .number || t == .any else { throw Diagnostic(column: 1, message: "unary '-' needs a number") }
            return .number
        case .binary(let op, _, _) where op == .and || op == .or:
            // Along the chain, not down it (as the evaluator walks it).
            var current = expression
            while case .binary(let next, let left, let right) = current, next == op {
                try requireBooleanish(try type(of: right), op.rawValue)
                current = left
            }
            try requireBooleanish(try type(of: current), op.rawValue)
            return .boolean
        case .binary(let op, let left, let right):
            let (l, r) = (try type(of: left), try type(of: right))
            switch op {
            case .and, .or:
                try requireBooleanish(l, op.rawValue)
                try requireBooleanish(r, op.rawValue)
                return .boolean
            case .equal, .notEqual:
                guard l != .snapshot, r != .snapshot else {
                    throw Diagnostic(column: 1, message: "snapshots cannot be compared; use val() or exists()")
                }
                return .boolean
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                for t in [l, r] where t == .boolean || t == .snapshot || t == .null {
                    throw Diagnostic(column: 1, message: "'\(op.rawValue)' needs numbers or strings")
                }
                if l != .any, r != .any, l != r {
                    throw Diagnostic(column: 1, message: "'\(op.rawValue)' compares two numbers or two strings")
                }
                return .boolean
            case .add:
                for t in [l, r] where t == .boolean || t == .snapshot || t == .null {
                    throw Diagnostic(column: 1, message: "'+' needs numbers or strings")
                }
                if l == .string || r == .string { return .string }
                return l == .number && r == .number ? .number : .any
            case .subtract, .multiply, .divide, .remainder:
                for t in [l, r] where t != .number && t != .any {
                    throw Diagnostic(column: 1, message: "'\(op.rawValue)' needs numbers")
                }
                return .number
            }
        case .conditional(let test, let yes, let no):
            try requireBooleanish(try type(of: test), "?:")
            let (a, b) = (try type(of: yes), try type(of: no))
            return a == b ? a : .any
        case .member(let base, let name):
            return try memberType(try type(of: base), name, called: false)
        case .index(let base, let index):
            let baseType = try type(of: base)
            if baseType == .snapshot || baseType == .string {
                guard case .string(let name) = index else {
                    throw Diagnostic(column: 1, message: "only a string literal naming a method may index a snapshot or string")
                }
                return try memberType(baseType, name, called: false)
            }
            _ = try type(of: index)
            return .any
        case .call(let callee, let arguments):
            let (base, name): (Expression, String)
            switch callee {
            case .member(let b, let n): (base, name) = (b, n)
            case .index(let b, .string(let n)): (base, name) = (b, n)
            default: throw Diagnostic(column: 1, message: "only methods of snapshots and strings can be called")
            }
            let baseType = try type(of: base)
            let result = try memberType(baseType, name, called: true)
            if baseType == .snapshot, name == "hasChildren" {
                guard arguments.count <= 1 else { throw Diagnostic(column: 1, message: "hasChildren() takes one array of names") }
                if let argument = arguments.first {
                    guard case .array(let names) = argument, !names.isEmpty else {
                        throw Diagnostic(column: 1, message: "hasChildren() takes a non-empty array of names")
                    }
                    for element in names {
                        let elementType = try type(of: element)
                        guard elementType == .string || elementType == .any else {
                            throw Diagnostic(column: 1, message: "hasChildren() takes an array of strings")
                        }
                    }
                }
                return result
            }
            if name == "matches" {
                guard arguments.count == 1, case .regex(let pattern, _) = arguments[0] else {
                    throw Diagnostic(column: 1, message: "matches() takes a regular expression literal such as /^a+$/")
                }
                guard (try? NSRegularExpression(pattern: pattern)) != nil else {
                    throw Diagnostic(column: 1, message: "invalid regular expression /\(pattern)/")
                }
                return result
            }
            for argument in arguments {
                let argumentType = try type(of: argument)
                if baseType == .string || name == "child" || name == "hasChild" {
                    guard argumentType == .string || argumentType == .any else {
                        throw Diagnostic(column: 1, message: "\(name)() takes strings")
                    }
                }
            }
            return result
        }
    }

    func memberType(_ base: StaticType, _ name: String, called: Bool) throws(Diagnostic) -> StaticType {
        switch base {
        case .snapshot:
            guard let result = Checker.snapshotMethods[name] else {
                throw Diagnostic(column: 1, message: "snapshots have no method '\(name)'")
            }
            guard called else { throw Diagnostic(column: 1, message: "'\(name)' is a method; call it: \(name)()") }
            return result
        case .string:
            if name == "length", !called { return .number }
            guard let result = Checker.stringMethods[name] else { throw Diagnostic(column: 1, message: "strings have no member '\(name)'") }
            return result
        case .query:
            guard let result = Checker.queryMembers[name], !called else {
                throw Diagnostic(column: 1, message: "query has no member '\(name)'")
            }
            return result
        case .boolean, .number, .null, .regex, .array:
            throw Diagnostic(column: 1, message: "this value has no member '\(name)'")
        case .any:
            return .any
        }
    }

    func requireBooleanish(_ type: StaticType, _ op: String) throws(Diagnostic) {
        guard type == .boolean || type == .any else { throw Diagnostic(column: 1, message: "'\(op)' needs booleans") }
    }
}
