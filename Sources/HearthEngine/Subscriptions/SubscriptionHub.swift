import Foundation
import HashTreeCollections
import HearthAccess
public import HearthCore
import HearthProtocol
public import NIOCore
import Synchronization

/// What a stream listens to. Streams with equal keys share the work of computing and encoding events.
public struct ListenKey: Sendable, Hashable {
    public var path: DatabasePath
    public var query: Query
    public var format: RenderFormat
    public var shallow: Bool

    /// A query's result and a shallow view render as objects (`format` ``RenderFormat/objects``), as the
    /// same request's GET answers.
    public init(path: DatabasePath, query: Query = .all, format: RenderFormat = .normal, shallow: Bool = false) {
        self.path = path
        self.query = query
        self.format = format == .normal && (!query.isDefault || shallow) ? .objects : format
        self.shallow = shallow
    }

    var isPlain: Bool { query.isDefault && query.index == .key && !shallow }

    /// The data a listener of this key sees at `root`.
    func view(of root: Node) -> Node {
        let node = root.child(at: path)
        if shallow { return query.isDefault ? node.shallow() : query.evaluate(on: node).shallow() }
        return query.evaluate(on: node)
    }
}

/// The listeners of one database, grouped by ``ListenKey``, each with a bounded outbound buffer.
///
/// A listener whose buffer is full is cut off (its stream finishes) rather than growing memory: the
/// client reconnects and gets a fresh snapshot.
public final class SubscriptionHub: Sendable {
    struct Listener {
        var identity: Identity
        var continuation: AsyncStream<ByteBuffer>.Continuation
        /// The console session the stream was opened with, if any (it ends at sign-out).
        var consoleSession: Data? = nil
    }

    struct Group {
        var listeners: [UInt64: Listener] = [:]
    }

    struct State {
        var groups: [ListenKey: Group] = [:]
        var nextID: UInt64 = 0
        var count = 0
        var broadcasts = 0
    }

    private let state = Mutex(State())
    /// Events a listener may have queued before it counts as too slow.
    let bufferLimit: Int

    init(bufferLimit: Int) {
        self.bufferLimit = bufferLimit
    }

    /// A registered listener: its events, starting with the initial `put "/"`.
    public struct Subscription: Sendable {
        public var id: UInt64
        public var key: ListenKey
        public var events: AsyncStream<ByteBuffer>
    }

    public var listenerCount: Int { state.withLock { $0.count } }

    /// Broadcasts (keep-alives) sent so far: tests wait for one after advancing the clock.
    var broadcastCount: Int { state.withLock { $0.broadcasts } }

