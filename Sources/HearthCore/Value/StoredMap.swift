public import HashTreeCollections

/// A map whose children stay in storage (``StoredChildren``, one fixed version of the file) with the
/// changes made since in memory: ``ChildMap``'s third form.
///
/// A write below a large stored node changes only the children it touches: they become overrides, and
/// every other child is still read from the stored version, which is the current one for them since
/// every change goes through the tree. So writes work without reading the map into memory, and two
/// versions of the map compare by their overrides alone
/// (`docs/decisions/0012-compact-tree-and-warm-start.md`, decision 3).
///
/// For example:
/// ```swift
/// var map = ChildMap(stored: StoredChildren(source: reader, path: users))
/// map[Key("ada")] = .leaf(.string("Ada"))   // one override; the rest stays in the file
/// ```
///
/// It is a class, so that ``ChildMap`` (and so every node) stays one word; a change makes a new one.
final class StoredMap: Sendable {
    enum Override: Sendable {
        /// The child's value now; `inBase` says whether the stored version has the key too.
        case set(Node, inBase: Bool)
        /// A child of the stored version that is gone.
        case removed
    }

    let base: StoredChildren
    let overrides: TreeDictionary<Key, Override>
    /// Children now less children in the stored version.
    let countChange: Int
    /// How many overrides are removals (each of a child the stored version has).
    let removedCount: Int

    init(base: StoredChildren, overrides: TreeDictionary<Key, Override> = [:], countChange: Int = 0, removedCount: Int = 0) {
        self.base = base
        self.overrides = overrides
        self.countChange = countChange
        self.removedCount = removedCount
    }

    var count: Int { base.count + countChange }

    /// Without counting the stored children (one seek each): empty only when every override removes a
    /// stored child and the stored version has no others.
    var isEmpty: Bool {
        // Only nodes with data are left in storage, so the stored version is never empty.
        guard countChange < 0, overrides.count == removedCount else { return false }
        return !base.hasMore(than: removedCount)
    }

    func value(for key: Key) -> Node? {
        switch overrides[key] {
        case .set(let node, _)?: node
        case .removed?: nil
        case nil: base.value(for: key)
        }
    }

    /// This map with `value` for `key`.
    func setting(_ value: Node, for key: Key) -> StoredMap {
        var overrides = self.overrides
        var countChange = self.countChange
        var removedCount = self.removedCount
        let inBase: Bool
        switch overrides[key] {
        case .set(_, let wasInBase)?: inBase = wasInBase
        case .removed?:
            inBase = true
            countChange += 1
            removedCount -= 1
        case nil:
            inBase = base.value(for: key) != nil
            if !inBase { countChange += 1 }
        }
        overrides[key] = .set(value, inBase: inBase)
        return StoredMap(base: base, overrides: overrides, countChange: countChange, removedCount: removedCount)
    }

    /// This map without `key`, and the value it had (nil, and this map, when it had none).
    func removing(_ key: Key) -> (map: StoredMap, removed: Node?) {
        var overrides = self.overrides
        let removed: Node
        let removedFromBase: Bool
        switch overrides[key] {
        case .set(let node, let inBase)?:
            if inBase { overrides[key] = .removed } else { overrides.removeValue(forKey: key) }
            removed = node
            removedFromBase = inBase
        case .removed?:
            return (self, nil)
        case nil:
            guard let node = base.value(for: key) else { return (self, nil) }
            overrides[key] = .removed
            removed = node
            removedFromBase = true
        }
        return (StoredMap(base: base, overrides: overrides, countChange: countChange - 1, removedCount: removedCount + (removedFromBase ? 1 : 0)), removed)
    }

    /// Whether `other` is a version of the same stored map with the same children: compares only what
    /// either changed. Nil when they have different stored versions.
    func sameChildren(as other: StoredMap, valuesToo: Bool) -> Bool? {
        guard base === other.base else { return nil }
        // Same stored version: the counts differ by the changes alone (counting the stored children
        // would cost a seek each).
        if countChange != other.countChange { return false }
        for key in overrides.keys {
            if !Self.same(value(for: key), other.value(for: key), valuesToo: valuesToo) { return false }
        }
        for key in other.overrides.keys where overrides[key] == nil {
            if !Self.same(value(for: key), other.value(for: key), valuesToo: valuesToo) { return false }
        }
        return true
    }

    private static func same(_ a: Node?, _ b: Node?, valuesToo: Bool) -> Bool {
        valuesToo ? a == b : (a == nil) == (b == nil)
    }

    /// Every child: the stored ones read page by page (changed ones replaced, removed ones skipped),
    /// then the added ones.
    struct Iterator: IteratorProtocol {
        var stored: StoredChildren.Pages
        let overrides: TreeDictionary<Key, Override>
        var added: TreeDictionary<Key, Override>.Iterator?

        init(_ map: StoredMap) {
            stored = StoredChildren.Pages(stored: map.base)
            overrides = map.overrides
        }

        mutating func next() -> (key: Key, value: Node)? {
            if added == nil {
                while let entry = stored.next() {
                    switch overrides[entry.key] {
                    case nil: return entry
                    case .set(let node, _)?: return (key: entry.key, value: node)
                    case .removed?: continue
                    }
                }
                added = overrides.makeIterator()
            }
            while let (key, override) = added?.next() {
                if case .set(let node, false) = override { return (key: key, value: node) }
            }
            return nil
        }
    }
}
