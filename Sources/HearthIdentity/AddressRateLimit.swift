import HearthAccess
import Synchronization

/// Counts events per client address (sign-ups, failed password sign-ins) in fixed windows and refuses
/// more once an address has had `limit` in its current window, so one machine cannot create accounts
/// in bulk or try passwords across many accounts (credential stuffing), which the per-account
/// ``SignInThrottle`` does not catch.
///
/// Time is the server's monotonic clock (``ServerClock/elapsed``), passed in, so tests step it. State
/// is in memory, like ``SignInThrottle``'s.
///
/// For example:
/// ```swift
/// let signUps = AddressRateLimit(limit: 100, window: .seconds(3600))
/// guard signUps.allows("203.0.113.7", now: clock.elapsed) else { throw IdentityError.tooManyAttemptsFromAddress }
/// signUps.record("203.0.113.7", now: clock.elapsed)
/// ```
final class AddressRateLimit: Sendable {
    struct Window {
        var count: Int
        var start: Duration
    }

    let limit: Int
    let window: Duration
    private let state = Mutex(State())
    /// Bounds memory under a flood of addresses: past this many entries, expired ones are swept (at
    /// most once per window, so a flood of live entries does not make every request scan them all),
    /// and if that is not enough, the oldest windows are dropped.
    let capacity = 100_000

    struct State {
        var windows: [String: Window] = [:]
        var lastSweep: Duration?
    }

    init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    /// Whether the address may do one more now.
    func allows(_ address: String, now: Duration) -> Bool {
        state.withLock { state in
            guard let entry = state.windows[address] else { return true }
            if now - entry.start >= window {
                state.windows[address] = nil
                return true
            }
            return entry.count < limit
        }
    }

    /// How many addresses are being counted.
    var entryCount: Int { state.withLock { $0.windows.count } }

    /// Counts one event for the address.
    func record(_ address: String, now: Duration) {
        state.withLock { state in count(address, now: now, &state) }
    }

    /// Checks and counts in one step: true (and counted) if the address may do one more now. Requests
    /// that arrive together cannot all pass a check made before any of them is counted.
    func reserve(_ address: String, now: Duration) -> Bool {
        state.withLock { state in
            if let entry = state.windows[address], now - entry.start < window, entry.count >= limit { return false }
            count(address, now: now, &state)
            return true
        }
    }

    /// Takes back one event counted by ``reserve(_:now:)`` (an attempt that turned out not to count,
    /// such as a sign-in that succeeded).
    func release(_ address: String, now: Duration) {
        state.withLock { state in
            guard var entry = state.windows[address], now - entry.start < window, entry.count > 0 else { return }
            entry.count -= 1
            state.windows[address] = entry
        }
    }

    private func count(_ address: String, now: Duration, _ state: inout State) {
        if state.windows.count >= capacity, state.windows[address] == nil {
            if state.lastSweep.map({ now - $0 >= window }) ?? true {
                state.windows = state.windows.filter { now - $0.value.start < window }
                state.lastSweep = now
            }
            if state.windows.count >= capacity {
                // Still full of live windows: the oldest tenth go.
                let oldest = state.windows.sorted { $0.value.start < $1.value.start }.prefix(capacity / 10).map(\.key)
                for key in oldest { state.windows[key] = nil }
            }
        }
        if var entry = state.windows[address], now - entry.start < window {
            entry.count += 1
            state.windows[address] = entry
        } else {
            state.windows[address] = Window(count: 1, start: now)
        }
    }
}
