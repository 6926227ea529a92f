import Foundation
@testable import Hearth
import Synchronization
import Testing

/// A clock that moves only when the test says so: sleepers wake when ``advance(by:)`` passes their
/// deadline, so 30 s timeouts are tested without waiting and without races against the wall clock.
final class ManualClock: HearthClock {
    private struct Sleeper {
        var deadline: Double
        var continuation: CheckedContinuation<Void, any Error>
    }

    private let state = Mutex<(now: Double, sleepers: [UUID: Sleeper], requested: [Double])>((1_000_000, [:], []))

    func milliseconds() -> Double { state.withLock { $0.now } }

    /// Every sleep asked for, in milliseconds, in order.
    var requestedSleeps: [Double] { state.withLock { $0.requested } }
    var pendingSleepers: Int { state.withLock { $0.sleepers.count } }

    func sleep(milliseconds: Double) async throws {
        state.withLock { $0.requested.append(milliseconds) }
        guard milliseconds > 0 else { return }
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(deadline: state.now + milliseconds, continuation: continuation)
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes the sleepers whose deadline has come.
    func advance(by milliseconds: Double) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now += milliseconds
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }
}

/// A transport whose attempts, chosen per attempt, open a socket on which the server never speaks,
/// never return from connect, or receive the server's handshake at once.
final class SilentTransport: WebSocketTransport {
    /// `hangUntilCancelled` is a connect that stops only when its task is cancelled, as a real one
    /// waiting for an upgrade answer does (it then closes its socket).
    enum Behaviour: Sendable { case openSilently, hang, hangUntilCancelled, handshake }

    private let state = Mutex<(connects: Int, closes: Int, cancelled: Int, hanging: [CheckedContinuation<Void, Never>])>((0, 0, 0, []))
    let behaviour: @Sendable (_ attempt: Int) -> Behaviour

    init(behaviour: @escaping @Sendable (_ attempt: Int) -> Behaviour) {
        self.behaviour = behaviour
    }

    var connects: Int { state.withLock { $0.connects } }
    var closes: Int { state.withLock { $0.closes } }
    var cancelledConnects: Int { state.withLock { $0.cancelled } }

    /// Lets the hanging connects return (their sockets must then be closed by the client at once).
    func releaseHangingConnects() {
        for continuation in state.withLock({ state in defer { state.hanging = [] }; return state.hanging }) { continuation.resume() }
    }

    func connect(
        host: String, port: Int, secure: Bool, path: String,
        onFrame: @escaping @Sendable (String) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        let attempt = state.withLock { state in state.connects += 1; return state.connects }
        let connection = Connection(transport: self, onClose: onClose)
        switch behaviour(attempt) {
        case .openSilently:
            break
        case .hang:
            await withCheckedContinuation { continuation in state.withLock { $0.hanging.append(continuation) } }
        case .hangUntilCancelled:
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                state.withLock { $0.cancelled += 1 }
                throw error
            }
        case .handshake:
            Task { onFrame(#"{"t":"c","d":{"t":"h","d":{"ts":1000000,"v":"5","h":"local","s":"s\#(attempt)"}}}"#) }
        }
        return connection
    }

    struct Connection: WebSocketConnection {
        let transport: SilentTransport
        let onClose: @Sendable () -> Void
        func send(_ text: String) {}
        func close() {
            transport.state.withLock { $0.closes += 1 }
            onClose()
        }
    }
}

@Suite struct ConnectTimeoutTests {
    static func makeDatabase(_ transport: SilentTransport, _ clock: ManualClock) throws -> Hearth.Database {
        let database = try Hearth.Database(url: "http://silent.local:1?ns=demo", transport: transport, clock: clock)
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        return database
    }

