public import HearthCore

/// One entry of a database's change log, as the engine writes it: the changes of one group commit (so
/// every node applies exactly what the owner applied), or a signal to reload the rules or the data.
///
/// The payload is JSON: `{"c":[{"p":["users","ada"],"n":<node>}, {"p":[],"u":[[["a","b"],<node>]]}]}`,
/// nodes in export format (priorities kept), server values already resolved by the owner.
///
/// For example:
/// ```swift
/// let payload = ReplicatedEntry.changes([.init(path: path, written: .node(node))]).payload
/// let entry = try ReplicatedEntry(payload: payload)
/// ```
public enum ReplicatedEntry: Sendable {
    /// Writes, in the order the owner applied them.
    case changes([Write])
    /// The rules changed: read them again from storage.
    case rules
    /// The data changed outside the log (an import): load the database again.
    case reload

    /// One applied write: where, and its resolved data.
    public struct Write: Sendable {
        public var path: DatabasePath
        public var written: WrittenData

        public init(path: DatabasePath, written: WrittenData) {
            self.path = path
            self.written = written
        }

        /// The tree after this write: what the owner's write produced from the same tree.
        public func applied(to root: Node) -> Node {
            switch written {
            case .node(let node):
                return root.setting(node, at: path)
            case .update(let items):
                var after = root
                for item in items { after = after.setting(item.node, at: path.appending(item.path)) }
                return after
            }
        }
    }

    public static let rulesPayload = #"{"rules":true}"#

    public var payload: String {
        switch self {
        case .rules: return ReplicatedEntry.rulesPayload
        case .reload: return #"{"reload":true}"#
        case .changes(let writes):
            var writer = JSONWriter()
            writer.writeRaw(#"{"c":["#)
            for (index, write) in writes.enumerated() {
                if index > 0 { writer.writeRaw(",") }
                writer.writeRaw(#"{"p":"#)
                writer.write(write.path.keyArray)
                write.written.writeMembers(to: &writer)
                writer.writeRaw("}")
            }
            writer.writeRaw("]}")
            return writer.string
        }
    }

    /// Decodes a payload.
    /// - Throws: ``ReplicationError`` when the payload is not one this version writes.
    public init(payload: String) throws {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: payload)
        } catch {
            throw ReplicationError("A log entry is not JSON")
        }
        guard case .object(let members) = json, let first = members.first else {
            throw ReplicationError("A log entry is not an object")
        }
        switch first.key {
        case "rules": self = .rules
        case "reload": self = .reload
        case "c":
            guard case .array(let items) = first.value else { throw ReplicationError("A log entry's changes are not a list") }
            self = .changes(try items.map(ReplicatedEntry.decodeWrite))
        default:
            throw ReplicationError("A log entry of an unknown kind; is every node running the same version?")
        }
    }

    private static func decodeWrite(_ json: JSONValue) throws -> Write {
        guard case .object(let members) = json, members.count == 2, members[0].key == "p" else {
            throw ReplicationError("A logged write is malformed")
        }
        let path = try decodePath(members[0].value)
        switch (members[1].key, members[1].value) {
        case ("n", let node):
            return Write(path: path, written: .node(try decodeNode(node, depth: path.count)))
        case ("u", .array(let items)), ("up", .array(let items)):
            let resolved = try items.map { item -> (path: DatabasePath, node: Node) in
                guard case .array(let pair) = item, pair.count == 2 else { throw ReplicationError("A logged update is malformed") }
                let relative = try decodePath(pair[0])
                return (relative, try decodeNode(pair[1], depth: path.count + relative.count))
            }
            return Write(path: path, written: .update(resolved))
        default:
            throw ReplicationError("A logged write is malformed")
        }
    }

    private static func decodePath(_ json: JSONValue) throws -> DatabasePath {
        guard case .array(let keys) = json else { throw ReplicationError("A logged path is malformed") }
        return DatabasePath(keys: try keys.map { key in
            guard case .string(let string) = key else { throw ReplicationError("A logged path is malformed") }
            return Key(string)
        })
    }

    private static func decodeNode(_ json: JSONValue, depth: Int) throws -> Node {
        do {
            return try Node(json: json, depth: depth)
        } catch {
            throw ReplicationError("A logged value is malformed")
        }
    }
}

/// A log entry or a forwarded write this node cannot use. Never carries user data.
public struct ReplicationError: HearthError {
    public var message: String
    public init(_ message: String) { self.message = message }
}

extension WrittenData {
    /// The written data as members of an object being written: `,"n":<node>` for a set,
    /// `,"u":[[<path>,<node>],…]` for an update (paths as ``DatabasePath/keyArray``). The log's
    /// entries and the answers to forwarded writes both carry it so. An update that sets a priority
    /// (`a/.priority`) is `"up"` instead: a node of an earlier version, which would take `.priority` for
    /// a child, finds it malformed and reloads rather than serve a wrong tree.
    package func writeMembers(to writer: inout JSONWriter) {
        switch self {
        case .node(let node):
            writer.writeRaw(#","n":"#)
            node.write(to: &writer, format: .export)
        case .update(let items):
            writer.writeRaw(items.contains { $0.path.isPriority } ? #","up":["# : #","u":["#)
            for (index, item) in items.enumerated() {
                if index > 0 { writer.writeRaw(",") }
                writer.writeRaw("[")
                writer.write(item.path.keyArray)
                writer.writeRaw(",")
                item.node.write(to: &writer, format: .export)
                writer.writeRaw("]")
            }
            writer.writeRaw("]")
        }
    }
}

extension DatabasePath {
    /// The path as a JSON array of its keys, as entries between nodes carry it (keys are not escaped
    /// into one string, so any key survives).
    package var keyArray: JSONValue { .array(keys.map { .string($0.string) }) }
}