    /// Registers a listener. The initial snapshot is read under the hub's lock, so no change is missed
    /// or delivered twice.
    /// Registers a listener and queues its first event, the data at `key` in `snapshot()`. With
    /// `canRead`, the read rules are checked on that same tree, under the lock publishes and rule
    /// rechecks take too: a rules change either comes after and rechecks this listener, or comes before
    /// and this check sees it. Nil when `canRead` refuses.
    package func subscribe(
        _ key: ListenKey, identity: Identity, consoleSession: Data? = nil, snapshot: () -> Node, canRead: ((Node) -> Bool)? = nil
    ) -> Subscription? {
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingOldest(bufferLimit))
        let id: UInt64? = state.withLock { state in
            let root = snapshot()
            if let canRead, !canRead(root) { return nil }
            state.nextID += 1
            let id = state.nextID
            let initial = ServerSentEvent.put(path: .root, data: key.view(of: root), format: key.format)
            continuation.yield(ByteBuffer(bytes: initial.encoded()))
            state.groups[key, default: Group()].listeners[id] = Listener(
                identity: identity, continuation: continuation, consoleSession: consoleSession
            )
            state.count += 1
            return id
        }
        guard let id else {
            continuation.finish()
            return nil
        }
        continuation.onTermination = { [weak self] _ in self?.remove(id, key) }
        return Subscription(id: id, key: key, events: stream)
    }

    /// Ends one listener's stream, after a last event if given (`auth_revoked` when its token expires).
    package func finish(_ subscription: Subscription, with last: ServerSentEvent? = nil) {
        let continuation = state.withLock { $0.groups[subscription.key]?.listeners[subscription.id]?.continuation }
        if let last { continuation?.yield(ByteBuffer(bytes: last.encoded())) }
        continuation?.finish()
    }

    func remove(_ id: UInt64, _ key: ListenKey) {
        state.withLock { state in
            guard state.groups[key]?.listeners.removeValue(forKey: id) != nil else { return }
            state.count -= 1
            if state.groups[key]?.listeners.isEmpty == true { state.groups.removeValue(forKey: key) }
        }
    }

    /// Publishes a batch of changes: `commit` runs under the lock (it makes the new tree visible and
    /// acknowledges the writes), then each group's events are computed and encoded once and queued to
    /// its listeners, in commit order.
    func publish(_ changes: [Change], commit: () -> Void) {
        var cutOff: [AsyncStream<ByteBuffer>.Continuation] = []
        state.withLock { state in
            commit()
            for (key, group) in state.groups {
                for change in changes {
                    for event in SubscriptionHub.events(for: key, change: change) {
                        let buffer = ByteBuffer(bytes: event.encoded())
                        for listener in group.listeners.values {
                            if case .dropped = listener.continuation.yield(buffer) { cutOff.append(listener.continuation) }
                        }
                    }
                }
            }
        }
        // Finishing calls onTermination, which takes the lock: do it outside.
        for continuation in cutOff { continuation.finish() }
    }

    /// Sends an event to every listener (keep-alive).
    package func broadcast(_ event: ServerSentEvent) {
        let buffer = ByteBuffer(bytes: event.encoded())
        var cutOff: [AsyncStream<ByteBuffer>.Continuation] = []
        state.withLock { state in
            state.broadcasts += 1
            for group in state.groups.values {
                for listener in group.listeners.values {
                    if case .dropped = listener.continuation.yield(buffer) { cutOff.append(listener.continuation) }
                }
            }
        }
        for continuation in cutOff { continuation.finish() }
    }

    /// Cancels the streams whose identity may no longer read their location (after a rules change).
    func recheck(_ canRead: (DatabasePath, Query, Identity) -> Bool) {
        let cancel = ByteBuffer(bytes: ServerSentEvent.cancel.encoded())
        var cancelled: [AsyncStream<ByteBuffer>.Continuation] = []
        state.withLock { state in
            for (key, group) in state.groups {
                for listener in group.listeners.values where !canRead(key.path, key.query, listener.identity) {
                    listener.continuation.yield(cancel)
                    cancelled.append(listener.continuation)
                }
            }
        }
        for continuation in cancelled { continuation.finish() }
    }

    /// Ends with `auth_revoked` the streams whose identity `isRevoked` says lost its tokens (its user's
    /// tokens revoked, or the user disabled or deleted): a stream cannot sign in again, so at once.
    package func revoke(where isRevoked: (Identity) -> Bool) {
        revokeListeners { isRevoked($0.identity) }
    }

    /// Ends the streams opened with a console session, signed out (`auth_revoked`).
    package func revoke(consoleSession: Data) {
        revokeListeners { $0.consoleSession == consoleSession }
    }

    private func revokeListeners(where isRevoked: (Listener) -> Bool) {
        let event = ByteBuffer(bytes: ServerSentEvent.authRevoked.encoded())
        var ended: [AsyncStream<ByteBuffer>.Continuation] = []
        state.withLock { state in
            for group in state.groups.values {
                for listener in group.listeners.values where isRevoked(listener) {
                    listener.continuation.yield(event)
                    ended.append(listener.continuation)
                }
            }
        }
        for continuation in ended { continuation.finish() }
    }

    /// Ends every stream (server shutdown).
    func finishAll() {
        let all = state.withLock { state in state.groups.values.flatMap { $0.listeners.values.map(\.continuation) } }
        for continuation in all { continuation.finish() }
    }

    /// The SSE events a listener of `key` gets for one change. Window changes become one `put` per child.
    static func events(for key: ListenKey, change: Change) -> [ServerSentEvent] {
        ListenEvent.events(for: key, change: change).flatMap { event -> [ServerSentEvent] in
            switch event {
            case .put(let path, let node): return [.put(path: path, data: node, format: key.format)]
            case .patch(let path, var items):
                // Only `format=export` streams carry priorities: an update's `a/.priority` changes nothing
                // a plain stream shows (as a PUT to `a/.priority.json` sends it `a` without one).
                if key.format != .export { items.removeAll { $0.key == ".priority" || $0.key.hasSuffix("/.priority") } }
                return items.isEmpty ? [] : [.patch(path: path, data: items, format: key.format)]
            case .window(let items): return items.map { .put(path: DatabasePath(keys: [$0.key]), data: $0.node, format: key.format) }
            }
        }
    }
}
