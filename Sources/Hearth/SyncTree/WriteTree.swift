import DequeModule
import HearthCore

/// A user write the server has not acknowledged yet.
struct WriteRecord: Sendable {
    var id: Int
    /// The location written (the merge root for updates).
    var path: DatabasePath
    /// Absolute paths and their new data: one entry for a set, one per key for an update.
    var changes: [(path: DatabasePath, node: Node)]
    var isMerge: Bool
    /// Hidden writes (transactions without local events) take effect only when the server confirms.
    var visible: Bool
}

/// The ordered pending writes, layered over server data to make what the user sees.
///
/// For example:
/// ```swift
/// var tree = WriteTree()
/// tree.add(WriteRecord(id: 1, path: try DatabasePath("/a"), changes: [(try DatabasePath("/a"), .leaf(.number(1)))], isMerge: false, visible: true))
/// #expect(tree.apply(to: .empty, at: .root, skipUnknownChildren: false).node.child(Key("a")) == .leaf(.number(1)))
/// ```
struct WriteTree: Sendable {
    /// In the order made (ascending ids); the server confirms them in that order, so the one removed
    /// is almost always first.
    private(set) var records: Deque<WriteRecord> = []
    /// The visible writes by the locations they set, so that the writes that reach one location are
    /// found by its path rather than by going through every pending write (a client streaming writes to
    /// a location it observes has thousands pending, and each write and acknowledgement refreshes the
    /// view). Made when views first ask (``prepareIndex()``), then kept up to date: a client with no
    /// views does not pay for it.
    private var index: PathIndex?

    struct PathIndex: Sendable {
        /// The ids of the visible writes that set each location, ascending.
        var at: [DatabasePath: [Int]] = [:]
        /// How many visible writes set a location strictly below each path.
        var below: [DatabasePath: Int] = [:]

        mutating func update(_ record: WriteRecord, adding: Bool) {
            for change in record.changes {
                if adding {
                    at[change.path, default: []].append(record.id)
                } else {
                    at[change.path]?.removeAll { $0 == record.id }
                    if at[change.path]?.isEmpty == true { at[change.path] = nil }
                }
                for ancestor in WriteTree.locations(above: change.path) {
                    let count = below[ancestor, default: 0] + (adding ? 1 : -1)
                    below[ancestor] = count > 0 ? count : nil
                }
            }
        }
    }

    mutating func add(_ record: WriteRecord) {
        records.append(record)
        if record.visible { index?.update(record, adding: true) }
    }

    /// Removes a write; returns it.
    @discardableResult
    mutating func remove(id: Int) -> WriteRecord? {
        guard let position = records.firstIndex(where: { $0.id == id }) else { return nil }
        let record = records.remove(at: position)
        if record.visible { index?.update(record, adding: false) }
        return record
    }

    /// Makes the index of the visible writes by path, if it is not made yet. The lookups below go
    /// through every write without it.
    mutating func prepareIndex() {
        guard index == nil else { return }
        var made = PathIndex()
        for record in records where record.visible { made.update(record, adding: true) }
        index = made
    }

    var isEmpty: Bool { records.isEmpty }

    /// Whether a visible write sets `path` or a location above it: until it is answered, what the
    /// server sends for `path` cannot show, and the write alone decides what is there.
    func shadows(_ path: DatabasePath) -> Bool {
        guard let index else {
            return records.contains { record in record.visible && record.changes.contains { $0.path.contains(path) } }
        }
        guard !index.at.isEmpty else { return false }
        return index.at[path] != nil || Self.locations(above: path).contains { index.at[$0] != nil }
    }

    /// Whether a visible write sets a location strictly below `path`.
    func hasWrites(below path: DatabasePath) -> Bool {
        guard let index else {
            return records.contains { record in
                record.visible && record.changes.contains { $0.path.count > path.count && path.contains($0.path) }
            }
        }
        return index.below[path] != nil
    }

    /// `base` (the server data at `path`) with the visible writes applied in order, as
    /// `apply(to:at:skipUnknownChildren: false)`, but going through only the writes that reach `path`:
    /// those of it or above it (by path) and, when some lie below it, those.
    func applyReaching(_ base: Node, at path: DatabasePath) -> Node {
        guard let index else { return apply(to: base, at: path, skipUnknownChildren: false).node }
        guard !index.at.isEmpty else { return base }
        var ids = index.at[path] ?? []
        for location in Self.locations(above: path) { ids += index.at[location] ?? [] }
        if index.below[path] != nil {
            for record in records where record.visible && record.changes.contains(where: { $0.path.count > path.count && path.contains($0.path) }) {
                ids.append(record.id)
            }
        }
        guard !ids.isEmpty else { return base }
        // In the order they were made, each once.
        let positions = Set(ids).compactMap(position(of:)).sorted()
        var node = base
        for position in positions {
            for change in records[position].changes { _ = Self.layer(change, onto: &node, at: path, skipUnknownChildren: false) }
        }
        return node
    }

    /// The locations above `path`, from the root down.
    static func locations(above path: DatabasePath) -> [DatabasePath] {
        (0..<path.count).map { DatabasePath(keys: Array(path.keys.prefix($0))) }
    }

    /// Puts `change` over `node`, the data at `path`; returns whether it replaced all of it.
    private static func layer(_ change: (path: DatabasePath, node: Node), onto node: inout Node, at path: DatabasePath, skipUnknownChildren: Bool) -> Bool {
        if change.path.contains(path) {
            node = change.node.child(at: path.keys[change.path.count...])
            return true
        }
        if path.contains(change.path) {
            let relative = change.path.keys[path.count...]
            if skipUnknownChildren, relative.count > 1, node.child(relative.first!).isEmpty { return false }
            node = node.setting(change.node, at: relative)
        }
        return false
    }

    /// Where the write `id` is in `records`: found by halving, the ids ascending.
    private func position(of id: Int) -> Int? {
        var low = 0
        var high = records.count
        while low < high {
            let middle = (low + high) / 2
            if records[middle].id < id { low = middle + 1 } else { high = middle }
        }
        if low < records.count, records[low].id == id { return low }
        return records.firstIndex { $0.id == id }
    }

    /// `base` (the server data at `path`) with every visible write applied in order; `covered` tells
    /// whether a write replaced the whole location (its data is then complete without the server).
    ///
    /// With `skipUnknownChildren` (filtered views, whose cache holds only a window), a write deep
    /// inside a child the cache does not hold is left out rather than creating a partial child.
    func apply(to base: Node, at path: DatabasePath, skipUnknownChildren: Bool, excluding excluded: Int? = nil) -> (node: Node, covered: Bool) {
        var node = base
        var covered = false
        for record in records where record.visible && record.id != excluded {
            for change in record.changes {
                if Self.layer(change, onto: &node, at: path, skipUnknownChildren: skipUnknownChildren) { covered = true }
            }
        }
        return (node, covered)
    }

    /// The paths a write touches, for finding the views to update.
    func paths(of id: Int) -> [DatabasePath] {
        records.first { $0.id == id }?.changes.map(\.path) ?? []
    }
}
