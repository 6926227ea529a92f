import HashTreeCollections
/// What a write needs to resolve server values (`{".sv": …}`) while its JSON becomes a node.
public struct ServerValueContext: Sendable {
    /// The server time in milliseconds for `{".sv": "timestamp"}`; one value for a whole request.
    public var now: Double
    /// The data at the write location before the write, for `{".sv": {"increment": n}}`.
    public var existing: Node

    public init(now: Double, existing: Node) {
        self.now = now
        self.existing = existing
    }
}

extension Node {
    /// The longest string leaf Firebase accepts, in UTF-8 bytes.
    public static let maximumStringByteCount = 10 * 1024 * 1024

    /// Converts and validates written JSON, resolving server values.
    ///
    /// `depth` is the depth of the write location: no leaf may end up deeper than 32 levels. `null`
    /// children are dropped and empty objects vanish, so the result may be ``Node/empty``.
    ///
    /// For example:
    /// ```swift
    /// let node = try Node(json: try JSONValue(parsing: #"{"a": 1, ".priority": 2}"#))
    /// #expect(node.priority == .number(2))
    /// ```
    public init(json: JSONValue, depth: Int = 0, context: ServerValueContext? = nil) throws(DataError) {
        self = try Node.convert(json, depth: depth, context: context, existing: context?.existing)
    }

    static func convert(
        _ json: JSONValue,
        depth: Int,
        context: ServerValueContext?,
        existing: Node?
    ) throws(DataError) -> Node {
        switch json {
        case .null:
            return .empty
        case .bool(let b):
            return .leaf(.bool(b))
        case .number(let n):
            guard n.isFinite else { throw DataError(.invalidValue, "Invalid data; numbers must be finite") }
            return .leaf(.number(n))
        case .string(let s):
            guard s.utf8.count <= maximumStringByteCount else {
                throw DataError(.tooLarge, "Invalid data; strings must be at most 10 MB")
            }
            return .leaf(.string(s))
        case .array(let elements):
            try checkDepth(depth + 1)
            var collected: [(key: Key, value: Node)] = []
            collected.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                let key = Key(String(index))
                let child = try convert(element, depth: depth + 1, context: context, existing: existing?.child(key))
                if !child.isEmpty { collected.append((key: key, value: child)) }
            }
            return collected.isEmpty ? .empty : .children(Children(entries: ChildMap(entries: collected)))
        case .object(let members):
            var priority: Priority?
            var value: JSONValue?
            var serverValue: JSONValue?
            var collected: [(key: Key, value: Node)] = []
            collected.reserveCapacity(members.count)
            for (name, member) in members {
                switch name {
                case ".priority":
                    priority = try convertPriority(member, context: context)
                case ".value":
                    value = member
                case ".sv":
                    serverValue = member
                default:
                    do {
                        try Key.validate(name)
                    } catch {
                        throw DataError(.invalidKey, "Invalid data; couldn't parse JSON object, array, or value. \(error.message)")
                    }
                    try checkDepth(depth + 1)
                    let key = Key(name)
                    let child = try convert(member, depth: depth + 1, context: context, existing: existing?.child(key))
                    collected.append((key: key, value: child))
                }
            }
            // A later member with the same name wins; a null one removes the child.
            var entries = Children(entries: ChildMap(entries: collected))
            for entry in collected where entry.value.isEmpty {
                if entries.entries[entry.key]?.isEmpty == true { entries.entries.removeValue(forKey: entry.key) }
            }
            if let serverValue {
                guard value == nil, entries.entries.isEmpty else {
                    throw DataError(.invalidServerValue, "Invalid data; \".sv\" must be the only key of its object")
                }
                return try resolve(serverValue, context: context, existing: existing).withPriority(priority)
            }
            if let value {
                guard entries.entries.isEmpty else {
                    throw DataError(.invalidValue, "Invalid data; an object with \".value\" cannot have children")
                }
                let leaf = try convert(value, depth: depth, context: context, existing: existing)
                guard leaf.isLeaf || leaf.isEmpty else {
                    throw DataError(.invalidValue, "Invalid data; \".value\" must be a primitive")
                }
                return leaf.withPriority(priority)
            }
            entries.priority = priority
            return entries.entries.isEmpty ? .empty : .children(entries)
        }
    }

    static func checkDepth(_ depth: Int) throws(DataError) {
        if depth > DatabasePath.maximumDepth {
            throw DataError(.tooDeep, "Invalid data; data must not be nested more than \(DatabasePath.maximumDepth) levels deep")
        }
    }

    public static func convertPriority(_ json: JSONValue, context: ServerValueContext?) throws(DataError) -> Priority? {
        switch json {
        case .null: return nil
        case .number(let n) where n.isFinite: return .number(n)
        case .string(let s): return .string(s)
        case .object(let members) where members.count == 1 && members[0].key == ".sv":
            switch try resolve(members[0].value, context: context, existing: nil) {
            case .leaf(.number(let n), _): return .number(n)
            default: throw DataError(.invalidPriority, "Invalid data; priorities must be strings, numbers or null")
            }
        default:
            throw DataError(.invalidPriority, "Invalid data; priorities must be strings, numbers or null")
        }
    }

    /// Resolves one `.sv` placeholder against the server time and the existing value.
    static func resolve(_ serverValue: JSONValue, context: ServerValueContext?, existing: Node?) throws(DataError) -> Node {
        guard let context else {
            throw DataError(.invalidServerValue, "Invalid data; server values are not allowed here")
        }
        switch serverValue {
        case .string("timestamp"):
            return .leaf(.number(context.now))
        case .object(let members) where members.count == 1 && members[0].key == "increment":
            guard case .number(let delta) = members[0].value else {
                throw DataError(.invalidServerValue, "Invalid data; increment must be a number")
            }
            let result: Node
            if case .leaf(.number(let current), let priority)? = existing {
                result = .leaf(.number(current + delta), priority: priority)
            } else {
                result = .leaf(.number(delta))
            }
            // A sum past the largest double is Infinity, which no JSON can hold: the write is refused.
            guard case .leaf(.number(let sum), _) = result, sum.isFinite else {
                throw DataError(.invalidServerValue, "Invalid data; the increment's result is out of range")
            }
            return result
        default:
            throw DataError(.invalidServerValue, "Invalid data; unknown server value \(serverValue.jsonText)")
        }
    }
}

extension Node {
    /// A JSON primitive as a node (`null` is the empty node); nil for objects and arrays. Query bounds
    /// (REST parameters, wire query objects) are such primitives.
    public init?(primitive json: JSONValue) {
        switch json {
        case .null: self = .empty
        case .bool(let b): self = .leaf(.bool(b))
        case .number(let n): self = .leaf(.number(n))
        case .string(let s): self = .leaf(.string(s))
        case .array, .object: return nil
        }
    }
}
