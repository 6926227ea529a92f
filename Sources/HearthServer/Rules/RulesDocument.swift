import Foundation
public import HearthCore

/// A namespace's rules document: the source text as uploaded, and its parsed tree.
///
/// This foundation evaluates `.read` and `.write` rules that are literal booleans (`true`, `false`,
/// `"true"`, `"false"`), with Firebase's cascade: a grant at a location or any ancestor allows access
/// and cannot be revoked deeper. Any other expression denies until the rules language lands.
/// `.indexOn` is fully supported, including under `$wildcard` children.
///
/// For example:
/// ```swift
/// let rules = try RulesDocument(source: #"{"rules": {".read": true, "scores": {".indexOn": ".value"}}}"#)
/// #expect(rules.hasIndex(".value", at: try DatabasePath("/scores")))
/// ```
public struct RulesDocument: Sendable {
    public let source: String
    public let json: JSONValue
    let root: RuleNode

    /// The rules of a new database: everything closed (only admin), or everything open in emulator mode.
    public static func defaults(open: Bool) -> RulesDocument {
        let source = open
            ? "{\n  \"rules\": {\n    \".read\": true,\n    \".write\": true\n  }\n}"
            : "{\n  \"rules\": {\n    \".read\": false,\n    \".write\": false\n  }\n}"
        return try! RulesDocument(source: source)  // A constant that parses.
    }

    /// Parses a rules document (JSON with `//` and `/* */` comments).
    public init(source: String) throws(RulesError) {
        let stripped = RulesDocument.stripComments(source)
        let json: JSONValue
        do {
            json = try JSONValue(parsing: stripped)
        } catch {
            let (line, column) = RulesDocument.position(of: error.offset, in: stripped)
            throw RulesError("\(line):\(column): \(error.message)")
        }
        guard case .object(let members) = json, members.count == 1, members[0].key == "rules",
            case .object = members[0].value
        else {
            throw RulesError("1:1: the rules document must be an object with one member, \"rules\", holding an object")
        }
        self.source = source
        self.json = json
        self.root = try RuleNode(members[0].value, path: "rules")
    }

    public func canRead(_ path: DatabasePath, _ identity: Identity) -> Bool {
        identity.isAdmin || grants(\.read, along: path)
    }

    public func canWrite(_ path: DatabasePath, _ identity: Identity) -> Bool {
        identity.isAdmin || grants(\.write, along: path)
    }

    private func grants(_ rule: KeyPath<RuleNode, Bool?>, along path: DatabasePath) -> Bool {
        var node: RuleNode? = root
        if node?[keyPath: rule] == true { return true }
        for key in path.keys {
            node = node?.child(key)
            guard let current = node else { return false }
            if current[keyPath: rule] == true { return true }
        }
        return false
    }

    /// Whether `.indexOn` at `location` (whose children are queried) lists `name`.
    public func hasIndex(_ name: String, at location: DatabasePath) -> Bool {
        var node: RuleNode? = root
        for key in location.keys { node = node?.child(key) }
        return node?.indexOn.contains(name) ?? false
    }

    static func stripComments(_ source: String) -> String {
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

    static func position(of offset: Int, in text: String) -> (Int, Int) {
        var line = 1
        var column = 1
        for (i, c) in text.utf8.enumerated() where i < offset {
            if c == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }
}

/// One level of the rules tree.
struct RuleNode: Sendable {
    var read: Bool?
    var write: Bool?
    var indexOn: [String] = []
    var children: [String: RuleNode] = [:]
    var wildcard: [RuleNode] = []

    init(_ json: JSONValue, path: String) throws(RulesError) {
        guard case .object(let members) = json else {
            throw RulesError("\(path): rules must be objects")
        }
        for (name, value) in members {
            switch name {
            case ".read": read = try RuleNode.literal(value, name: "\(path)/.read")
            case ".write": write = try RuleNode.literal(value, name: "\(path)/.write")
            case ".validate": _ = try RuleNode.literal(value, name: "\(path)/.validate")
            case ".indexOn":
                switch value {
                case .string(let s): indexOn = [s]
                case .array(let items):
                    for item in items {
                        guard case .string(let s) = item else { throw RulesError("\(path)/.indexOn: expected strings") }
                        indexOn.append(s)
                    }
                default: throw RulesError("\(path)/.indexOn: expected a string or an array of strings")
                }
            default:
                if name.hasPrefix(".") { throw RulesError("\(path): unknown rule \(name)") }
                let child = try RuleNode(value, path: "\(path)/\(name)")
                if name.hasPrefix("$") {
                    wildcard = [child]
                } else {
                    children[name] = child
                }
            }
        }
    }

    /// `true`/`false` (or their strings) grant or deny; other expressions deny until the rules language lands.
    static func literal(_ value: JSONValue, name: String) throws(RulesError) -> Bool {
        switch value {
        case .bool(let b): return b
        case .string(let s):
            let trimmed = s.trimmingCharacters(in: .whitespaces)
            return trimmed == "true"
        default: throw RulesError("\(name): expected a boolean or an expression string")
        }
    }

    func child(_ key: Key) -> RuleNode? {
        children[key.string] ?? wildcard.first
    }
}

/// A rules document that cannot be loaded.
public struct RulesError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
