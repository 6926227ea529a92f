import HashTreeCollections
/// A query over the children of a location: an order, an optional range and an optional limit.
///
/// The default query (order by key, no range, no limit) means "the whole location".
///
/// For example:
/// ```swift
/// var query = Query(index: .child(try DatabasePath("height")))
/// query.start = .init(value: .leaf(.number(3)))
/// query.limit = .first(2)
/// let window = query.window(over: dinosaurs)
/// ```
public struct Query: Sendable, Hashable {
    public var index: QueryIndex
    public var start: Bound?
    public var end: Bound?
    public var limit: Limit?

    public init(index: QueryIndex = .key, start: Bound? = nil, end: Bound? = nil, limit: Limit? = nil) {
        self.index = index
        self.start = start
        self.end = end
        self.limit = limit
    }

    /// The query that returns a whole location.
    public static let all = Query()

    /// True when the query neither filters nor limits.
    public var isDefault: Bool { start == nil && end == nil && limit == nil }

    /// One end of a range: a value plus an optional key tie-break, inclusive or exclusive.
    public struct Bound: Sendable, Hashable {
        /// The index value (a leaf, or empty for `null`). For `$key` queries, a string leaf holding the key.
        public var value: Node
        public var name: BoundName?
        public var inclusive: Bool

        public init(value: Node, name: BoundName? = nil, inclusive: Bool = true) {
            self.value = value
            self.name = name
            self.inclusive = inclusive
        }
    }

    /// The key part of a bound. `[MIN_NAME]` sorts below every key; `[MAX_NAME]` (Android: `[MAX_KEY]`) above.
    public enum BoundName: Sendable, Hashable {
        case min
        case max
        case key(Key)

        public init(_ string: String) {
            switch string {
            case "[MIN_NAME]": self = .min
            case "[MAX_NAME]", "[MAX_KEY]": self = .max
            default: self = .key(Key(string))
            }
        }
    }

    public enum Limit: Sendable, Hashable {
        case first(Int)
        case last(Int)
    }

    /// The children of `node` that the query selects, in index order.
    ///
    /// With a limit it keeps only the best `limit` children while scanning (O(n log limit), no copy of
    /// all n), so a page of a node with a million children costs one pass, not a sort of a million.
    public func window(over node: Node) -> [(key: Key, node: Node)] {
        guard case .children(let children) = node, !children.entries.isEmpty else { return [] }
        if let limit { return limitedWindow(children.entries, limit) }
        let entries: [(key: Key, node: Node, sort: Node)] = children.entries.map {
            (key: $0.key, node: $0.value, sort: index.sortValue(of: $0.value))
        }
        // Positions are sorted, not the entries (see `ChildMap.sortedByKey`); when no child has a sort
        // value (a priority order without priorities, the commonest), the keys alone decide.
        let byKeyOnly = index == .key || entries.allSatisfy { $0.sort.isEmpty }
        var order = entries.indices.map { KeyOrderPrefix(entries[$0].key, position: $0) }
        entries.withUnsafeBufferPointer { entries in
            order.sort { a, b in
                if !byKeyOnly {
                    let c = Node.compareValues(entries[a.position].sort, entries[b.position].sort)
                    if c != 0 { return c < 0 }
                }
                return a.precedes(b) { entries[$0].key }
            }
        }
        var lower = 0
        var upper = order.count
        if let start {
            while lower < upper, !isAfterStart(entries[order[lower].position].key, entries[order[lower].position].sort, start) { lower += 1 }
        }
        if let end {
            while upper > lower, !isBeforeEnd(entries[order[upper - 1].position].key, entries[order[upper - 1].position].sort, end) { upper -= 1 }
        }
        switch limit {
        case .first(let n)?: upper = min(upper, lower + max(n, 0))
        case .last(let n)?: lower = max(lower, upper - max(n, 0))
        case nil: break
        }
        return order[lower..<upper].map { (key: entries[$0.position].key, node: entries[$0.position].node) }
    }