    @Test func aSocketThatNeverSendsTheHandshakeIsClosedAfterThirtySecondsAndRetriedWithBackoff() async throws {
        let transport = SilentTransport { _ in .openSilently }
        let clock = ManualClock()
        let database = try Self.makeDatabase(transport, clock)
        database.reference(withPath: "x").observe(.value) { _ in }
        await waitUntil { transport.connects == 1 && clock.pendingSleepers == 1 }
        clock.advance(by: 29_999)
        #expect(transport.closes == 0)
        clock.advance(by: 1)
        await waitUntil { transport.closes == 1 }
        // The retry waits for a backoff delay (1 s with jitter: 0.3…1 s); a silent connection does not
        // reset the backoff, so the delay is not the immediate first attempt's 0.
        await waitUntil { clock.pendingSleepers == 1 }
        let delay = try #require(clock.requestedSleeps.last)
        #expect(delay >= 300 && delay <= 1_000)
        #expect(transport.connects == 1)
        clock.advance(by: 1_000)
        await waitUntil { transport.connects == 2 && clock.pendingSleepers == 1 }
        clock.advance(by: 30_000)
        await waitUntil { transport.closes == 2 }
        await waitUntil { clock.pendingSleepers == 1 }
        // The second retry's delay grew (1.3 s with jitter).
        let second = try #require(clock.requestedSleeps.last)
        #expect(second >= 390 && second <= 1_300)
        database.goOffline()
    }

    @Test func aConnectThatHangsIsAbandonedAndTheNextAttemptConnects() async throws {
        let transport = SilentTransport { attempt in attempt == 1 ? .hang : .handshake }
        let clock = ManualClock()
        let database = try Self.makeDatabase(transport, clock)
        let connected = Recorder()
        connected.observe(database.reference(withPath: ".info/connected"), .value)
        await waitUntil { transport.connects == 1 && clock.pendingSleepers == 1 }
        clock.advance(by: 30_000)
        // Requested so far: the first attempt's 0, its 30 s timeout, then the retry's backoff delay.
        await waitUntil { clock.pendingSleepers == 1 && clock.requestedSleeps.count >= 3 }
        clock.advance(by: 1_000)
        await waitUntil { connected.all.last == "value connected prev=- true" }
        #expect(transport.connects == 2)
        // The abandoned connect returns late: its socket is closed, and the live connection stays.
        transport.releaseHangingConnects()
        await waitUntil { transport.closes == 1 }
        await drain(database)
        #expect(connected.all == ["value connected prev=- false", "value connected prev=- true"])
        database.goOffline()
    }

    @Test func anAbandonedConnectIsCancelledSoItLetsGoOfItsSocket() async throws {
        let transport = SilentTransport { attempt in attempt == 1 ? .hangUntilCancelled : .handshake }
        let clock = ManualClock()
        let database = try Self.makeDatabase(transport, clock)
        let connected = Recorder()
        connected.observe(database.reference(withPath: ".info/connected"), .value)
        await waitUntil { transport.connects == 1 && clock.pendingSleepers == 1 }
        clock.advance(by: 30_000)
        // The timed-out connect is cancelled (a real one closes its half-open socket then), not left running.
        await waitUntil { transport.cancelledConnects == 1 }
        await waitUntil { clock.pendingSleepers == 1 && clock.requestedSleeps.count >= 3 }
        clock.advance(by: 1_000)
        await waitUntil { connected.all.last == "value connected prev=- true" }
        database.goOffline()
    }

    @Test func aHandshakeInTimeKeepsTheConnection() async throws {
        let transport = SilentTransport { _ in .handshake }
        let clock = ManualClock()
        let database = try Self.makeDatabase(transport, clock)
        let connected = Recorder()
        connected.observe(database.reference(withPath: ".info/connected"), .value)
        await waitUntil { connected.all.last == "value connected prev=- true" }
        // The connect timeout and the keep-alive are waiting.
        await waitUntil { clock.pendingSleepers == 2 }
        clock.advance(by: 30_000)
        await drain(database)
        #expect(transport.closes == 0)
        #expect(connected.all == ["value connected prev=- false", "value connected prev=- true"])
        database.goOffline()
    }
}
