import HearthStorage
import NIOCore
import Synchronization

/// The owner's side of the commit push: every node subscribed to this one (`GET /.cluster/v1/push`) gets
/// each log entry this node commits, right after the commit, without waiting for the shared storage's
/// wake-up and a fetch. Best effort: the log stays the record, and a subscriber that misses entries reads
/// them from there (docs/decisions/0010-scale-out.md, "The commit push").
///
/// Each subscriber has a bounded buffer of encoded frames that its stream drains in one write per wake-up
/// (several entries committed meanwhile go out together); a subscriber whose buffer overflows is dropped,
/// and it reconnects and catches up from the log.
///
/// For example:
/// ```swift
/// let subscription = feed.subscribe()
/// feed.publish(namespace: "demo", LogEntry(sequence: 8, payload: payload))
/// let frames = subscription.take()          // the entry's frame, to write to the stream
/// ```
final class CommitFeed: Sendable {
    /// Larger entries are not pushed (their frame would hold up the stream): subscribers read them from
    /// the log when the next entry shows the gap, or when the wake-up comes.
    static let largestPushedEntry = 8 * 1024 * 1024
    /// Bytes a subscriber may have waiting before it is dropped.
    static let subscriberBufferLimit = 32 * 1024 * 1024

    private struct State {
        var subscribers: [Int: PushSubscription] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    /// Off: nothing is pushed, and followers rely on the wake-ups and polling alone (for comparison).
    let enabled: Bool

    init(enabled: Bool = true) {
        self.enabled = enabled
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }
    /// How many streams were ever opened to this node (a stream opened again is counted again).
    var subscriptionsOpened: Int { state.withLock { $0.nextID } }

    func subscribe(bufferLimit: Int = CommitFeed.subscriberBufferLimit) -> PushSubscription {
        state.withLock { state in
            let subscription = PushSubscription(id: state.nextID, bufferLimit: bufferLimit)
            state.subscribers[state.nextID] = subscription
            state.nextID += 1
            return subscription
        }
    }

    func remove(_ subscription: PushSubscription) {
        subscription.finish()
        _ = state.withLock { $0.subscribers.removeValue(forKey: subscription.id) }
    }

    /// Sends a committed entry to every subscriber. Call only once the entry's commit has succeeded.
    func publish(namespace: String, _ entry: LogEntry) {
        guard enabled, entry.payload.utf8.count <= CommitFeed.largestPushedEntry, namespace.utf8.count <= Int(UInt16.max) else {
            return
        }
        let subscribers = state.withLock { Array($0.subscribers.values) }
        guard !subscribers.isEmpty else { return }
        let frame = PushFrame.entry(namespace: namespace, entry).bytes
        for subscriber in subscribers where !subscriber.append(frame) {
            remove(subscriber)
        }
    }

    /// Ends every stream (shutdown).
    func finishAll() {
        let all = state.withLock { state in
            let all = Array(state.subscribers.values)
            state.subscribers = [:]
            return all
        }
        for subscription in all { subscription.finish() }
    }
}

/// One subscriber's stream: encoded frames waiting to be written, and the wake-ups of the task writing
/// them.
final class PushSubscription: Sendable {
    private struct State {
        var pending = ByteBuffer()
        var finished = false
    }

    let id: Int
    let bufferLimit: Int
    private let state = Mutex(State())
    /// One pending wake-up is enough: the writer takes everything queued each time it wakes.
    let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(id: Int, bufferLimit: Int) {
        self.id = id
        self.bufferLimit = bufferLimit
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues a frame. Returns false when the subscriber cannot keep up (its buffer would pass the
    /// limit), or its stream ended: it must be dropped.
    func append(_ frame: ByteBuffer) -> Bool {
        let accepted = state.withLock { state in
            guard !state.finished, state.pending.readableBytes + frame.readableBytes <= bufferLimit else { return false }
            var frame = frame
            state.pending.writeBuffer(&frame)
            return true
        }
        if accepted { wake.yield() }
        return accepted
    }

    /// Everything queued, as one buffer (empty when nothing is); nil once the stream has ended.
    func take() -> ByteBuffer? {
        state.withLock { state in
            guard !state.finished else { return nil }
            let taken = state.pending
            state.pending = ByteBuffer()
            return taken
        }
    }

    /// Wakes the writer without data (its heartbeat timer).
    func nudge() {
        wake.yield()
    }

    /// Ends the stream: the writer stops at its next wake-up.
    func finish() {
        state.withLock { $0.finished = true }
        wake.yield()
        wake.finish()
    }
}
