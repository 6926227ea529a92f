
/// An immutable node of the database tree: a leaf or a set of children, either with an optional priority.
///
/// Children live in a ``ChildMap``: a small record packed into one buffer, or a persistent hash tree,
/// so copying a node is O(1) and changing one child copies only the path to it (and the record that
/// holds it). That lets the engine hand out snapshots to readers while it keeps writing.
/// The empty node (no value, no children) is how the database represents `null`.
///
/// For example:
/// ```swift
/// let node = Node.empty.setting(.leaf(.string("Ada")), at: try DatabasePath("/users/ada/name"))
/// #expect(node.child(at: try DatabasePath("/users/ada")).childCount == 1)
/// ```
public enum Node: Sendable, Hashable {
    case leaf(Primitive, priority: Priority?)
    case children(Children)

    /// The children of an inner node and its priority.
    public struct Children: Sendable, Hashable {
        public var entries: ChildMap
        public var priority: Priority?

        public init(entries: ChildMap = ChildMap(), priority: Priority? = nil) {
            self.entries = entries
            self.priority = priority
        }
    }

    /// `null`: no value and no children.
    public static let empty = Node.children(Children())

    /// A leaf without a priority.
    public static func leaf(_ value: Primitive) -> Node { .leaf(value, priority: nil) }

    public var isEmpty: Bool {
        if case .children(let c) = self { return c.entries.isEmpty }
        return false
    }

    public var isLeaf: Bool {
        if case .leaf = self { return true }
        return false
    }

    public var priority: Priority? {
        switch self {
        case .leaf(_, let p): p
        case .children(let c): c.entries.isEmpty ? nil : c.priority
        }
    }

    public var primitive: Primitive? {
        if case .leaf(let v, _) = self { return v }
        return nil
    }

    public var childCount: Int {
        if case .children(let c) = self { return c.entries.count }
        return 0
    }

    /// The children as (key, node) pairs in no particular order.
    public var childEntries: ChildMap {
        if case .children(let c) = self { return c.entries }
        return ChildMap()
    }

    /// The children sorted by key (Firebase key order).
    public var sortedChildren: [(key: Key, node: Node)] {
        childEntries.sortedByKey.map { (key: $0.key, node: $0.value) }
    }

    public func child(_ key: Key) -> Node {
        if case .children(let c) = self { return c.entries[key] ?? .empty }
        return .empty
    }

    public func child(at path: DatabasePath) -> Node {
        child(at: path.keys[...])
    }

    public func child(at keys: ArraySlice<Key>) -> Node {
        var node = self
        for key in keys {
            guard case .children(let c) = node, let next = c.entries[key] else { return .empty }
            node = next
        }
        return node
    }

    /// This node with its priority replaced. Empty nodes cannot hold a priority.
    public func withPriority(_ priority: Priority?) -> Node {
        switch self {
        case .leaf(let v, _): return .leaf(v, priority: priority)
        case .children(var c):
            if c.entries.isEmpty { return self }
            c.priority = priority
            return .children(c)
        }
    }

    /// This node with the immediate child `key` replaced (an empty node removes it).
    ///
    /// As in Firebase: a leaf that gets a child becomes an inner node and keeps its priority; an inner
    /// node that loses its last child becomes empty and loses its priority.
    public func replacingChild(_ key: Key, with node: Node) -> Node {
        switch self {
        case .leaf(_, let priority):
            if node.isEmpty { return self }
            return .children(Children(entries: [key: node], priority: priority))
        case .children(var c):
            if node.isEmpty {
                c.entries.removeValue(forKey: key)
                if c.entries.isEmpty { return .empty }
            } else {
                c.entries[key] = node
            }
            return .children(c)
        }
    }

    /// This node with the node at `path` (relative to this node) replaced.
    ///
    /// A last key ``Key/priority`` sets the priority of the node above it to `node`'s value (a string or
    /// a number; anything else removes it), as an update's `a/.priority` does; an empty node keeps none.
    public func setting(_ node: Node, at path: DatabasePath) -> Node {
        setting(node, at: path.keys[...])
    }

    /// As `setting(_:at:)` with a path, for its keys.
    public func setting(_ node: Node, at keys: ArraySlice<Key>) -> Node {
        guard let first = keys.first else { return node }
        if keys.count == 1, first.isPriority { return withPriority(node.asPriority) }
        let updated = child(first).setting(node, at: keys.dropFirst())
        return replacingChild(first, with: updated)
    }

    /// This node as a priority: a string or a number leaf is one; anything else is none.
    public var asPriority: Priority? {
        switch self {
        case .leaf(.number(let n), _): .number(n)
        case .leaf(.string(let s), _): .string(s)
        default: nil
        }
    }

    /// The number of leaves in this subtree (priorities not counted).
    public var leafCount: Int {
        switch self {
        case .leaf: 1
        case .children(let c): c.entries.values.reduce(0) { $0 + $1.leafCount }
        }
    }

    public static func == (lhs: Node, rhs: Node) -> Bool {
        switch (lhs, rhs) {
        case let (.leaf(a, pa), .leaf(b, pb)): return a == b && pa == pb
        case let (.children(a), .children(b)):
            if a.entries.isEmpty && b.entries.isEmpty { return true }
            return a.priority == b.priority && a.entries == b.entries
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .leaf(let v, let p): hasher.combine(v); hasher.combine(p)
        case .children(let c): hasher.combine(c.entries.count); hasher.combine(c.priority)
        }
    }
}
