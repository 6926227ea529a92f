public import HashTreeCollections

/// The children of an inner node, by key: a small map packed into one byte buffer, or a persistent
/// hash tree for large ones.
///
/// Most objects in a database are small records (`{"name": …, "age": …}`), and a hash-tree entry costs
/// about 72 bytes plus its node's overhead whatever it holds. A record of up to
/// ``packedCapacity`` children is instead one allocation holding its keys and leaf values as bytes,
/// in key order, which takes the tree's resident cost below the size of its JSON
/// (`docs/decisions/0012-compact-tree.md`). Large maps stay hash trees, so changing one child of a
/// node with a million children still copies only the path to it.
///
/// A third form, ``StoredChildren`` with a map of changes (`StoredMap`), leaves the children in the
/// database's file and reads them on demand: a database answers reads with it while it loads after a
/// restart, and keeps it when it runs with a memory limit; changing it keeps only the changed children
/// in memory.
///
/// The interface is the dictionary's: subscripts, `count`, `keys`, and iteration of `(key, value)`
/// pairs (in no particular order).
///
/// For example:
/// ```swift
/// var map: ChildMap = [Key("name"): .leaf(.string("Ada"))]
/// map[Key("born")] = .leaf(.number(1815))
/// #expect(map.count == 2 && map[Key("name")] == .leaf(.string("Ada")))
/// ```
public struct ChildMap: Sendable, Sequence, Hashable, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: Key, value: Node)

    /// The most children a packed map holds; more go to a hash tree.
    public static let packedCapacity = 32

    enum Storage: Sendable {
        case packed(PackedChildren)
        case tree(TreeDictionary<Key, Node>)
        case stored(StoredMap)
    }

    var storage: Storage

    public init() {
        storage = .tree([:])
    }

    public init(dictionaryLiteral elements: (Key, Node)...) {
        self.init(entries: elements.map { (key: $0.0, value: $0.1) })
    }

    /// A map of `tree`'s entries.
    public init(_ tree: TreeDictionary<Key, Node>) {
        if tree.count <= ChildMap.packedCapacity {
            self.init(entries: tree.map { (key: $0.key, value: $0.value) })
        } else {
            self.init(storage: .tree(tree))
        }
    }

    init(storage: Storage) {
        self.storage = storage
    }

    /// Children left in storage, read on demand.
    public init(stored: StoredChildren) {
        storage = .stored(StoredMap(base: stored))
    }

    /// Whether the map is packed (and so can be packed inline in its parent's record).
    var isPackedRecord: Bool {
        if case .packed = storage { return true }
        return false
    }

    /// Whether the children are in storage rather than in memory.
    public var isStored: Bool {
        if case .stored = storage { return true }
        return false
    }

    /// A map of `entries`; a later entry for a key replaces an earlier one. Entries are taken as given
    /// (an empty node is stored like any other).
    public init(entries: [(key: Key, value: Node)]) {
        if entries.isEmpty {
            storage = .tree([:])
            return
        }
        if entries.count <= ChildMap.packedCapacity {
            // Sort stably and keep the last of equal keys.
            let ordered = entries.indices.sorted { a, b in
                let c = Key.compare(entries[a].key, entries[b].key)
                return c != 0 ? c < 0 : a < b
            }
            var unique: [(key: Key, value: Node)] = []
            unique.reserveCapacity(entries.count)
            for index in ordered {
                if let last = unique.last, last.key == entries[index].key {
                    unique[unique.count - 1] = entries[index]
                } else {
                    unique.append(entries[index])
                }
            }
            if let packed = PackedChildren.make(sorted: unique) {
                storage = .packed(packed)
                return
            }
        }
        storage = .tree(Self.tree(entries))
    }

    public var count: Int {
        switch storage {
        case .packed(let packed): packed.count
        case .tree(let tree): tree.count
        case .stored(let stored): stored.count
        }
    }

    public var isEmpty: Bool {
        switch storage {
        case .packed(let packed): packed.count == 0
        case .tree(let tree): tree.isEmpty
        case .stored(let stored): stored.isEmpty
        }
    }

    public var underestimatedCount: Int { count }

    public subscript(key: Key) -> Node? {
        get {
            switch storage {
            case .packed(let packed): packed.value(for: key)
            case .tree(let tree): tree[key]
            case .stored(let stored): stored.value(for: key)
            }
        }
        set {
            if let newValue { setValue(newValue, for: key) } else { removeValue(forKey: key) }
        }
    }

    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Node? {
        switch storage {
        case .packed(let packed):
            var entries = packed.entries
            guard let index = entries.firstIndex(where: { $0.key == key }) else { return nil }
            let removed = entries.remove(at: index).value
            storage = entries.isEmpty ? .tree([:]) : PackedChildren.make(sorted: entries).map { .packed($0) } ?? .tree(Self.tree(entries))
            return removed
        case .tree(var tree):
            storage = .tree([:])  // drop the reference so the tree is changed in place
            let removed = tree.removeValue(forKey: key)
            storage = .tree(tree)
            return removed
        case .stored(let stored):
            let (map, removed) = stored.removing(key)
            storage = .stored(map)
            return removed
        }
    }

    mutating func setValue(_ value: Node, for key: Key) {
        switch storage {
        case .packed(let packed):
            var entries = packed.entries
            var low = 0
            var high = entries.count
            while low < high {
                let middle = (low + high) / 2
                if Key.compare(entries[middle].key, key) < 0 { low = middle + 1 } else { high = middle }
            }
            if low < entries.count, entries[low].key == key {
                entries[low].value = value
            } else {
                entries.insert((key: key, value: value), at: low)
            }
            if entries.count <= ChildMap.packedCapacity, let repacked = PackedChildren.make(sorted: entries) {
                storage = .packed(repacked)
            } else {
                storage = .tree(Self.tree(entries))
            }
        case .tree(var tree):
            if tree.isEmpty, let packed = PackedChildren.make(sorted: [(key: key, value: value)]) {
                storage = .packed(packed)
                return
            }
            storage = .tree([:])
            tree[key] = value
            storage = .tree(tree)
        case .stored(let stored):
            storage = .stored(stored.setting(value, for: key))
        }
    }

    /// A hash tree of `entries`; a later entry for a key replaces an earlier one.
    static func tree(_ entries: [(key: Key, value: Node)]) -> TreeDictionary<Key, Node> {
        var tree = TreeDictionary<Key, Node>()
        for entry in entries { tree[entry.key] = entry.value }
        return tree
    }

    /// The entries sorted by key (Firebase key order).
    public var sortedByKey: [(key: Key, value: Node)] {
        switch storage {
        case .packed(let packed): packed.entries
        case .tree(let tree): Self.sortedByKey(tree.map { (key: $0.key, value: $0.value) })
        case .stored(let stored): Self.sortedByKey(Array(IteratorSequence(StoredMap.Iterator(stored))))
        }
    }

    /// `entries` (of distinct keys) in Firebase key order.
    ///
    /// Sorts small fixed-size sort keys (``KeyOrderPrefix``) with the entries' positions rather than the
    /// entries: moving a `(Key, Node)` pair costs retains and releases, and comparing two keys reads
    /// two strings elsewhere in memory. Sorting the pairs of a location with 100,000 children was half
    /// of the server's time pushing them to a listener (`docs/benchmarks.md`).
    static func sortedByKey(_ entries: [(key: Key, value: Node)]) -> [(key: Key, value: Node)] {
        guard entries.count > 1 else { return entries }
        var order = entries.indices.map { KeyOrderPrefix(entries[$0].key, position: $0) }
        entries.withUnsafeBufferPointer { entries in
            order.sort { a, b in a.precedes(b) { entries[$0].key } }
        }
        return order.map { entries[$0.position] }
    }

    // MARK: Sequence

    public struct Iterator: IteratorProtocol {
        enum Source {
            case packed(PackedChildren.Cursor)
            case tree(TreeDictionary<Key, Node>.Iterator)
            case stored(StoredMap.Iterator)
        }

        var source: Source

        public mutating func next() -> (key: Key, value: Node)? {
            switch source {
            case .packed(var cursor):
                let next = cursor.next()
                source = .packed(cursor)
                return next
            case .tree(var iterator):
                let next = iterator.next()
                source = .tree(iterator)
                return next
            case .stored(var pages):
                let next = pages.next()
                source = .stored(pages)
                return next
            }
        }
    }

    public func makeIterator() -> Iterator {
        switch storage {
        case .packed(let packed): Iterator(source: .packed(PackedChildren.Cursor(packed)))
        case .tree(let tree): Iterator(source: .tree(tree.makeIterator()))
        case .stored(let stored): Iterator(source: .stored(StoredMap.Iterator(stored)))
        }
    }

    /// The keys, in no particular order. Two key sets compare equal when they hold the same keys; for
    /// two versions of one large map the comparison skips every part they share.
    public struct Keys: Sequence, Equatable, Sendable {
        let map: ChildMap

        public var count: Int { map.count }
        public var underestimatedCount: Int { map.count }

        public func makeIterator() -> LazyMapSequence<ChildMap, Key>.Iterator {
            map.lazy.map(\.key).makeIterator()
        }

        public static func == (lhs: Keys, rhs: Keys) -> Bool {
            switch (lhs.map.storage, rhs.map.storage) {
            case let (.tree(a), .tree(b)):
                return a.keys == b.keys
            case let (.packed(a), .packed(b)):
                if a.isIdentical(to: b) { return true }
                return a.count == b.count && zip(a.entries, b.entries).allSatisfy { $0.key == $1.key }
            case let (.stored(a), .stored(b)) where a.base === b.base:
                return a.sameChildren(as: b, valuesToo: false) ?? false
            default:
                return lhs.map.count == rhs.map.count && lhs.map.allSatisfy { rhs.map[$0.key] != nil }
            }
        }
    }

    public var keys: Keys { Keys(map: self) }

    public var values: LazyMapSequence<ChildMap, Node> { lazy.map(\.value) }

    // MARK: Hashable

    public static func == (lhs: ChildMap, rhs: ChildMap) -> Bool {
        switch (lhs.storage, rhs.storage) {
        case let (.tree(a), .tree(b)):
            return a == b
        case let (.packed(a), .packed(b)):
            return a.isEqual(to: b)
        case let (.stored(a), .stored(b)) where a.base === b.base:
            return a.sameChildren(as: b, valuesToo: true) ?? false
        default:
            guard lhs.count == rhs.count else { return false }
            return lhs.allSatisfy { rhs[$0.key] == $0.value }
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
    }
}

