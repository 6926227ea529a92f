import Foundation
import HearthCore
import Synchronization

/// A signed-in user, as FirebaseAuth's `User`: its profile, its ID token (refreshed before it
/// expires) and the changes a user makes to its own account.
///
/// For example:
/// ```swift
/// if let user = Auth.auth().currentUser {
///     print(user.uid, user.email ?? "anonymous")
///     let token = try await user.getIDToken()
/// }
/// ```
public final class User: Sendable {
    struct Profile: Sendable, Equatable {
        var email: String?
        var displayName: String?
        var photoURL: URL?
        var emailVerified = false
        var isAnonymous = false
        /// The account as the server last described it (`accounts:lookup`): linked providers, times.
        var record: JSONValue?
    }

    struct Tokens: Sendable {
        var idToken: String
        var refreshToken: String
        /// When the ID token expires, in ms on the auth's clock.
        var expiry: Double
    }

    /// The user's id (`localId`), which rules see as `auth.uid`.
    public let uid: String
    let auth: Auth
    let profile: Mutex<Profile>
    let tokens: Mutex<Tokens>

    init(uid: String, auth: Auth, profile: Profile, tokens: Tokens) {
        self.uid = uid
        self.auth = auth
        self.profile = Mutex(profile)
        self.tokens = Mutex(tokens)
    }

    public var email: String? { profile.withLock { $0.email } }
    /// The display name. Setting it changes this object only, as in FirebaseAuth; use
    /// ``createProfileChangeRequest()`` to change the account.
    public var displayName: String? {
        get { profile.withLock { $0.displayName } }
        set { profile.withLock { $0.displayName = newValue } }
    }
    /// The photo URL. Setting it changes this object only, as ``displayName``.
    public var photoURL: URL? {
        get { profile.withLock { $0.photoURL } }
        set { profile.withLock { $0.photoURL = newValue } }
    }
    public var isEmailVerified: Bool { profile.withLock { $0.emailVerified } }
    /// Signed in with `signInAnonymously()` and not linked to an email since.
    public var isAnonymous: Bool { profile.withLock { $0.isAnonymous } }
    /// The refresh token (for tools that keep a session; treat it as a password).
    public var refreshToken: String? {
        let token = tokens.withLock { $0.refreshToken }
        return token.isEmpty ? nil : token
    }

    /// The user's ID token, refreshed first when it expires within five minutes (or when forced).
    public func getIDToken(forcingRefresh: Bool = false) async throws -> String {
        let current = tokens.withLock { $0 }
        if !forcingRefresh, current.expiry - auth.clock.milliseconds() > 5 * 60 * 1000 { return current.idToken }
        let session = try await auth.client.refresh(current.refreshToken)
        adopt(session)
        auth.tokenChanged(self)
        return session.idToken
    }

    /// As ``getIDToken(forcingRefresh:)``, as FirebaseAuth's async `idTokenForcingRefresh(_:)`.
    public func idTokenForcingRefresh(_ forceRefresh: Bool) async throws -> String {
        try await getIDToken(forcingRefresh: forceRefresh)
    }

    /// As ``getIDToken(forcingRefresh:)``, with a completion handler.
    ///
    /// ```swift
    /// user.getIDToken { token, error in send(token) }
    /// ```
    public func getIDToken(completion: (@Sendable (String?, (any Error)?) -> Void)?) {
        getIDTokenForcingRefresh(false, completion: completion)
    }

    /// As ``getIDToken(forcingRefresh:)``, with a completion handler.
    public func getIDTokenForcingRefresh(_ forceRefresh: Bool, completion: (@Sendable (String?, (any Error)?) -> Void)?) {
        deliverResult(of: { try await self.getIDToken(forcingRefresh: forceRefresh) }, on: auth.database.callbackQueue, to: completion)
    }

    /// Reloads the profile from the server.
    public func reload() async throws {
        let token = try await getIDToken()
        let reply = try await auth.client.call("accounts:lookup", [("idToken", .string(token))])
        guard case .object(let members) = reply, case .array(let users)? = members.first(where: { $0.key == "users" })?.value,
              let record = users.first else {
            throw AuthError(.userNotFound, "USER_NOT_FOUND")
        }
        profile.withLock { $0 = User.profile(of: record) }
    }

    /// Changes the password; the session continues with new tokens.
    public func updatePassword(to password: String) async throws {
        try await update([("password", .string(password))])
    }

