import HashTreeCollections
import Crypto
import Foundation

extension Node {
    /// The node hash of the Firebase wire protocol (base64 SHA-1), used for transactions and as the ETag.
    ///
    /// Empty nodes hash to the empty string. Children are visited in priority order.
    ///
    /// For example:
    /// ```swift
    /// #expect(Node.leaf(.number(4)).hash == "eVih19a6ZDz3NL32uVBtg9KSgQY=")
    /// ```
    public var hash: String {
        switch self {
        case .leaf(let value, let priority):
            var text = ""
            if let priority { text += "priority:" + Node.priorityHashText(priority) + ":" }
            switch value {
            case .bool(let b): text += "boolean:" + (b ? "true" : "false")
            case .number(let n): text += "number:" + Node.hex16(n)
            case .string(let s): text += "string:" + s
            }
            return Node.sha1Base64(text)
        case .children(let c):
            if c.entries.isEmpty { return "" }
            var text = ""
            if let priority = c.priority { text += "priority:" + Node.priorityHashText(priority) + ":" }
            let ordered = c.entries.sorted { a, b in
                let byPriority = Priority.compare(a.value.priority, b.value.priority)
                return byPriority != 0 ? byPriority < 0 : Key.compare(a.key, b.key) < 0
            }
            for (key, child) in ordered {
                let childHash = child.hash
                if !childHash.isEmpty { text += ":" + key.string + ":" + childHash }
            }
            return text.isEmpty ? "" : Node.sha1Base64(text)
        }
    }

    /// The REST ETag: the node hash, or `null_etag` for an empty location.
    public var etag: String {
        let h = hash
        return h.isEmpty ? "null_etag" : h
    }

    static func priorityHashText(_ priority: Priority) -> String {
        switch priority {
        case .number(let n): "number:" + hex16(n)
        case .string(let s): "string:" + s
        }
    }

    static func hex16(_ value: Double) -> String {
        // -0 is sent as `0` (JSON has no negative zero in JavaScript's rendering): hashed as the 0
        // clients receive, or their transactions on it would never match.
        let bits = String((value == 0 ? 0.0 : value).bitPattern, radix: 16)
        return String(repeating: "0", count: 16 - bits.count) + bits
    }

    static func sha1Base64(_ text: String) -> String {
        Data(Insecure.SHA1.hash(data: Data(text.utf8))).base64EncodedString()
    }
}
