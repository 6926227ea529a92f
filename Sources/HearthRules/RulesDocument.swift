import Foundation
import HashTreeCollections
public import HearthCore

/// A database's security rules: the source as uploaded, and the compiled rules tree.
///
/// Every `.read`, `.write` and `.validate` is parsed and checked when the document is loaded; all
/// problems are reported together. Evaluation follows Firebase: a `.read`/`.write` that is true at a
/// location or any ancestor grants access and cannot be revoked deeper; rules are not filters;
/// `.validate` runs on every non-null node a write touches that has rules; a runtime error fails the rule.
///
/// For example:
/// ```swift
/// let rules = try RulesDocument(source: #"{"rules": {"users": {"$uid": {".write": "$uid === auth.uid"}}}}"#)
/// let allowed = rules.canWrite(path, .auth(["uid": "ada"]), before: root, after: newRoot, now: now)
/// ```
public struct RulesDocument: Sendable {
    public let source: String
    public let json: JSONValue
    let root: RuleNode
    /// Where evaluations are counted (the emulator's rules coverage); nil counts nothing.
    public private(set) var coverage: RulesCoverage?

    /// This document counting its evaluations into `coverage`.
    public func withCoverage(_ coverage: RulesCoverage?) -> RulesDocument {
        var document = self
        document.coverage = coverage
        return document
    }

    /// Who the rules are evaluated for.
    public enum Subject: Sendable, Equatable {
        /// Bypasses every rule.
        case admin
        /// `auth` as the rules see it (`.null` when unauthenticated).
        case auth(JSONValue)
    }

    /// The rules of a new database: everything closed (only admin), or everything open in emulator mode.
    public static func defaults(open: Bool) -> RulesDocument {
        let source = open
            ? "{\n  \"rules\": {\n    \".read\": true,\n    \".write\": true\n  }\n}"
            : "{\n  \"rules\": {\n    \".read\": false,\n    \".write\": false\n  }\n}"
        return try! RulesDocument(source: source)  // A constant that compiles.
    }

    /// Parses and compiles a rules document (JSON with `//` and `/* */` comments).
    public init(source: String) throws(RulesError) {
        let stripped = RulesDocument.stripComments(source)
        let json: JSONValue
        do {
            json = try JSONValue(parsing: stripped)
        } catch {
            let (line, column) = RulesSourceMap.position(of: error.offset, in: Array(stripped.utf8))
            throw RulesError([Diagnostic(line: line, column: column, message: error.message)])
        }
        guard case .object(let members) = json, members.count == 1, members[0].key == "rules",
            case .object = members[0].value
        else {
            throw RulesError([Diagnostic(column: 1, message: "the rules document must be an object with one member, \"rules\", holding an object")])
        }
        var diagnostics: [Diagnostic] = []
        let root = RuleNode(members[0].value, location: "rules", variables: [], diagnostics: &diagnostics)
        guard diagnostics.isEmpty else {
            // Point each diagnostic at the file's line and column.
            let map = RulesSourceMap(Array(stripped.utf8))
            throw RulesError(diagnostics.map { diagnostic in
                var positioned = diagnostic
                if let (line, column) = map.filePosition(of: diagnostic) {
                    positioned.line = line
                    positioned.column = column
                }
                return positioned
            })
        }
        self.source = source
        self.json = json
        self.root = root
    }

    /// Whether `subject` may read `path` (rules at the path and above only).
    public func canRead(_ path: DatabasePath, _ subject: Subject, root data: Node, query: RuleQuery = RuleQuery(), now: Double) -> Bool {
        canRead(path, subject, root: data, query: query, now: now, trace: nil)
    }

    func canRead(_ path: DatabasePath, _ subject: Subject, root data: Node, query: RuleQuery = RuleQuery(), now: Double, trace: RulesTrace?) -> Bool {
        guard case .auth(let auth) = subject else { return true }
        var node: RuleNode? = root
        var variables: [String: String] = [:]
        var location = DatabasePath.root
        var here = data
        for level in 0...path.count {
            guard let current = node else { return false }
            if let rule = current.read {
                var context = RuleContext(auth: auth, now: now, root: data, path: location, variables: variables, query: query)
                context.dataNode = here
                let granted = rule.evaluate(in: context)
                trace?.record(current.location, ".read", at: location, granted)
                coverage?.record(current, .read, granted)
                if granted { return true }
            }
            if level == path.count { break }
            let key = path.keys[level]
            node = current.child(key, &variables)
            location = location.child(key)
            here = here.child(key)
        }
        return false
    }

