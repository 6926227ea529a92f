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
    private let windows = Mutex<[String: Window]>([:])
    /// Bounds memory under a flood of addresses (IPv6 gives an attacker many): past this many entries,
    /// expired ones are swept.
    let sweepThreshold = 100_000

    init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    /// Whether the address may do one more now.
    func allows(_ address: String, now: Duration) -> Bool {
        windows.withLock { windows in
            guard let entry = windows[address] else { return true }
            if now - entry.start >= window {
                windows[address] = nil
                return true
            }
            return entry.count < limit
        }
    }

    /// Counts one event for the address.
    func record(_ address: String, now: Duration) {
        windows.withLock { windows in
            if windows.count >= sweepThreshold {
                windows = windows.filter { now - $0.value.start < window }
            }
            if var entry = windows[address], now - entry.start < window {
                entry.count += 1
                windows[address] = entry
            } else {
                windows[address] = Window(count: 1, start: now)
            }
        }
    }
}
