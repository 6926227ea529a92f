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
    /// In the order made; the server confirms them in that order, so the one removed is almost always first.
    private(set) var records: Deque<WriteRecord> = []

    mutating func add(_ record: WriteRecord) {
        records.append(record)
    }

    /// Removes a write; returns it.
    @discardableResult
    mutating func remove(id: Int) -> WriteRecord? {
        guard let index = records.firstIndex(where: { $0.id == id }) else { return nil }
        return records.remove(at: index)
    }

    var isEmpty: Bool { records.isEmpty }

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
                if change.path.contains(path) {
                    node = change.node.child(at: path.keys[change.path.count...])
                    covered = true
                } else if path.contains(change.path) {
                    let relative = change.path.keys[path.count...]
                    if skipUnknownChildren, relative.count > 1, node.child(relative.first!).isEmpty { continue }
                    node = node.setting(change.node, at: relative)
                }
            }
        }
        return (node, covered)
    }

    /// The paths a write touches, for finding the views to update.
    func paths(of id: Int) -> [DatabasePath] {
        records.first { $0.id == id }?.changes.map(\.path) ?? []
    }
}