    /// The first or last `limit` children in range, chosen with a bounded heap whose root is the
    /// entry that would leave first (the greatest for `.first`, the least for `.last`).
    func limitedWindow(_ entries: ChildMap, _ limit: Limit) -> [(key: Key, node: Node)] {
        let (capacity, keepsFirst): (Int, Bool) = switch limit {
        case .first(let n): (max(n, 0), true)
        case .last(let n): (max(n, 0), false)
        }
        guard capacity > 0 else { return [] }
        typealias Entry = (key: Key, node: Node, sort: Node)
        // True when `a` should leave the heap before `b`.
        let leavesBefore: (Entry, Entry) -> Bool = { a, b in
            let c = compareEntries(a.key, a.sort, b.key, b.sort)
            return keepsFirst ? c > 0 : c < 0
        }
        var heap: [Entry] = []
        heap.reserveCapacity(min(capacity, entries.count))
        for (key, child) in entries {
            let sort = index.sortValue(of: child)
            if let start, !isAfterStart(key, sort, start) { continue }
            if let end, !isBeforeEnd(key, sort, end) { continue }
            let entry = (key: key, node: child, sort: sort)
            if heap.count < capacity {
                heap.append(entry)
                var i = heap.count - 1
                while i > 0 {
                    let parent = (i - 1) / 2
                    guard leavesBefore(heap[i], heap[parent]) else { break }
                    heap.swapAt(i, parent)
                    i = parent
                }
            } else if leavesBefore(heap[0], entry) {
                heap[0] = entry
                var i = 0
                while true {
                    let left = 2 * i + 1, right = left + 1
                    var top = i
                    if left < heap.count, leavesBefore(heap[left], heap[top]) { top = left }
                    if right < heap.count, leavesBefore(heap[right], heap[top]) { top = right }
                    if top == i { break }
                    heap.swapAt(i, top)
                    i = top
                }
            }
        }
        heap.sort { a, b in compareEntries(a.key, a.sort, b.key, b.sort) < 0 }
        return heap.map { (key: $0.key, node: $0.node) }
    }

    /// The node made of the query's window (the location itself for the default query).
    public func evaluate(on node: Node) -> Node {
        if isDefault && index == .key { return node }
        if node.isLeaf { return isDefault ? node : .empty }
        var out = Node.Children(entries: ChildMap(entries: window(over: node).map { (key: $0.key, value: $0.node) }))
        out.priority = node.priority
        return out.entries.isEmpty ? .empty : .children(out)
    }

    /// Whether a child with this key and value would be inside the range (limits not considered).
    public func rangeContains(key: Key, node: Node) -> Bool {
        let sort = index.sortValue(of: node)
        if let start, !isAfterStart(key, sort, start) { return false }
        if let end, !isBeforeEnd(key, sort, end) { return false }
        return true
    }

    /// Compares two children in the query's order (its index, then the key): negative when `a` comes
    /// first. `window(over:)` sorts with the same order, so a sorted window can be kept up to date
    /// child by child.
    ///
    /// For example:
    /// ```swift
    /// Query.all.compareChildren((Key("a"), .empty), (Key("b"), .empty)) // < 0
    /// ```
    public func compareChildren(_ a: (key: Key, node: Node), _ b: (key: Key, node: Node)) -> Int {
        compareEntries(a.key, index.sortValue(of: a.node), b.key, index.sortValue(of: b.node))
    }

    func compareEntries(_ keyA: Key, _ sortA: Node, _ keyB: Key, _ sortB: Node) -> Int {
        if index != .key {
            let c = Node.compareValues(sortA, sortB)
            if c != 0 { return c }
        }
        return Key.compare(keyA, keyB)
    }

    /// Compares an entry with a bound position: negative when the entry sorts before it.
    func compare(_ key: Key, _ sort: Node, to bound: Bound, missingName: BoundName) -> Int {
        if index == .key {
            guard case .leaf(.string(let s), _) = bound.value else { return 0 }
            switch BoundName(s) {
            case .min: return 1
            case .max: return -1
            case .key(let k): return Key.compare(key, k)
            }
        }
        let c = Node.compareValues(sort, bound.value)
        if c != 0 { return c }
        switch bound.name ?? missingName {
        case .min: return 1
        case .max: return -1
        case .key(let k): return Key.compare(key, k)
        }
    }

    func isAfterStart(_ key: Key, _ sort: Node, _ bound: Bound) -> Bool {
        // startAt(v) starts at (v, MIN); startAfter(v) without a key starts after (v, MAX).
        let c = compare(key, sort, to: bound, missingName: bound.inclusive ? .min : .max)
        return bound.inclusive ? c >= 0 : c > 0
    }

    func isBeforeEnd(_ key: Key, _ sort: Node, _ bound: Bound) -> Bool {
        // endAt(v) ends at (v, MAX); endBefore(v) without a key ends before (v, MIN).
        let c = compare(key, sort, to: bound, missingName: bound.inclusive ? .max : .min)
        return bound.inclusive ? c <= 0 : c < 0
    }
}
