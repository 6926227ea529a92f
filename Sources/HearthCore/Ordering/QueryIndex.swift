/// What a query orders children by.
public enum QueryIndex: Sendable, Hashable, CustomStringConvertible {
    /// `orderBy="$key"`: the child's key.
    case key
    /// `orderBy="$value"`: the child's own value.
    case value
    /// `orderBy="$priority"`: the child's priority.
    case priority
    /// `orderBy="<path>"`: the value at a path under each child (missing counts as null).
    case child(DatabasePath)

    /// The JSON-decoded `orderBy` text: `$key`, `$value`, `$priority` or a child path.
    public var description: String {
        switch self {
        case .key: "$key"
        case .value: "$value"
        case .priority: "$priority"
        case .child(let path): path.keys.map(\.string).joined(separator: "/")
        }
    }

    /// The text `.indexOn` must list for this index, or nil when no index is needed.
    public var indexOnName: String? {
        switch self {
        case .key, .priority: nil
        case .value: ".value"
        case .child: description
        }
    }

    /// The value a child is sorted by under this index (keys are handled by the caller).
    public func sortValue(of node: Node) -> Node {
        switch self {
        case .key: return .empty
        case .value: return node
        case .priority:
            guard let p = node.priority else { return .empty }
            return .leaf(p.primitive)
        case .child(let path): return node.child(at: path)
        }
    }
}

extension Node {
    /// Firebase's value order: null, then leaves (false, true, numbers, strings), then all objects equal.
    public static func compareValues(_ a: Node, _ b: Node) -> Int {
        switch (a, b) {
        case let (.leaf(x, _), .leaf(y, _)):
            return Primitive.compare(x, y)
        case (.leaf, .children(let c)):
            return c.entries.isEmpty ? 1 : -1
        case (.children(let c), .leaf):
            return c.entries.isEmpty ? -1 : 1
        case let (.children(x), .children(y)):
            switch (x.entries.isEmpty, y.entries.isEmpty) {
            case (true, true), (false, false): return 0
            case (true, false): return -1
            case (false, true): return 1
            }
        }
    }
}
