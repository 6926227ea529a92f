public import HearthCore
public import HearthStorage
import Synchronization

/// Which users' ID tokens the database must refuse before they expire: tokens of disabled and deleted
/// users, and tokens issued before a user's `validSince` (a password or email change, an admin
/// revocation). The identity service reports every such change here; the database checks every user
/// token it accepts (REST, event streams, the WebSocket `auth` request) against it, and open WebSocket
/// sessions of the user are told (`ac`, as when a token expires): at once for a disabled or deleted
/// user; after `ServerConfiguration.reauthenticationGrace` for a new `validSince`, unless the session
/// signed in again with a newer token meanwhile (as the SDK that changed the password does).
///
/// Only tokens of the identity service (issuer `https://securetoken.google.com/<project>`) are affected.
/// Disabled users and revocations are loaded from the user store at start; deletions are remembered
/// until the server restarts (the tokens of a user deleted before then lapse within their hour).
///
/// For example:
/// ```swift
/// let revocations = TokenRevocations()
/// revocations.update(project: "demo", uid: "ada", validSince: nil, ended: true)   // disabled
/// revocations.isRevoked(claims)   // true for every token of ada in demo
/// ```
public final class TokenRevocations: Sendable {
    package struct Status: Sendable {
        package var validSince: Int64?
        /// Disabled or deleted: every token is refused.
        package var ended: Bool
    }

    /// A change that ended some tokens of one user.
    public struct Change: Sendable {
        public var project: String
        public var uid: String
        /// The user was disabled or deleted (every token ends), rather than given a new `validSince`.
        public var ended: Bool
        /// The sessions end at once, without the grace a new `validSince` gives an SDK to sign in again
        /// (an undone email change: nobody legitimate holds those sessions).
        public var immediately = false
    }

    private let statuses = Mutex<[String: Status]>([:])
    private let observers = Mutex<[@Sendable (Change) -> Void]>([])

    public init() {}

    /// Loads what the store knows: disabled users and users whose tokens were revoked.
    public func load(from store: any UserStore) async throws {
        let stored = try await store.revocations()
        statuses.withLock { statuses in
            for entry in stored {
                statuses[TokenRevocations.key(entry.project, entry.localId)] = Status(validSince: entry.validSince, ended: entry.disabled)
            }
        }
    }

    /// Records a user's state; when it ends tokens, tells the observers.
    ///
    /// `validSince` only moves forward here: reports of one user's changes may arrive out of order (a
    /// password reset that committed just before an undo, reported just after it), and the later
    /// `validSince` is the one that holds. (An admin who sets an earlier one sees it after a restart.)
    public func update(project: String, uid: String, validSince: Int64?, ended: Bool, immediately: Bool = false) {
        statuses.withLock { statuses in
            let key = TokenRevocations.key(project, uid)
            let kept = [statuses[key]?.validSince, validSince].compactMap { $0 }.max()
            statuses[key] = Status(validSince: kept, ended: ended)
        }
        let change = Change(project: project, uid: uid, ended: ended, immediately: immediately)
        for observer in observers.withLock({ $0 }) { observer(change) }
    }

    /// Calls `observer` after every update (for sessions to re-check their credentials).
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Whether the user's tokens have a status here: it was disabled, deleted or had tokens revoked
    /// since the server started (or before, for users still stored).
    package func isTracked(project: String, uid: String) -> Bool {
        statuses.withLock { $0[TokenRevocations.key(project, uid)] != nil }
    }

    /// Whether a token with these claims (the `auth.token` the rules see) must be refused.
    public func isRevoked(_ claims: JSONValue?) -> Bool {
        guard let claims, case .string(let project)? = claims["aud"], case .string(let iss)? = claims["iss"],
            iss == TokenSigner.firebaseIssuerPrefix + project, case .string(let uid)? = claims["sub"] ?? claims["user_id"],
            let status = statuses.withLock({ $0[TokenRevocations.key(project, uid)] })
        else { return false }
        if status.ended { return true }
        guard let validSince = status.validSince else { return false }
        guard case .number(let issued)? = claims["iat"] else { return true }
        // Compared as doubles: `iat` can be any JSON number (an unsigned token's in emulator mode); NaN is refused.
        return !(issued >= Double(validSince))
    }

    /// Refuses a revoked token as expired, so the SDKs refresh it (which fails for a revoked or
    /// disabled user, and signs them out).
    package func check(_ auth: JSONValue) throws(TokenError) {
        if isRevoked(auth["token"]) { throw TokenError.expired }
    }

    package static func key(_ project: String, _ uid: String) -> String {
        project + "\u{0}" + uid
    }
}
