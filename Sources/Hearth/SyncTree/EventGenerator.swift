import HashTreeCollections
import HearthCore

/// What a view shows at one moment: its data (the query's window for filtered views), the children in
/// the query's order, and whether the data is complete enough to raise `value`.
struct ViewSnapshot: Sendable {
    var node: Node
    var children: [(key: Key, node: Node)]
    var complete: Bool

    static let empty = ViewSnapshot(node: .empty, children: [], complete: false)
}

/// One event for one registration, ready to be delivered.
struct RaisedEvent: Sendable {
    var registration: UInt
    var type: DataEventType
    /// The snapshot's location and data; for child events, the child's.
    var path: DatabasePath
    var node: Node
    /// The order of the snapshot's children (the query's index).
    var index: QueryIndex
    var previousKey: String?
}

/// Turns the difference between two view snapshots into events, in Firebase's order: child_removed,
/// child_added, child_moved, child_changed (each in the query's order), then value.
///
/// Previous-sibling keys are chosen so that a list updated by applying the events one by one (remove,
/// insert after the previous sibling, move after it) always equals the view; the official SDKs can
/// name a sibling that has not moved into place yet when one operation adds and moves children.
///
/// For example:
/// ```swift
/// let changes = EventGenerator.changes(from: old, to: new, index: .key)
/// // [(.childRemoved, "a", nil), (.childAdded, "c", "b"), …]
/// ```
enum EventGenerator {
    struct Change: Sendable, Equatable {
        var type: DataEventType
        /// The child's key (nil for value).
        var key: Key?
        var node: Node
        var previousKey: String?
    }

    /// A child of the new snapshot that may have changed: its position there and its old data.
    struct Candidate: Sendable {
        var position: Int
        var key: Key
        var node: Node
        /// The child's data in the old snapshot (nil when it is new).
        var before: Node?
    }

    static func changes(from old: ViewSnapshot, to new: ViewSnapshot, index: QueryIndex, valueRaised: Bool) -> [Change] {
        var oldByKey: [Key: Node] = [:]
        for child in old.children { oldByKey[child.key] = child.node }
        var newKeys: Set<Key> = []
        for child in new.children { newKeys.insert(child.key) }
        let removed = old.children.filter { !newKeys.contains($0.key) }
        let candidates = new.children.enumerated().map { position, child in
            Candidate(position: position, key: child.key, node: child.node, before: oldByKey[child.key])
        }
        var result = childChanges(removed: removed, candidates: candidates, in: new.children, index: index)
        // A view that was complete, lost its listen's acknowledgement (a parent listen came or went)
        // and regained it with the same data raises no second value.
        if new.complete && (!valueRaised || old.node != new.node) {
            result.append(Change(type: .value, key: nil, node: new.node, previousKey: nil))
        }
        return result
    }

    /// The child events when only some children may differ: `removed` in the old order, `candidates`
    /// (every other child that may differ) in the new order, `children` the new ones. Costs time in
    /// the number of candidates, not the view's size, apart from the walk past moved siblings.
    static func childChanges(
        removed: [(key: Key, node: Node)], candidates: [Candidate], in children: [(key: Key, node: Node)], index: QueryIndex
    ) -> [Change] {
        let removedChanges = removed.map { Change(type: .childRemoved, key: $0.key, node: $0.node, previousKey: nil) }
        // Children whose ordered value changed are reported as moved, after the added ones.
        var movedKeys: Set<Key> = []
        if index != .key {
            for candidate in candidates {
                if let before = candidate.before, before != candidate.node,
                   Node.compareValues(index.sortValue(of: before), index.sortValue(of: candidate.node)) != 0 {
                    movedKeys.insert(candidate.key)
                }
            }
        }
        var added: [Change] = []
        var moved: [Change] = []
        var changed: [Change] = []
        for candidate in candidates {
            let position = candidate.position
            let previous = position > 0 ? children[position - 1].key.string : nil
            guard let before = candidate.before else {
                // An added child's previous sibling is the nearest one already in place: a child still
                // to be moved is not, so applying the events in order always rebuilds the view.
                var anchor = position - 1
                while anchor >= 0, movedKeys.contains(children[anchor].key) { anchor -= 1 }
                added.append(Change(type: .childAdded, key: candidate.key, node: candidate.node, previousKey: anchor >= 0 ? children[anchor].key.string : nil))
                continue
            }
            guard before != candidate.node else { continue }
            if movedKeys.contains(candidate.key) {
                moved.append(Change(type: .childMoved, key: candidate.key, node: candidate.node, previousKey: previous))
            }
            changed.append(Change(type: .childChanged, key: candidate.key, node: candidate.node, previousKey: previous))
        }
        return removedChanges + added + moved + changed
    }
}
