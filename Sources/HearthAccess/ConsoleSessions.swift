import Crypto
import Foundation
import Synchronization

/// Sessions of the web console: signing in with the admin secret gives a random session token that
/// acts as the admin for a limited time, so the browser never keeps the secret itself. Tokens are
/// kept hashed, in memory only (a restart signs everyone out), and end at their expiry or sign-out.
///
/// For example:
/// ```swift
/// let sessions = ConsoleSessions(clock: .system)
/// let (token, expires) = sessions.open()
/// sessions.isValid(token)  // true until `expires`, or until `close(token)`
/// ```
package final class ConsoleSessions: Sendable {
    /// How long a session lasts (not extended by use: the console signs in again).
    package let lifetime: Duration
    package let clock: ServerClock
    private let sessions = Mutex<[Data: Double]>([:])
    private let closeObservers = Mutex<[@Sendable (Data) -> Void]>([])
    /// How session tokens begin, so they are never mistaken for guesses of the secret.
    package static let tokenPrefix = "hcs_"

    package init(clock: ServerClock, lifetime: Duration = .seconds(3600)) {
        self.clock = clock
        self.lifetime = lifetime
    }

    package static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// A new session token and its expiry (milliseconds since 1970).
    package func open() -> (token: String, expires: Double) {
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        let token = Self.tokenPrefix + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let expires = clock.wallMilliseconds + ServerClock.milliseconds(lifetime)
        sessions.withLock { sessions in
            let now = clock.wallMilliseconds
            sessions = sessions.filter { $0.value > now }
            sessions[Self.hash(token)] = expires
        }
        return (token, expires)
    }

    package func isValid(_ token: String) -> Bool {
        expiry(of: token) != nil
    }

    /// When a live session's token expires (milliseconds since 1970); nil for anything else.
    package func expiry(of token: String) -> Double? {
        guard token.hasPrefix(Self.tokenPrefix) else { return nil }
        let now = clock.wallMilliseconds
        return sessions.withLock { $0[Self.hash(token)].flatMap { $0 > now ? $0 : nil } }
    }

    /// Ends a session; connections and streams opened with its token are told (``observeClose(_:)``).
    package func close(_ token: String) {
        let hash = Self.hash(token)
        guard sessions.withLock({ $0.removeValue(forKey: hash) }) != nil else { return }
        for observer in closeObservers.withLock({ $0 }) { observer(hash) }
    }

    /// Whether the session with this ``hash(_:)`` is live (not expired, not signed out).
    package func isLive(hash: Data) -> Bool {
        let now = clock.wallMilliseconds
        return sessions.withLock { ($0[hash] ?? 0) > now }
    }

    /// Calls `observer` with a session's ``hash(_:)`` when it is signed out.
    package func observeClose(_ observer: @escaping @Sendable (Data) -> Void) {
        closeObservers.withLock { $0.append(observer) }
    }
}
