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
final class ConsoleSessions: Sendable {
    /// How long a session lasts (not extended by use: the console signs in again).
    let lifetime: Duration
    let clock: ServerClock
    private let sessions = Mutex<[Data: Double]>([:])
    /// Failed sign-ins in the current minute, to slow guessing of the secret.
    private let failures = Mutex<(minute: Int, count: Int)>((0, 0))
    static let failuresPerMinute = 20

    init(clock: ServerClock, lifetime: Duration = .seconds(3600)) {
        self.clock = clock
        self.lifetime = lifetime
    }

    static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// A new session token and its expiry (milliseconds since 1970).
    func open() -> (token: String, expires: Double) {
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        let token = "hcs_" + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let expires = clock.wallMilliseconds + ServerClock.milliseconds(lifetime)
        sessions.withLock { sessions in
            let now = clock.wallMilliseconds
            sessions = sessions.filter { $0.value > now }
            sessions[Self.hash(token)] = expires
        }
        return (token, expires)
    }

    func isValid(_ token: String) -> Bool {
        guard token.hasPrefix("hcs_") else { return false }
        let now = clock.wallMilliseconds
        return sessions.withLock { ($0[Self.hash(token)] ?? 0) > now }
    }

    func close(_ token: String) {
        _ = sessions.withLock { $0.removeValue(forKey: Self.hash(token)) }
    }

    /// Counts a failed sign-in; false once this minute's budget is spent.
    func recordFailure() -> Bool {
        let minute = Int(clock.wallMilliseconds / 60_000)
        return failures.withLock { state in
            if state.minute != minute { state = (minute, 0) }
            state.count += 1
            return state.count <= Self.failuresPerMinute
        }
    }

    func isThrottled() -> Bool {
        let minute = Int(clock.wallMilliseconds / 60_000)
        return failures.withLock { $0.minute == minute && $0.count >= Self.failuresPerMinute }
    }
}
