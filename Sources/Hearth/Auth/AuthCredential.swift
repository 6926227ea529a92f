import Foundation
import HearthCore
import Synchronization

/// Who a user is at one sign-in provider, as FirebaseAuth's `UserInfo`: the user itself (provider
/// `Firebase`) and each entry of ``User/providerData``.
public protocol UserInfo: Sendable {
    /// `password`, `phone`, `google.com`, … (`Firebase` for the user itself).
    var providerID: String { get }
    /// The user's id at that provider.
    var uid: String { get }
    var displayName: String? { get }
    var photoURL: URL? { get }
    var email: String? { get }
    var phoneNumber: String? { get }
}

/// One provider a user signs in with (an entry of the account's `providerUserInfo`).
struct ProviderUserInfo: UserInfo {
    var providerID: String
    var uid: String
    var displayName: String?
    var photoURL: URL?
    var email: String?
    var phoneNumber: String?
}

/// When the account was made and last signed in, as FirebaseAuth's `UserMetadata`.
///
/// For example:
/// ```swift
/// if let created = Auth.auth().currentUser?.metadata.creationDate { print("member since", created) }
/// ```
public final class UserMetadata: Sendable {
    public let creationDate: Date?
    public let lastSignInDate: Date?

    init(creationDate: Date?, lastSignInDate: Date?) {
        self.creationDate = creationDate
        self.lastSignInDate = lastSignInDate
    }
}

/// A credential to sign in, re-authenticate or link with, as FirebaseAuth's `AuthCredential`; made
/// by a provider, e.g. ``EmailAuthProvider/credential(withEmail:password:)``.
///
/// A class open to ``OAuthCredential`` only; immutable, which is why it may be shared across tasks.
public class AuthCredential: @unchecked Sendable {
    /// The provider's id (`password`).
    public let provider: String
    let email: String
    let password: String
    /// An email sign-in link, for a credential of ``EmailAuthProvider/credential(withEmail:link:)``.
    let link: String?

    init(provider: String, email: String, password: String, link: String? = nil) {
        self.provider = provider
        self.email = email
        self.password = password
        self.link = link
    }
}

/// An identity provider's credential, as FirebaseAuth's `OAuthCredential` (the type of
/// ``AuthDataResult/credential``). Hearth signs in with email and password, anonymously and with
/// custom tokens only, none of which yields one: `AuthDataResult.credential` is always nil.
public final class OAuthCredential: AuthCredential, @unchecked Sendable {
    /// The provider's ID token.
    public let idToken: String?
    /// The provider's access token.
    public let accessToken: String?
    /// The provider's OAuth 1 secret.
    public let secret: String?

    init(provider: String, idToken: String?, accessToken: String?, secret: String?) {
        self.idToken = idToken
        self.accessToken = accessToken
        self.secret = secret
        super.init(provider: provider, email: "", password: "")
    }
}

/// What a sign-in learned about the user besides its account, as FirebaseAuth's
/// `AdditionalUserInfo`: whether the sign-in made the account, and how it signed in.
///
/// For example:
/// ```swift
/// let result = try await Auth.auth().signIn(withCustomToken: token)
/// if result.additionalUserInfo?.isNewUser == true { showOnboarding() }
/// ```
///
/// Immutable, and its profile holds only JSON values, which is why it may be shared across tasks.
public final class AdditionalUserInfo: @unchecked Sendable {
    /// `password` for an email and password sign-in or sign-up; empty for anonymous and custom-token
    /// sign-ins (as Firebase's).
    public let providerID: String
    /// The identity provider's profile of the user (nil: Hearth signs in with no identity provider).
    public let profile: [String: Any]?
    /// The user's name at the identity provider (nil, as `profile`).
    public let username: String?
    /// Whether this sign-in made the account.
    public let isNewUser: Bool

    init(providerID: String, profile: [String: Any]? = nil, username: String? = nil, isNewUser: Bool) {
        self.providerID = providerID
        self.profile = profile
        self.username = username
        self.isNewUser = isNewUser
    }

    /// As ``isNewUser``.
    public func newUser() -> Bool { isNewUser }
}

/// Email and password credentials, as FirebaseAuth's `EmailAuthProvider`.
///
/// For example:
/// ```swift
/// let credential = EmailAuthProvider.credential(withEmail: "ada@example.com", password: oldPassword)
/// try await Auth.auth().currentUser?.reauthenticate(with: credential)
/// ```
public enum EmailAuthProvider {
    /// The provider's id, `password`.
    public static let id = "password"

    public static func credential(withEmail email: String, password: String) -> AuthCredential {
        AuthCredential(provider: id, email: email, password: password)
    }

    /// A credential for an email sign-in link (see ``Auth/sendSignInLink(toEmail:actionCodeSettings:)``):
    /// signs in and re-authenticates like ``Auth/signIn(withEmail:link:)``. Linking it to another
    /// account is refused (`operationNotAllowed`): the server does not link email links.
    ///
    /// ```swift
    /// let credential = EmailAuthProvider.credential(withEmail: "ada@example.com", link: link)
    /// try await Auth.auth().signIn(with: credential)
    /// ```
    public static func credential(withEmail email: String, link: String) -> AuthCredential {
        AuthCredential(provider: id, email: email, password: "", link: link)
    }
}

/// FirebaseAuth's provider id of email and password accounts, `password`.
public let EmailAuthProviderID = EmailAuthProvider.id
/// The sign-in method of an email and password, `password`.
public let EmailPasswordAuthSignInMethod = "password"
/// The sign-in method of an email link, `emailLink`.
public let EmailLinkAuthSignInMethod = "emailLink"

