import HearthAccess
import HearthCore
import HearthProtocol
import NIOCore
import Synchronization

/// A connection that listens through a ``RealtimeHub``: the realtime transports (WebSocket and long
/// polling sessions) implement it, so the engine pushes to them without knowing them.
package protocol RealtimeListener: AnyObject, Sendable {
    /// Who the connection acts as, for the rules check after a rules change.
    var identity: Identity { get }
    /// Queues an encoded push on the connection; must not block (it runs under the hub's lock).
    func send(_ buffer: ByteBuffer)
    /// Ends a listen the connection may no longer read (`permission_denied` to the client).
    func revoke(_ key: ListenKey, tag: Int?)
}

/// The WebSocket listens of one database, grouped by path and query.
///
/// Each change is turned into pushes once per group, and each push is encoded once per tag: connections
/// listening to the same path and query (and, usually, the same tag, since every client counts tags from
/// 1) share one buffer.
package final class RealtimeHub: Sendable {
    struct Member: Hashable {
        var connection: ObjectIdentifier
        var tag: Int?
    }

    struct Group {
        var members: [Member: any RealtimeListener] = [:]
    }

    private let groups = Mutex<[ListenKey: Group]>([:])

    /// Registers a listen. `initial` gets the current view under the hub's lock, so no change is missed
    /// or delivered twice.
    package func listen(_ key: ListenKey, session: any RealtimeListener, tag: Int?, snapshot: () -> Node, initial: (Node) -> Void) {
        groups.withLock { groups in
            initial(RealtimeHub.view(of: key, tagged: tag != nil, root: snapshot()))
            groups[key, default: Group()].members[Member(connection: ObjectIdentifier(session), tag: tag)] = session
        }
    }

    package func unlisten(_ key: ListenKey, session: any RealtimeListener, tag: Int?) {
        groups.withLock { groups in
            groups[key]?.members.removeValue(forKey: Member(connection: ObjectIdentifier(session), tag: tag))
            if groups[key]?.members.isEmpty == true { groups.removeValue(forKey: key) }
        }
    }

    package var listenCount: Int { groups.withLock { $0.values.reduce(0) { $0 + $1.members.count } } }

    /// Distinct (path, query) groups: listens that share one are computed and encoded once.
    var groupCount: Int { groups.withLock { $0.count } }

    /// What a listen sees: the subtree for a default listen; for a query, its window without the
    /// location's own priority (clients drop it too).
    static func view(of key: ListenKey, tagged: Bool, root: Node) -> Node {
        let view = key.view(of: root)
        return tagged ? view.withPriority(nil) : view
    }

    /// Makes a batch of changes visible (`commit`) and queues their pushes, under the lock.
    func publish(_ changes: [Change], commit: () -> Void) {
        groups.withLock { groups in
            commit()
            for (key, group) in groups {
                for change in changes {
                    for push in RealtimeHub.pushes(for: key, change: change) {
                        var encoded: [Int?: ByteBuffer] = [:]
                        for (member, session) in group.members {
                            let buffer: ByteBuffer
                            if let cached = encoded[member.tag] {
                                buffer = cached
                            } else {
                                buffer = ByteBuffer(bytes: push.encoded(tag: member.tag))
                                encoded[member.tag] = buffer
                            }
                            session.send(buffer)
                        }
                    }
                }
            }
        }
    }

    /// Revokes the listens whose connection may no longer read them (after a rules change).
    func recheck(_ canRead: (DatabasePath, Query, Identity) -> Bool) {
        var revoked: [(any RealtimeListener, ListenKey, Int?)] = []
        groups.withLock { groups in
            for (key, group) in groups {
                for (member, session) in group.members where !canRead(key.path, key.query, session.identity) {
                    revoked.append((session, key, member.tag))
                }
            }
        }
        for (session, key, tag) in revoked { session.revoke(key, tag: tag) }
    }

    /// The wire pushes for one change, without tags. Paths are absolute.
    static func pushes(for key: ListenKey, change: Change) -> [ServerMessage.Push] {
        let tagged = !key.query.isDefault
        return ListenEvent.events(for: key, change: change).map { event in
            switch event {
            case .put(let relative, let node):
                let data = tagged && relative.isRoot ? node.withPriority(nil) : node
                return .overwrite(path: key.path.appending(relative), data: data)
            case .patch(let relative, let items):
                return .merge(path: key.path.appending(relative), items: items.map { ($0.key, $0.value) })
            case .window(let items):
                return .merge(path: key.path, items: items.map { ($0.key.string, $0.node) })
            }
        }
    }
}
