import HearthAccess
import Synchronization

/// Counts failed password sign-ins per account and refuses further attempts for a while once there are
/// too many (`TOO_MANY_ATTEMPTS_TRY_LATER`), so a password cannot be guessed online at speed.
///
/// An attempt is counted as a failure *before* its slow password check (``reserve(_:now:)``) and
/// refunded if the password was right (``refund(_:ticket:)``): sign-ins sent at once cannot all pass
/// a check made before any of them is counted, so at most `limit` passwords are checked per account
/// and window. The window is fixed, from the first counted attempt; a success does not clear earlier
/// failures (that would hand a guesser a fresh budget each time the owner signs in).
///
/// An account is a project and an email, whether or not a user has it, so the answer reveals nothing
/// about which emails exist. Time is the server's monotonic clock (``ServerClock/elapsed``), passed
/// in, so tests step it. State is in memory: a restart forgets it, which costs an attacker a restart
/// per window.
///
/// For example:
/// ```swift
/// let throttle = SignInThrottle(limit: 10, window: .seconds(900))
/// guard let ticket = throttle.reserve("demo/ada@example.com", now: clock.elapsed) else { throw IdentityError.tooManyAttempts }
/// if passwordIsRight { throttle.refund("demo/ada@example.com", ticket: ticket) }
/// ```
final class SignInThrottle: Sendable {
    struct Entry {
        var failures: Int
        var windowStart: Duration
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

    /// Counts one attempt for the account as a failure, if it may be checked now: its ticket (the
    /// window's start), or nil when the account has had `limit` failures in its window.
    func reserve(_ account: String, now: Duration) -> Duration? {
        entries.withLock { entries in
            if entries.count >= sweepThreshold, entries[account] == nil {
                entries = entries.filter { now - $0.value.windowStart < window }
            }
            var entry = entries[account].flatMap { now - $0.windowStart < window ? $0 : nil } ?? Entry(failures: 0, windowStart: now)
            guard entry.failures < limit else { return nil }
            entry.failures += 1
            entries[account] = entry
            return entry.windowStart
        }
    }

    /// Takes back an attempt whose password was right (unless its window has since been replaced).
    func refund(_ account: String, ticket: Duration) {
        entries.withLock { entries in
            guard var entry = entries[account], entry.windowStart == ticket, entry.failures > 0 else { return }
            entry.failures -= 1
            entries[account] = entry
        }
    }

    /// Forgets the account's failures: its password was just reset by a code from its mailbox, as
    /// the lock's message promises.
    func clear(_ account: String) {
        _ = entries.withLock { $0.removeValue(forKey: account) }
    }

    /// Whether another attempt for this account would be checked now (nothing is counted).
    func allows(_ account: String, now: Duration) -> Bool {
        entries.withLock { entries in
            guard let entry = entries[account], now - entry.windowStart < window else { return true }
            return entry.failures < limit
        }
    }
}
