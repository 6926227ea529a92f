/// The children of a query in the query's order, kept from its child events, and the index delta
/// each event makes to the visible elements.
///
/// A child whose value did not convert to an element (a typed array's decoding failed) keeps its place
/// in the order, so later events that name it as the previous sibling still land right, but is not
/// visible: it takes no index. Pure: no I/O, tested against a reference model.
struct OrderedChildren<Element> {
    struct Entry {
        var key: String
        /// nil: the child's value did not convert.
        var element: Element?
    }

    private(set) var entries: [Entry] = []
    /// Entries whose element is nil; while there are none, visible and raw indices are the same.
    private var hiddenCount = 0

    var count: Int { entries.count - hiddenCount }

    var elements: [Element] {
        hiddenCount == 0 ? entries.map { $0.element! } : entries.compactMap(\.element)
    }

    var keys: [String] { entries.compactMap { $0.element == nil ? nil : $0.key } }

    /// The visible element at `index`.
    func element(at index: Int) -> Element {
        hiddenCount == 0 ? entries[index].element! : entries.lazy.compactMap(\.element).dropFirst(index).first!
    }

    /// The visible index of the child `key`, if it is visible.
    func index(ofKey key: String) -> Int? {
        guard let raw = rawIndex(of: key), entries[raw].element != nil else { return nil }
        return visibleIndex(ofRaw: raw)
    }

    /// A child entered after `previousKey` (nil: first).
    mutating func add(_ key: String, _ element: Element?, after previousKey: String?) -> SyncedArrayChange<Element>? {
        // A repeated add (the SDK re-raising a child after a resync) is a change at the new place.
        if rawIndex(of: key) != nil { return move(key, element, after: previousKey) ?? change(key, element) }
        let raw = insertionIndex(after: previousKey)
        entries.insert(Entry(key: key, element: element), at: raw)
        guard let element else {
            hiddenCount += 1
            return nil
        }
        return .inserted(element, at: visibleIndex(ofRaw: raw))
    }

    /// A child's value changed in place.
    mutating func change(_ key: String, _ element: Element?) -> SyncedArrayChange<Element>? {
        guard let raw = rawIndex(of: key) else { return nil }
        let before = entries[raw].element
        entries[raw].element = element
        switch (before, element) {
        case (nil, nil):
            return nil
        case (nil, let element?):
            hiddenCount -= 1
            return .inserted(element, at: visibleIndex(ofRaw: raw))
        case (let before?, nil):
            hiddenCount += 1
            return .removed(before, at: visibleIndex(ofRaw: raw))
        case (_, let element?):
            return .updated(element, at: visibleIndex(ofRaw: raw))
        }
    }

    /// A child left.
    mutating func remove(_ key: String) -> SyncedArrayChange<Element>? {
        guard let raw = rawIndex(of: key) else { return nil }
        let visible = visibleIndex(ofRaw: raw)
        let removed = entries.remove(at: raw)
        guard let element = removed.element else {
            hiddenCount -= 1
            return nil
        }
        return .removed(element, at: visible)
    }

    /// A child moved to after `previousKey`; `element` is its current value (a move event carries it).
    mutating func move(_ key: String, _ element: Element?, after previousKey: String?) -> SyncedArrayChange<Element>? {
        guard let raw = rawIndex(of: key), previousKey != key else { return nil }
        let from = visibleIndex(ofRaw: raw)
        var entry = entries.remove(at: raw)
        let previous = entry.element
        if (previous == nil) != (element == nil) { hiddenCount += element == nil ? 1 : -1 }
        entry.element = element
        let destination = insertionIndex(after: previousKey)
        entries.insert(entry, at: destination)
        let to = visibleIndex(ofRaw: destination)
        switch (previous, element) {
        case (nil, nil): return nil
        case (nil, let element?): return .inserted(element, at: to)
        case (let previous?, nil): return .removed(previous, at: from)
        // A move event carries the child's current value: in place, it is at least an update.
        case (_, let element?): return from == to ? .updated(element, at: to) : .moved(element, from: from, to: to)
        }
    }

    // MARK: Indices

    private func rawIndex(of key: String) -> Int? {
        // Children mostly arrive in order: the last one is the likeliest previous sibling.
        if let last = entries.last, last.key == key { return entries.count - 1 }
        return entries.firstIndex { $0.key == key }
    }

    private func insertionIndex(after previousKey: String?) -> Int {
        guard let previousKey else { return 0 }
        // Unknown previous sibling (never expected): append rather than lose the child.
        return rawIndex(of: previousKey).map { $0 + 1 } ?? entries.count
    }

    private func visibleIndex(ofRaw raw: Int) -> Int {
        hiddenCount == 0 ? raw : entries[..<raw].reduce(0) { $0 + ($1.element == nil ? 0 : 1) }
    }
}
