public import Synchronization

/// Reads parts of a tree that stays in storage, for nodes whose children are not in memory: the
/// database's file while it loads after a restart, so reads are answered at once
/// (`docs/decisions/0012-compact-tree-and-warm-start.md`).
///
/// A source shows one fixed version of the tree (a read snapshot), whatever is written after it was
/// made, so a reader never sees a mix of versions. Its calls are synchronous: they read a local file.
///
/// For example:
/// ```swift
/// let users = source.node(at: try DatabasePath("/users"))      // its children may stay in storage
/// let page = source.children(of: try DatabasePath("/users"), after: nil, limit: 100)
/// ```
public protocol StoredTreeSource: Sendable {
    /// The node at `path`: whole when it is small, else an inner node whose children stay in storage.
    func node(at path: DatabasePath) -> Node
    /// Up to `limit` children of the node at `path` after the key `after` (in storage order, which is
    /// not Firebase's key order), each as ``node(at:)`` gives it.
    func children(of path: DatabasePath, after: Key?, limit: Int) -> [(key: Key, value: Node)]
    /// How many children the node at `path` has, counting no further than `limit`.
    func childCount(of path: DatabasePath, atMost limit: Int) -> Int
}

/// The children of one node, left in storage and read on demand (see ``StoredTreeSource``); changes to
/// them are kept beside it, in memory (`StoredMap`).
///
/// Children that are themselves too large to read whole are kept once read: they are small (a source
/// and a path), and finding one again would cost a range scan of the rows it is too large for.
public final class StoredChildren: Sendable {
    public let source: any StoredTreeSource
    public let path: DatabasePath
    private let knownCount = Mutex<Int?>(nil)
    private let storedChildren = Mutex<[Key: Node]>([:])
    /// The last few children read whole. A write reads the record it changes several times (to apply
    /// it, to plan its rows, to check what it replaces); kept here, the file is read once. Few, so a
    /// stream of reads over millions of children holds no more than this.
    private let recentChildren = Mutex(RecentChildren())

    struct RecentChildren {
        static let capacity = 16
        var nodes: [Key: Node] = [:]
        var order: [Key] = []

        mutating func insert(_ node: Node, for key: Key) {
            if nodes.updateValue(node, forKey: key) != nil { return }
            order.append(key)
            if order.count > Self.capacity { nodes.removeValue(forKey: order.removeFirst()) }
        }
    }

    /// Children are fetched in pages of this many while iterating.
    static let pageSize = 256

    public init(source: any StoredTreeSource, path: DatabasePath) {
        self.source = source
        self.path = path
    }

    var count: Int {
        if let count = knownCount.withLock({ $0 }) { return count }
        let count = source.childCount(of: path, atMost: .max)
        knownCount.withLock { $0 = count }
        return count
    }

    /// Whether there are more than `count` children, counting no more than that many and one.
    func hasMore(than count: Int) -> Bool {
        if let known = knownCount.withLock({ $0 }) { return known > count }
        return source.childCount(of: path, atMost: count + 1) > count
    }

    func value(for key: Key) -> Node? {
        if let known = storedChildren.withLock({ $0[key] }) { return known }
        if let recent = recentChildren.withLock({ $0.nodes[key] }) { return recent }
        let node = source.node(at: path.child(key))
        if node.isEmpty { return nil }
        if node.childEntries.isStored {
            storedChildren.withLock { $0[key] = node }
        } else {
            recentChildren.withLock { $0.insert(node, for: key) }
        }
        return node
    }

    /// Every child, read page by page.
    struct Pages: IteratorProtocol {
        let stored: StoredChildren
        var page: [(key: Key, value: Node)] = []
        var index = 0
        var finished = false

        mutating func next() -> (key: Key, value: Node)? {
            if index == page.count {
                guard !finished else { return nil }
                let last = page.last?.key
                page = stored.source.children(of: stored.path, after: last, limit: StoredChildren.pageSize)
                index = 0
                if page.count < StoredChildren.pageSize { finished = true }
                if page.isEmpty { return nil }
            }
            defer { index += 1 }
            return page[index]
        }
    }
}