extension NSNotification.Name {
    /// Posted on the main `NotificationCenter` when the signed-in user changes (FirebaseAuth's
    /// `FIRAuthStateDidChangeNotification`); the object is the ``Auth``.
    public static let AuthStateDidChange = Auth.authStateDidChangeNotification
}

extension Auth {
    /// Signs in with a credential (an email and password one).
    @discardableResult
    public func signIn(with credential: AuthCredential) async throws -> AuthDataResult {
        if let link = credential.link { return try await signIn(withEmail: credential.email, link: link) }
        return try await signIn(withEmail: credential.email, password: credential.password)
    }

    /// As ``signIn(with:)``, with a completion handler.
    public func signIn(with credential: AuthCredential, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        deliverResult(of: { try await self.signIn(with: credential) }, on: database.callbackQueue, to: completion)
    }
}

extension User: UserInfo {
    /// `Firebase`, as FirebaseAuth's `User`.
    public var providerID: String { "Firebase" }

    public var phoneNumber: String? { profile.withLock { $0.record?.text("phoneNumber") } }

    /// The providers the user signs in with: `password` once it has one, and identity providers
    /// linked to it (imported from Firebase). Empty for an anonymous user.
    public var providerData: [any UserInfo] {
        let record = profile.withLock { $0.record }
        guard case .object(let members)? = record, case .array(let entries)? = members.first(where: { $0.key == "providerUserInfo" })?.value else {
            return []
        }
        return entries.compactMap { entry in
            guard let provider = entry.text("providerId") else { return nil }
            return ProviderUserInfo(
                providerID: provider, uid: entry.text("rawId") ?? entry.text("federatedId") ?? "", displayName: entry.text("displayName"),
                photoURL: entry.text("photoUrl").flatMap(URL.init(string:)), email: entry.text("email"), phoneNumber: entry.text("phoneNumber")
            )
        }
    }

    /// When the account was made and last signed in.
    public var metadata: UserMetadata {
        let record = profile.withLock { $0.record }
        func date(_ name: String) -> Date? { record?.text(name).flatMap(Double.init).map { Date(timeIntervalSince1970: $0 / 1000) } }
        return UserMetadata(creationDate: date("createdAt"), lastSignInDate: date("lastLoginAt"))
    }

    /// Checks the credential again (before a sensitive change, such as the password's): it must be
    /// this user's. The user gets fresh tokens.
    @discardableResult
    public func reauthenticate(with credential: AuthCredential) async throws -> AuthDataResult {
        let reply: JSONValue
        if let link = credential.link {
            guard let code = Auth.emailLinkParameters(link)["oobCode"] else { throw AuthError(.invalidActionCode, "INVALID_OOB_CODE") }
            reply = try await auth.client.call(
                "accounts:signInWithEmailLink", [("email", .string(credential.email)), ("oobCode", .string(code)), ("returnSecureToken", .bool(true))]
            )
        } else {
            reply = try await auth.client.call(
                "accounts:signInWithPassword",
                [("email", .string(credential.email)), ("password", .string(credential.password)), ("returnSecureToken", .bool(true))]
            )
        }
        let session = try IdentityClient.session(reply)
        guard session.uid == uid else { throw AuthError(.userMismatch, "USER_MISMATCH") }
        adopt(session)
        auth.tokenChanged(self)
        try await reload()
        return AuthDataResult(user: self, additionalUserInfo: AdditionalUserInfo(providerID: credential.provider, isNewUser: false))
    }

    /// Adds the credential to this account: an anonymous user keeps its uid (and its data) and gets an
    /// email and password.
    @discardableResult
    public func link(with credential: AuthCredential) async throws -> AuthDataResult {
        if providerData.contains(where: { $0.providerID == credential.provider }) {
            throw AuthError(.providerAlreadyLinked, "PROVIDER_ALREADY_LINKED")
        }
        if credential.link != nil { throw AuthError(.operationNotAllowed, "OPERATION_NOT_ALLOWED : linking an email link is not supported") }
        do {
            try await update([("email", .string(credential.email)), ("password", .string(credential.password))])
        } catch let error as AuthError where error.code == .emailAlreadyInUse {
            throw error.concerning(email: credential.email)
        }
        try await reload()
        return AuthDataResult(user: self)
    }

    /// Removes a provider (`password`, …) from the account: the user no longer signs in with it.
    /// A provider the user does not have fails with `noSuchProvider`.
    ///
    /// ```swift
    /// try await user.unlink(fromProvider: EmailAuthProvider.id)
    /// ```
    @discardableResult
    public func unlink(fromProvider provider: String) async throws -> User {
        guard providerData.contains(where: { $0.providerID == provider }) else {
            throw AuthError(.noSuchProvider, "NO_SUCH_PROVIDER")
        }
        try await update([("deleteProvider", .array([.string(provider)]))])
        try await reload()
        return self
    }

    /// As ``unlink(fromProvider:)``, with a completion handler.
    public func unlink(fromProvider provider: String, completion: (@Sendable (User?, (any Error)?) -> Void)? = nil) {
        deliverResult(of: { try await self.unlink(fromProvider: provider) }, on: auth.database.callbackQueue, to: completion)
    }

    /// As ``isAnonymous``.
    public func anonymous() -> Bool { isAnonymous }

    /// As ``isEmailVerified``.
    public func emailVerified() -> Bool { isEmailVerified }

    /// As ``reauthenticate(with:)``, with a completion handler.
    public func reauthenticate(with credential: AuthCredential, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        deliverResult(of: { try await self.reauthenticate(with: credential) }, on: auth.database.callbackQueue, to: completion)
    }

    /// As ``link(with:)``, with a completion handler.
    public func link(with credential: AuthCredential, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        deliverResult(of: { try await self.link(with: credential) }, on: auth.database.callbackQueue, to: completion)
    }
}