    /// Whether `subject` may change the data at `path` from `before` to `after` (whole trees): a `.write`
    /// at the path or above grants it, and every applicable `.validate` passes.
    public func canWrite(_ path: DatabasePath, _ subject: Subject, before: Node, after: Node, now: Double) -> Bool {
        canWrite(path, subject, before: before, after: after, now: now, trace: nil)
    }

    func canWrite(_ path: DatabasePath, _ subject: Subject, before: Node, after: Node, now: Double, trace: RulesTrace?) -> Bool {
        guard case .auth(let auth) = subject else { return true }
        var node: RuleNode? = root
        var variables: [String: String] = [:]
        var location = DatabasePath.root
        var permitted = false
        // The data before and after at the current level, followed down with the rules.
        var data = before
        var newData = after
        for level in 0...path.count {
            guard let current = node else { break }
            if current.write != nil || current.validate != nil {
                let context = RuleContext(
                    auth: auth, now: now, root: before, newRoot: after, path: location, variables: variables, data: data, newData: newData
                )
                if !permitted, let rule = current.write {
                    permitted = rule.evaluate(in: context)
                    trace?.record(current.location, ".write", at: location, permitted)
                    coverage?.record(current, .write, permitted)
                }
                if let rule = current.validate, !newData.isEmpty {
                    let valid = rule.evaluate(in: context)
                    trace?.record(current.location, ".validate", at: location, valid)
                    coverage?.record(current, .validate, valid)
                    if !valid { return false }
                }
            }
            if level == path.count {
                guard permitted else { return false }
                return validateBelow(
                    current, location, variables, auth: auth, before: before, after: after, data: data, newData: newData, now: now, trace: trace
                )
            }
            let key = path.keys[level]
            node = current.child(key, &variables)
            location = location.child(key)
            data = data.child(key)
            newData = newData.child(key)
        }
        return permitted
    }

    /// `.validate` on every new non-null node strictly below `location` that has a rules node.
    func validateBelow(
        _ rules: RuleNode,
        _ location: DatabasePath,
        _ variables: [String: String],
        auth: JSONValue,
        before: Node,
        after: Node,
        data: Node,
        newData: Node,
        now: Double,
        trace: RulesTrace?
    ) -> Bool {
        guard rules.hasChildRules else { return true }
        for (key, newChild) in newData.childEntries {
            var childVariables = variables
            guard let child = rules.child(key, &childVariables) else { continue }
            let childLocation = location.child(key)
            let oldChild = data.child(key)
            if let rule = child.validate {
                let context = RuleContext(
                    auth: auth, now: now, root: before, newRoot: after, path: childLocation, variables: childVariables,
                    data: oldChild, newData: newChild
                )
                let valid = rule.evaluate(in: context)
                trace?.record(child.location, ".validate", at: childLocation, valid)
                coverage?.record(child, .validate, valid)
                if !valid { return false }
            }
            if !validateBelow(
                child, childLocation, childVariables, auth: auth, before: before, after: after, data: oldChild, newData: newChild, now: now,
                trace: trace
            ) {
                return false
            }
        }
        return true
    }

    /// Whether `.indexOn` at `location` (whose children are queried) lists `name`.
    public func hasIndex(_ name: String, at location: DatabasePath) -> Bool {
        var node: RuleNode? = root
        var variables: [String: String] = [:]
        for key in location.keys { node = node?.child(key, &variables) }
        return node?.indexOn.contains(name) ?? false
    }

