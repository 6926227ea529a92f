import Synchronization

/// Locks a client address out of the admin secret for a while after too many wrong guesses, on every
/// surface that accepts the secret (REST `auth=`/Bearer, files, metrics, the cluster API, the identity
/// admin calls, the console's sign-in).
///
/// Only strings tried *as the secret* count: ID tokens (JWTs, three dot-separated parts), console
/// session tokens (`hcs_…`) and, in emulator mode, `owner` never do, so users behind the same address
/// as a guesser keep working. While an address is locked, every secret-shaped credential from it is
/// refused without being checked — the right secret too — and other addresses are unaffected.
///
/// Each try is counted before the secret is compared (reserve, then refund on a match), so guesses
/// sent at once cannot all slip under the limit. Time is the server's monotonic clock; state is in
/// memory and bounded.
///
/// For example:
/// ```swift
/// let guard = AdminSecretGuard(clock: .system)   // 10 wrong guesses a minute, then a minute locked
/// switch guard.check("guess", against: secret, from: "203.0.113.7") {
/// case .admin: …
/// case .notAdmin: …      // counted
/// case .locked: …        // 429
/// }
/// ```
package final class AdminSecretGuard: Sendable {
    /// What a credential tried as the admin secret turned out to be.
    package enum Verdict: Equatable {
        case admin
        case notAdmin
        /// The address has guessed wrong too often: not checked.
        case locked
    }

    package struct Entry {
        package var failures: Int
        package var windowStart: Duration
        package var lockedUntil: Duration?
    }

    /// Wrong guesses allowed per address within ``window``; the next locks the address.
    package let limit: Int
    package let window: Duration
    /// How long a locked address stays locked.
    package let lockout: Duration
    package let clock: ServerClock
    private let entries = Mutex<[String: Entry]>([:])
    /// The last candidate that matched, with the digest it matched: an admin client sends the same
    /// secret with every request, and comparing it again costs less than hashing it and counting a
    /// try. (The secret is in the server's memory with each such request anyway; only its salted hash
    /// is ever written down.)
    private let lastMatch = Mutex<(digest: [UInt8], candidate: [UInt8])?>(nil)
    /// Bounds memory under a flood of addresses: past this, expired entries are swept.
    package let capacity = 100_000

    package static let defaultLimit = 10
    package static let defaultWindow: Duration = .seconds(60)

    package init(clock: ServerClock, limit: Int = AdminSecretGuard.defaultLimit, window: Duration = AdminSecretGuard.defaultWindow, lockout: Duration? = nil) {
        self.clock = clock
        self.limit = limit
        self.window = window
        self.lockout = lockout ?? window
    }

    /// Whether `token` would be tried as the admin secret: not a JWT (an ID token, signed or the
    /// emulator's unsigned kind) and not a console session token.
    package static func isSecretGuess(_ token: String) -> Bool {
        if token.hasPrefix(ConsoleSessions.tokenPrefix) { return false }
        return token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count != 2
    }

    /// Why `secret` cannot be the admin secret, or nil: one shaped like an ID token (exactly two dots)
    /// or a console session token is compared without counting, so the guessing limit would never
    /// apply to it.
    package static func problem(withSecret secret: String) -> String? {
        guard !isSecretGuess(secret) else { return nil }
        return "HEARTH_ADMIN_SECRET must not look like a token (exactly two dots, or starting with \(ConsoleSessions.tokenPrefix)): guesses of such a secret would not be limited. Choose another secret."
    }

    /// Compares `candidate` with the secret for the client at `address` (nil: unknown, counted together).
    /// Credentials that are not secret guesses (``isSecretGuess(_:)``) are never the admin secret
    /// (``problem(withSecret:)`` refuses such a secret), so they are not compared or counted: comparing
    /// them uncounted would let guesses of that shape go unlimited.
    package func check(_ candidate: String, against secret: AdminSecret, from address: String?) -> Verdict {
        guard Self.isSecretGuess(candidate) else { return .notAdmin }
        let key = RequestClient.addressKey(address)
        if matchesLastMatch(candidate, secret), !isLocked(key: key) { return .admin }
        guard let ticket = reserve(key) else { return .locked }
        guard secret.verify(candidate) else { return .notAdmin }
        refund(key, ticket: ticket)
        lastMatch.withLock { $0 = (secret.digest, Array(candidate.utf8)) }
        return .admin
    }

    /// Whether `candidate` is the last candidate that matched `secret`, compared in constant time.
    private func matchesLastMatch(_ candidate: String, _ secret: AdminSecret) -> Bool {
        lastMatch.withLock { last in
            guard let last, last.digest == secret.digest, last.candidate.count == candidate.utf8.count else { return false }
            var difference: UInt8 = 0
            for (a, b) in zip(last.candidate, candidate.utf8) { difference |= a ^ b }
            return difference == 0
        }
    }

    /// Whether the address is locked out now.
    package func isLocked(_ address: String?) -> Bool {
        isLocked(key: RequestClient.addressKey(address))
    }

    private func isLocked(key: String) -> Bool {
        let now = clock.elapsed
        return entries.withLock { entries in entries[key]?.lockedUntil.map { now < $0 } ?? false }
    }

    /// Counts one try up front; nil if the address is locked. The ticket (its window's start) lets a
    /// refund skip a window that has since been replaced.
    private func reserve(_ key: String) -> Duration? {
        let now = clock.elapsed
        return entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil {
                entries = entries.filter { now - $0.value.windowStart < window || ($0.value.lockedUntil.map { now < $0 } ?? false) }
            }
            var entry = entries[key] ?? Entry(failures: 0, windowStart: now)
            if let lockedUntil = entry.lockedUntil {
                if now < lockedUntil { return nil }
                entry = Entry(failures: 0, windowStart: now)
            } else if now - entry.windowStart >= window {
                entry = Entry(failures: 0, windowStart: now)
            }
            if entry.failures >= limit {
                entry.lockedUntil = now + lockout
                entries[key] = entry
                return nil
            }
            entry.failures += 1
            // The guess that uses up the budget locks the address from now on.
            if entry.failures >= limit { entry.lockedUntil = now + lockout }
            entries[key] = entry
            return entry.windowStart
        }
    }

    /// Takes back a try that matched the secret.
    private func refund(_ key: String, ticket: Duration) {
        entries.withLock { entries in
            guard var entry = entries[key], entry.windowStart == ticket, entry.failures > 0 else { return }
            entry.failures -= 1
            if entry.failures < limit { entry.lockedUntil = nil }
            entries[key] = entry
        }
    }
}
