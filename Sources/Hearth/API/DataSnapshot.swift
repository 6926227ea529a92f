import Foundation
import HashTreeCollections
import HearthCore
import Synchronization

/// The data at a location at one moment, as observers and reads deliver it (FirebaseDatabase's
/// `DataSnapshot`). Immutable and `Sendable`.
///
/// For example:
/// ```swift
/// ref.observe(.value) { snapshot in
///     for child in snapshot.children { print(child.key, child.value ?? "") }
/// }
/// ```
public final class DataSnapshot: Sendable, CustomStringConvertible {
    /// The location this snapshot was read from.
    public let ref: DatabaseReference
    let node: Node
    /// The order of ``children`` (the query's).
    let index: QueryIndex

    init(reference: DatabaseReference, node: Node, index: QueryIndex) {
        self.ref = reference
        self.node = node
        self.index = index
    }

    /// The data as Foundation values: `String`, `NSNumber` (numbers and booleans), `[String: Any]`,
    /// `[Any]` (keys 0…n), or nil when there is none.
    public var value: Any? { FoundationValue.value(of: node) }

    /// The last segment of the location (FirebaseDatabase declares it non-optional; the root's is "").
    public var key: String { ref.key ?? "" }

    /// The priority: a `String`, an `NSNumber`, or nil.
    public var priority: Any? { node.priority.map(FoundationValue.priorityValue) }

    /// Whether there is data here.
    public func exists() -> Bool { !node.isEmpty }

    /// The snapshot of a path below (empty when nothing is there).
    public func childSnapshot(forPath path: String) -> DataSnapshot {
        let relative = Database.parsePath(path)
        return DataSnapshot(reference: DatabaseReference(database: ref.database, path: ref.path.appending(relative)), node: node.child(at: relative), index: .key)
    }

    /// Whether there is data at a path below (`"a/b"` works).
    public func hasChild(_ path: String) -> Bool { !node.child(at: Database.parsePath(path)).isEmpty }

    /// Whether this is an object with at least one child.
    public func hasChildren() -> Bool { node.childCount > 0 }

    /// The number of direct children.
    public var childrenCount: UInt { UInt(node.childCount) }

    /// The children, in the query's order.
    public var children: DataSnapshotChildren {
        let ordered = Query(index: index).window(over: node)
        return DataSnapshotChildren(allObjects: ordered.map {
            DataSnapshot(reference: DatabaseReference(database: ref.database, path: ref.path.child($0.key)), node: $0.node, index: .key)
        })
    }

    /// The value with priorities included (`.value` / `.priority`), as Firebase exports it.
    public func valueInExportFormat() -> Any? { FoundationValue.exportValue(of: node) }

    public var description: String { "\(ref.key ?? "/") \(node.jsonString())" }
}

/// The children of a snapshot, in order. Iterate it, call ``nextObject()`` as on Firebase's
/// `NSEnumerator`, or take ``allObjects``.
///
/// ```swift
/// let enumerator = snapshot.children
/// while let child = enumerator.nextObject() { print(child.key) }
/// ```
public final class DataSnapshotChildren: Sequence, Sendable {
    /// Every child, in order.
    public let allObjects: [DataSnapshot]
    private let position = Mutex(0)

    init(allObjects: [DataSnapshot]) {
        self.allObjects = allObjects
    }

    /// The next child not yet taken with this method, or nil at the end.
    public func nextObject() -> DataSnapshot? {
        position.withLock { position in
            guard position < allObjects.count else { return nil }
            defer { position += 1 }
            return allObjects[position]
        }
    }

    /// Iterates over all children, from the first.
    public func makeIterator() -> IndexingIterator<[DataSnapshot]> {
        allObjects.makeIterator()
    }
}
