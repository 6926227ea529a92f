import Synchronization

/// Counts failed password sign-ins per account and refuses further attempts for a while once there are
/// too many (`TOO_MANY_ATTEMPTS_TRY_LATER`), so a password cannot be guessed online at speed.
///
/// An account is a project and an email, whether or not a user has it, so the answer reveals nothing
/// about which emails exist. A successful sign-in clears the count. State is in memory: a restart
/// forgets it, which costs an attacker a restart per window.
///
/// For example:
/// ```swift
/// let throttle = SignInThrottle(limit: 10, window: .seconds(900))
/// guard throttle.allows("demo/ada@example.com", now: .now) else { throw … }
/// ```
final class SignInThrottle: Sendable {
    struct Entry {
        var failures: Int
        var windowStart: ContinuousClock.Instant
    }

    let limit: Int
    let window: Duration
    private let entries = Mutex<[String: Entry]>([:])
    /// Bounds memory under a flood of made-up emails: past this, expired entries are swept.
    let sweepThreshold = 100_000

    init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    /// Whether another attempt for this account may be checked now.
    func allows(_ account: String, now: ContinuousClock.Instant = .now) -> Bool {
        entries.withLock { entries in
            guard let entry = entries[account] else { return true }
            if now - entry.windowStart >= window {
                entries[account] = nil
                return true
            }
            return entry.failures < limit
        }
    }

    func recordFailure(_ account: String, now: ContinuousClock.Instant = .now) {
        entries.withLock { entries in
            if entries.count >= sweepThreshold {
                entries = entries.filter { now - $0.value.windowStart < window }
            }
            if var entry = entries[account], now - entry.windowStart < window {
                entry.failures += 1
                entries[account] = entry
            } else {
                entries[account] = Entry(failures: 1, windowStart: now)
            }
        }
    }

    func recordSuccess(_ account: String) {
        _ = entries.withLock { $0.removeValue(forKey: account) }
    }
}