    /// Changes the email address; the session continues with new tokens. An address in use fails
    /// with `emailAlreadyInUse`, the address under `AuthErrorUserInfoEmailKey`. A server with email
    /// enumeration protection on (Hearth's default outside emulator mode, as Firebase's for new
    /// projects) refuses it with `operationNotAllowed`: use
    /// ``sendEmailVerification(beforeUpdatingEmail:actionCodeSettings:)`` there.
    public func updateEmail(to email: String) async throws {
        do {
            try await update([("email", .string(email))])
        } catch let error as AuthError where error.code == .emailAlreadyInUse {
            throw error.concerning(email: email)
        }
        profile.withLock { $0.email = email; $0.isAnonymous = false }
        // The server resets the verification and the provider's record with the address.
        try await reload()
    }

    /// As ``reload()``, with a completion handler.
    public func reload(completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        auth.deliverCompletion(completion) { try await self.reload() }
    }

    /// As ``updatePassword(to:)``, with a completion handler.
    public func updatePassword(to password: String, completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        auth.deliverCompletion(completion) { try await self.updatePassword(to: password) }
    }

    /// As ``updateEmail(to:)``, with a completion handler.
    public func updateEmail(to email: String, completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        auth.deliverCompletion(completion) { try await self.updateEmail(to: email) }
    }

    /// As ``delete()``, with a completion handler.
    ///
    /// ```swift
    /// user.delete { error in if let error { show(error) } }
    /// ```
    public func delete(completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        auth.deliverCompletion(completion) { try await self.delete() }
    }

    /// Starts a change of the display name and photo URL, applied by `commitChanges()`.
    public func createProfileChangeRequest() -> UserProfileChangeRequest {
        UserProfileChangeRequest(user: self)
    }

    /// Deletes the account and signs out.
    public func delete() async throws {
        let token = try await getIDToken()
        _ = try await auth.client.call("accounts:delete", [("idToken", .string(token))])
        auth.signedOut(self)
    }

    func update(_ changes: [(key: String, value: JSONValue)]) async throws {
        let token = try await getIDToken()
        let reply = try await auth.client.call("accounts:update", [("idToken", .string(token))] + changes + [("returnSecureToken", .bool(true))])
        if let session = try? IdentityClient.session(reply) {
            adopt(session)
            auth.tokenChanged(self)
        }
    }

    func adopt(_ session: IdentityClient.Session) {
        let expiry = auth.clock.milliseconds() + session.expiresIn * 1000
        tokens.withLock { $0 = Tokens(idToken: session.idToken, refreshToken: session.refreshToken, expiry: expiry) }
    }

    static func profile(of record: JSONValue) -> Profile {
        var profile = Profile()
        profile.email = record.text("email")
        profile.displayName = record.text("displayName")
        profile.photoURL = record.text("photoUrl").flatMap(URL.init(string:))
        profile.emailVerified = record.text("emailVerified") == "true"
        var providers = 0
        if case .object(let members) = record, case .array(let list)? = members.first(where: { $0.key == "providerUserInfo" })?.value {
            providers = list.count
        }
        profile.isAnonymous = profile.email == nil && providers == 0
        profile.record = record
        return profile
    }
}

/// A change of a user's display name and photo URL, as FirebaseAuth's `UserProfileChangeRequest`.
///
/// ```swift
/// let change = user.createProfileChangeRequest()
/// change.displayName = "Ada"
/// try await change.commitChanges()
/// ```
public final class UserProfileChangeRequest: Sendable {
    private let user: User
    private let changes = Mutex<(displayName: String??, photoURL: URL??)>((nil, nil))

    init(user: User) { self.user = user }

    public var displayName: String? {
        get { changes.withLock { $0.displayName ?? nil } }
        set { changes.withLock { $0.displayName = .some(newValue) } }
    }

    public var photoURL: URL? {
        get { changes.withLock { $0.photoURL ?? nil } }
        set { changes.withLock { $0.photoURL = .some(newValue) } }
    }

    /// As ``commitChanges()``, with a completion handler.
    ///
    /// ```swift
    /// let change = user.createProfileChangeRequest()
    /// change.displayName = "Ada"
    /// change.commitChanges { error in if let error { show(error) } }
    /// ```
    public func commitChanges(completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        user.auth.deliverCompletion(completion) { try await self.commitChanges() }
    }

    /// Sends the changes to the server and applies them to the user.
    public func commitChanges() async throws {
        let (name, photo) = changes.withLock { ($0.displayName, $0.photoURL) }
        var body: [(key: String, value: JSONValue)] = []
        var deleted: [JSONValue] = []
        if let name { if let name { body.append(("displayName", .string(name))) } else { deleted.append(.string("DISPLAY_NAME")) } }
        if let photo { if let photo { body.append(("photoUrl", .string(photo.absoluteString))) } else { deleted.append(.string("PHOTO_URL")) } }
        if !deleted.isEmpty { body.append(("deleteAttribute", .array(deleted))) }
        try await user.update(body)
        user.profile.withLock { profile in
            if let name { profile.displayName = name }
            if let photo { profile.photoURL = photo }
        }
    }
}
