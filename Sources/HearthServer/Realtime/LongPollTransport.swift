import DequeModule
import Foundation
import HearthAccess
import HearthCore
import HearthProtocol
import NIOCore
import NIOPosix
import NIOWebSocket
import Synchronization

/// Long polling: the transport Firebase's web SDK uses when it cannot (or, after a failed WebSocket,
/// will not) open a WebSocket — `BrowserPollConnection`, JSONP through script tags in a hidden iframe.
///
/// The client sends its messages as base64 segments in the query of its polls (`seg<i>`, `ts<i>`,
/// `d<i>`: segment number, segments in the message, data); they are put back together in segment order
/// whatever order the polls arrive in. The server answers each poll with a script calling the page's
/// callbacks: `pRTLPCB<cb>(n, [messages…])` with responses numbered from 0 (the client processes them
/// in that order), and `pLPCommand<cb>("start", id, pw)` / `("close", last)` for the connection. A poll
/// is held until there is something to send or ``holdDuration`` passes; a second poll releases the one
/// held before it, so the client always has one poll waiting and one free to carry its data. A poll
/// released with nothing to say gets an empty script, which takes no number.
///
/// The session on top is the same ``RealtimeSession`` a WebSocket has.
final class LongPollTransport: RealtimeTransport {
    struct Segment {
        var total: Int
        var data: Substring
    }