/// The first 16 bytes of a key as two integers that order as the keys do, where they differ: integer
/// keys by value (below every other key), other keys by their UTF-8 bytes, with the lead bytes of
/// supplementary characters (`F0…F4`) moved below those of U+E000…U+FFFF (`EE`, `EF`) as UTF-16 order
/// has them. Equal prefixes say nothing: the keys themselves decide.
///
/// For example:
/// ```swift
/// KeyOrderPrefix(Key("10"), position: 0).high < KeyOrderPrefix(Key("a"), position: 1).high  // true
/// ```
struct KeyOrderPrefix {
    var high: UInt64
    var low: UInt64
    var position: Int

    init(_ key: Key, position: Int) {
        self.position = position
        if let integer = key.integerValue {
            // Below 2^33; a key's first byte is never zero, so every other key's `high` is above 2^56.
            high = UInt64(Int64(integer) - Int64(Int32.min))
            low = 0
            return
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        var index = 0
        for byte in key.string.utf8 {
            guard index < 16 else { break }
            let ordered: UInt8 =
                switch byte {
                case 0xF0...0xF4: byte - 0x02  // EE…F2
                case 0xEE, 0xEF: byte + 0x05  // F3, F4
                default: byte
                }
            if index < 8 {
                high |= UInt64(ordered) << (56 - 8 * index)
            } else {
                low |= UInt64(ordered) << (56 - 8 * (index - 8))
            }
            index += 1
        }
        self.high = high
        self.low = low
    }

    /// Whether this key sorts before `other`'s; `key(position)` gives the keys when the prefixes tie.
    @inline(__always)
    func precedes(_ other: KeyOrderPrefix, key: (Int) -> Key) -> Bool {
        if high != other.high { return high < other.high }
        if low != other.low { return low < other.low }
        return Key.compare(key(position), key(other.position)) < 0
    }
}
