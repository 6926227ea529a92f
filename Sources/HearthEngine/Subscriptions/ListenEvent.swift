import HashTreeCollections
import HearthCore

/// What a listener of one ``ListenKey`` is told about one change, before any transport encodes it.
/// Computed once per key and shared by every listener of it (SSE streams and WebSocket listens alike).
enum ListenEvent {
    /// The data at a path relative to the listened location is now exactly this node.
    case put(DatabasePath, Node)
    /// Each relative path (keys may contain `/`) under a relative location now holds its node.
    case patch(DatabasePath, [(key: String, value: Node)])
    /// A query's window changed: children that left (as empty nodes), entered or changed.
    case window([(key: Key, node: Node)])

    /// The events for `key` caused by `change`: the minimal changed path for whole locations, the window
    /// difference for queries and shallow reads. Pure.
    static func events(for key: ListenKey, change: Change) -> [ListenEvent] {
        let listened = key.path
        let written = change.path
        let inside = listened.contains(written)
        let above = written.contains(listened) && !inside
        guard inside || above else { return [] }
        if key.isPlain {
            // What a write put at a path is the value there afterwards (`Change.written`), so it is sent as
            // it is: looking it up again in the new tree walked a large map once per listener and write.
            if inside {
                let relative = listened.relativePath(to: written)!
                switch change.written {
                case .node(let node):
                    return [.put(relative, node)]
                case .update(let items):
                    let data = items.map { item in (key: item.path.keys.map(\.string).joined(separator: "/"), value: item.node) }
                    return [.patch(relative, data)]
                }
            }
            // A write above the listened location: an update whose items all fall strictly inside it is a
            // patch; anything else replaces the location if it changed.
            if case .update(let items) = change.written {
                var data: [(key: String, value: Node)] = []
                for item in items {
                    let target = written.appending(item.path)
                    if target.contains(listened) {
                        data = []
                        break
                    }
                    if let relative = listened.relativePath(to: target) {
                        data.append((relative.keys.map(\.string).joined(separator: "/"), item.node))
                    }
                }
                if !data.isEmpty { return [.patch(.root, data)] }
            }
            let before = change.before.child(at: listened)
            let after = change.after.child(at: listened)
            return before == after ? [] : [.put(.root, after)]
        }
        // Queries and shallow streams: diff the view. Children that leave are sent as null.
        let before = key.view(of: change.before)
        let after = key.view(of: change.after)
        if before == after { return [] }
        guard case .children(let old) = before, case .children(let new) = after, !old.entries.isEmpty, !new.entries.isEmpty
        else {
            return [.put(.root, after)]
        }
        var items: [(key: Key, node: Node)] = []
        for (childKey, _) in old.entries where new.entries[childKey] == nil {
            items.append((childKey, .empty))
        }
        for (childKey, node) in new.entries where old.entries[childKey] != node {
            items.append((childKey, node))
        }
        return [.window(items)]
    }
}