    /// A held poll, and the timer that answers it after ``holdDuration``.
    struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<String, Never>
        var timer: Task<Void, Never>?
    }

    struct State {
        var outbox: [ByteBuffer] = []
        var outboxBytes = 0
        /// The largest message waiting: the limit is on what waits beyond it.
        var outboxLargest = 0
        var waiting: Deque<Waiter> = []
        var nextPoll: UInt64 = 0
        var segmentBytes = 0
        var polls = 0
        var nextResponse = 0
        var closed = false
        var segments: [Int: Segment] = [:]
        var nextSegment = 0
        var session: RealtimeSession?
    }

    /// The page's callback suffix (digits only: it is written into the scripts).
    let callback: String
    let password: String
    let outboundLimit: Int
    let clock: ServerClock
    /// Runs once, when the connection closes.
    let onClosed: @Sendable () -> Void
    private let state = Mutex(State())

    /// How long a poll waits for something to send: under the client's 25 s keep-alive.
    static let holdDuration: Duration = .seconds(20)
    /// How far past the next expected segment one may be numbered.
    static let segmentLookahead = 10_000
    /// Base64 bytes waiting to become messages: a message's limit, in base64.
    let maximumSegmentBytes: Int

    init(callback: String, outboundLimit: Int, maximumMessageBytes: Int, clock: ServerClock, onClosed: @escaping @Sendable () -> Void = {}) {
        self.callback = callback
        self.onClosed = onClosed
        self.maximumSegmentBytes = maximumMessageBytes / 3 * 4 + 4
        self.password = RealtimeSession.makeID()
        self.outboundLimit = outboundLimit
        self.clock = clock
    }

    func attach(_ session: RealtimeSession) {
        state.withLock { $0.session = session }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    // MARK: RealtimeTransport

    /// One event loop per connection runs its flushes one after another, as a WebSocket's does: two
    /// threads sending at once must not reorder messages (events go before the write's `ok`).
    let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()

    func execute(_ body: @escaping @Sendable () -> Void) {
        eventLoop.execute(body)
    }

    var isWritable: Bool { true }

    func write(_ messages: [ByteBuffer]) {
        let (overflow, resume) = state.withLock { state -> (Bool, (CheckedContinuation<String, Never>, String)?) in
            guard !state.closed else { return (false, nil) }
            state.outbox.append(contentsOf: messages)
            state.outboxBytes += messages.reduce(0) { $0 + $1.readableBytes }
            state.outboxLargest = max(state.outboxLargest, messages.lazy.map(\.readableBytes).max() ?? 0)
            // As a WebSocket's: a single message may be larger than the limit; what waits beyond it may not.
            if state.outboxBytes - state.outboxLargest > outboundLimit { return (true, nil) }
            guard let waiter = state.waiting.popFirst() else { return (false, nil) }
            waiter.timer?.cancel()
            return (false, (waiter.continuation, takeResponse(&state)))
        }
        if overflow {
            abort()
        } else if let (waiter, script) = resume {
            waiter.resume(returning: script)
        }
    }

    func close(code: WebSocketErrorCode) {
        let (waiting, script, session) = state.withLock { state -> ([CheckedContinuation<String, Never>], String, RealtimeSession?) in
            guard !state.closed else { return ([], "", nil) }
            state.closed = true
            let waiting = state.waiting.map(\.continuation)
            for waiter in state.waiting { waiter.timer?.cancel() }
            state.waiting = []
            // Data sent before the close still goes, in its numbered response.
            var script = state.outbox.isEmpty ? "" : takeResponse(&state)
            script += "parent.pLPCommand\(callback)(\"close\",\(max(0, state.nextResponse - 1)));"
            let session = state.session
            state.session = nil
            return (waiting, script, session)
        }
        guard !script.isEmpty else { return }  // closed before
        for (index, waiter) in waiting.enumerated() { waiter.resume(returning: index == 0 ? script : "") }
        onClosed()
        session?.closed()
    }

    func abort() {
        close(code: .goingAway)
    }

    /// A long-polling client shows it is there by polling.
    func ping() {}

    /// Nothing to stop: a poll bringing messages waits in ``poll(segments:)`` instead, while the
    /// session is paused.
    func refreshReading(isPaused: @escaping @Sendable () -> Bool) {}

    // MARK: Polls

    /// The first answer: the connection's id and password, then response 0 (the handshake).
    func startScript(id: String) -> String {
        state.withLock { state in
            "parent.pLPCommand\(callback)(\"start\",\"\(id)\",\"\(password)\");" + takeResponse(&state)
        }
    }

    /// Takes the client's segments, hands each complete message to the session, then waits for
    /// something to send (or ``holdDuration``) and answers with it. Nil when the connection is closed.
    ///
    /// This poll becomes the held one (releasing the one before, empty) before its messages reach the
    /// session, so their replies come on it: handing them over first let a fast reply land on the poll
    /// about to be released, and leave this one held with nothing coming.
    func poll(segments: [(number: Int, total: Int, data: Substring)]) async throws(LongPollError) -> String? {
        // Backpressure: while the session has too many requests queued or in flight, a poll bringing more
        // waits (and with it the client, whose next poll it holds back) until it has room again.
        if !segments.isEmpty, let session = state.withLock({ $0.session }) { await session.whileReadingPaused() }
        let received = try accept(segments)
        let session = state.withLock { state in
            state.polls += 1
            return state.session
        }
        guard let session else { return nil }
        session.touch()
        var messages: [(message: ClientMessage, bytes: Int)] = []
        for message in received {
            guard let parsed = try? ClientMessage(parsing: message) else {
                throw LongPollError("a message is not valid JSON of the protocol")
            }
            messages.append((parsed, message.utf8.count))
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            let (now, released): (String?, CheckedContinuation<String, Never>?) = state.withLock { state in
                if state.closed { return ("", nil) }
                if !state.outbox.isEmpty { return (takeResponse(&state), nil) }
                // One held poll at a time: the one before answers now, empty, and this one waits.
                let earlier = state.waiting.popFirst()
                earlier?.timer?.cancel()
                state.nextPoll += 1
                let id = state.nextPoll
                // The deadline is fixed now, not when the task gets to run.
                let deadline = clock.elapsed + LongPollTransport.holdDuration
                let timer = Task { [clock] in
                    guard (try? await clock.sleep(untilElapsed: deadline)) != nil else { return }
                    self.releaseIfWaiting(id)
                }
                state.waiting.append(Waiter(id: id, continuation: continuation, timer: timer))
                return (nil, earlier?.continuation)
            }
            // Empty, as the lock found the outbox: anything queued since goes to the poll held now.
            released?.resume(returning: "")
            for (message, bytes) in messages {
                switch message {
                case .ping: session.send(ServerMessage.pong)
                case .control: break  // `n` (end of transmission) and the like: nothing to do without an upgrade
                case .request(let request): session.enqueue(.request(request, bytes: bytes))
                }
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// How many polls are held now, and how many have arrived (tests wait on them instead of sleeping).
    var heldPolls: Int { state.withLock { $0.waiting.count } }
    var receivedPolls: Int { state.withLock { $0.polls } }

    /// Answers a poll still held after its time, with whatever there is (usually nothing).
    private func releaseIfWaiting(_ id: UInt64) {
        let released: (CheckedContinuation<String, Never>, String)? = state.withLock { state in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = state.waiting.remove(at: index)
            return (waiter.continuation, takeResponse(&state))
        }
        if let (continuation, script) = released { continuation.resume(returning: script) }
    }

    /// Everything queued, as the next numbered response; nothing queued is an empty script that uses
    /// no number (so a poll answered to a client that has gone away loses nothing).
    private func takeResponse(_ state: inout State) -> String {
        guard !state.outbox.isEmpty else { return "" }
        var script = "parent.pRTLPCB\(callback)(\(state.nextResponse),["
        for (index, message) in state.outbox.enumerated() {
            if index > 0 { script += "," }
            script += String(buffer: message)
        }
        script += "]);"
        state.nextResponse += 1
        state.outbox = []
        state.outboxBytes = 0
        state.outboxLargest = 0
        return script
    }

    /// Stores segments and returns the messages now complete, in segment order.
    private func accept(_ incoming: [(number: Int, total: Int, data: Substring)]) throws(LongPollError) -> [String] {
        try state.withLock { state throws(LongPollError) -> [String] in
            for segment in incoming {
                guard segment.number >= state.nextSegment, segment.total >= 1 else { continue }
                // A client keeps at most two polls in flight: segments far ahead of the next one expected,
                // or more bytes waiting than a message may have, are not a client's.
                guard segment.number - state.nextSegment < LongPollTransport.segmentLookahead else {
                    throw LongPollError("a segment far ahead of the next one expected")
                }
                // Nor is a message of more segments than could ever be waiting at once (and a total near
                // Int.max would overflow the range of its segments below).
                guard segment.total <= LongPollTransport.segmentLookahead else {
                    throw LongPollError("a message of more segments than may wait at once")
                }
                if let previous = state.segments[segment.number] { state.segmentBytes -= previous.data.utf8.count }
                // A copy, so a segment does not keep its whole request's query alive.
                state.segments[segment.number] = Segment(total: segment.total, data: Substring(String(segment.data)))
                state.segmentBytes += segment.data.utf8.count
            }
            guard state.segmentBytes <= maximumSegmentBytes else { throw LongPollError("more data waiting than a message may hold") }
            var messages: [String] = []
            while let first = state.segments[state.nextSegment] {
                let range = state.nextSegment..<(state.nextSegment + first.total)
                guard range.allSatisfy({ state.segments[$0] != nil }) else { break }
                let encoded = range.map { state.segments[$0]!.data }.joined()
                for number in range {
                    if let removed = state.segments.removeValue(forKey: number) { state.segmentBytes -= removed.data.utf8.count }
                }
                state.nextSegment = range.upperBound
                guard let bytes = LongPollTransport.decodeWebSafeBase64(encoded) else { throw LongPollError("a segment is not base64") }
                messages.append(String(decoding: bytes, as: UTF8.self))
            }
            return messages
        }
    }

    /// The web SDK's base64 (`@firebase/util` `base64Encode`): `-` and `_` for `+` and `/`, `.` for padding.
    static func decodeWebSafeBase64(_ text: String) -> Data? {
        var standard = String(text.map { character -> Character in
            switch character {
            case "-": "+"
            case "_": "/"
            case ".": "="
            default: character
            }
        })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard)
    }
}

/// A long poll that breaks the protocol: the connection is closed.
struct LongPollError: HearthError {
    var message: String
    init(_ message: String) { self.message = message }
}
