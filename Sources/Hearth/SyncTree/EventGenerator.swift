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

    static func changes(from old: ViewSnapshot, to new: ViewSnapshot, index: QueryIndex, valueRaised: Bool) -> [Change] {
        var oldByKey: [Key: Node] = [:]
        for child in old.children { oldByKey[child.key] = child.node }
        var newKeys: Set<Key> = []
        for child in new.children { newKeys.insert(child.key) }

        var removed: [Change] = []
        for child in old.children where !newKeys.contains(child.key) {
            removed.append(Change(type: .childRemoved, key: child.key, node: child.node, previousKey: nil))
        }
        // Children whose ordered value changed are reported as moved, after the added ones.
        var movedKeys: Set<Key> = []
        if index != .key {
            for child in new.children {
                if let before = oldByKey[child.key], before != child.node,
                   Node.compareValues(index.sortValue(of: before), index.sortValue(of: child.node)) != 0 {
                    movedKeys.insert(child.key)
                }
            }
        }
        var added: [Change] = []
        var moved: [Change] = []
        var changed: [Change] = []
        for (position, child) in new.children.enumerated() {
            let previous = position > 0 ? new.children[position - 1].key.string : nil
            guard let before = oldByKey[child.key] else {
                // An added child's previous sibling is the nearest one already in place: a child still
                // to be moved is not, so applying the events in order always rebuilds the view.
                var anchor = position - 1
                while anchor >= 0, movedKeys.contains(new.children[anchor].key) { anchor -= 1 }
                added.append(Change(type: .childAdded, key: child.key, node: child.node, previousKey: anchor >= 0 ? new.children[anchor].key.string : nil))
                continue
            }
            guard before != child.node else { continue }
            if movedKeys.contains(child.key) {
                moved.append(Change(type: .childMoved, key: child.key, node: child.node, previousKey: previous))
            }
            changed.append(Change(type: .childChanged, key: child.key, node: child.node, previousKey: previous))
        }
        var result = removed + added + moved + changed
        // A view that was complete, lost its listen's acknowledgement (a parent listen came or went)
        // and regained it with the same data raises no second value.
        if new.complete && (!valueRaised || old.node != new.node) {
            result.append(Change(type: .value, key: nil, node: new.node, previousKey: nil))
        }
        return result
    }
}