    /// JSON with `//` and `/* */` comments (rules files, firebase.json) as plain JSON, positions kept.
    public static func stripComments(_ source: String) -> String {
        var out: [UInt8] = []
        let bytes = Array(source.utf8)
        var i = 0
        var inString = false
        while i < bytes.count {
            let c = bytes[i]
            if inString {
                out.append(c)
                if c == UInt8(ascii: "\\"), i + 1 < bytes.count {
                    out.append(bytes[i + 1])
                    i += 2
                    continue
                }
                if c == UInt8(ascii: "\"") { inString = false }
                i += 1
            } else if c == UInt8(ascii: "\"") {
                inString = true
                out.append(c)
                i += 1
            } else if c == UInt8(ascii: "/"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "/") {
                while i < bytes.count, bytes[i] != 0x0A {
                    out.append(0x20)
                    i += 1
                }
            } else if c == UInt8(ascii: "/"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "*") {
                // Replace with spaces (keeping newlines) so error positions still match the source.
                out.append(contentsOf: [0x20, 0x20])
                i += 2
                while i < bytes.count, !(bytes[i] == UInt8(ascii: "*") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "/")) {
                    out.append(bytes[i] == 0x0A ? 0x0A : 0x20)
                    i += 1
                }
                if i < bytes.count {
                    out.append(contentsOf: [0x20, 0x20])
                    i += 2
                }
            } else {
                out.append(c)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// One compiled `.read`, `.write` or `.validate`.
enum CompiledRule: Sendable {
    case literal(Bool)
    case expression(Expression)

    func evaluate(in context: RuleContext) -> Bool {
        switch self {
        case .literal(let value): return value
        case .expression(let expression): return RulesEvaluator(context: context).evaluate(expression)
        }
    }
}

/// One level of the rules tree. A class: the tree is recursive and immutable once built.
final class RuleNode: Sendable {
    let read: CompiledRule?
    let write: CompiledRule?
    let validate: CompiledRule?
    let indexOn: [String]
    /// By ``Key``, which compares bytes: Swift's `String` would take `e\u{301}` for `é`, and Firebase
    /// does not.
    let children: [Key: RuleNode]
    let wildcard: (name: String, node: RuleNode)?
    /// Where this node sits in the document (`rules/users/$uid`), for explanations.
    let location: String

    var hasChildRules: Bool { !children.isEmpty || wildcard != nil }

    init(_ json: JSONValue, location: String, variables: Set<String>, diagnostics: inout [Diagnostic]) {
        self.location = location
        var read: CompiledRule?, write: CompiledRule?, validate: CompiledRule?
        var indexOn: [String] = []
        var children: [Key: RuleNode] = [:]
        var wildcard: (name: String, node: RuleNode)?
        guard case .object(let members) = json else {
            diagnostics.append(Diagnostic(location: location, column: 1, message: "rules must be objects"))
            (self.read, self.write, self.validate, self.indexOn, self.children, self.wildcard) = (nil, nil, nil, [], [:], nil)
            return
        }
        for (name, value) in members {
            let here = "\(location)/\(name)"
            switch name {
            case ".read": read = RuleNode.compile(value, .read, variables, here, &diagnostics)
            case ".write": write = RuleNode.compile(value, .write, variables, here, &diagnostics)
            case ".validate": validate = RuleNode.compile(value, .validate, variables, here, &diagnostics)
            case ".indexOn":
                switch value {
                case .string(let s): indexOn = [s]
                case .array(let items):
                    for item in items {
                        guard case .string(let s) = item else {
                            diagnostics.append(Diagnostic(location: here, column: 1, message: "expected strings"))
                            continue
                        }
                        indexOn.append(s)
                    }
                default: diagnostics.append(Diagnostic(location: here, column: 1, message: "expected a string or an array of strings"))
                }
            default:
                if name.hasPrefix(".") {
                    diagnostics.append(Diagnostic(location: here, column: 1, message: "unknown rule type \(name)"))
                } else if name.hasPrefix("$") {
                    if wildcard != nil {
                        diagnostics.append(Diagnostic(location: here, column: 1, message: "only one wildcard is allowed at a location"))
                    } else if variables.contains(name) {
                        diagnostics.append(Diagnostic(location: here, column: 1, message: "\(name) is already bound above"))
                    }
                    wildcard = (name, RuleNode(value, location: here, variables: variables.union([name]), diagnostics: &diagnostics))
                } else {
                    children[Key(name)] = RuleNode(value, location: here, variables: variables, diagnostics: &diagnostics)
                }
            }
        }
        (self.read, self.write, self.validate, self.indexOn, self.children, self.wildcard) =
            (read, write, validate, indexOn, children, wildcard)
    }

    static func compile(
        _ value: JSONValue,
        _ kind: Checker.RuleKind,
        _ variables: Set<String>,
        _ location: String,
        _ diagnostics: inout [Diagnostic]
    ) -> CompiledRule? {
        switch value {
        case .bool(let b): return .literal(b)
        case .string(let text):
            do {
                let expression = try Parser.parse(text)
                try Checker(kind: kind, variables: variables).check(expression)
                return .expression(expression)
            } catch {
                var diagnostic = error
                diagnostic.location = location
                diagnostics.append(diagnostic)
                return nil
            }
        default:
            diagnostics.append(Diagnostic(location: location, column: 1, message: "expected a boolean or an expression string"))
            return nil
        }
    }

    /// The rules for child `key`: the literal child, else the wildcard (binding its variable).
    func child(_ key: Key, _ variables: inout [String: String]) -> RuleNode? {
        if let literal = children[key] { return literal }
        guard let wildcard else { return nil }
        variables[wildcard.name] = key.string
        return wildcard.node
    }
}

/// A rules document that cannot be loaded: every problem found, with its place.
public struct RulesError: HearthError {
    public var diagnostics: [Diagnostic]

    public init(_ diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics
    }

    public var message: String { diagnostics.map(\.description).joined(separator: "\n") }
}
