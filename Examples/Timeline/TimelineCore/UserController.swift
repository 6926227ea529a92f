import Foundation
import Hearth

/// Every call about people: accounts (sign-up, log-in, log-out), profiles under `users/<uid>`,
/// search, and following. Stateless and `Sendable`; the observable controllers a UI binds to
/// (``SessionController``, ``ProfileController``, ``SearchController``) go through it.
///
/// For example:
/// ```swift
/// let users = UserController(database: database, auth: Auth.auth(database: database))
/// let ada = try await users.signUp(email: "ada@example.com", password: "secret!", profile: ProfileForm(username: "ada"))
/// try await users.follow(grace.uid)
/// let found = try await users.search("gr")      // everyone but me whose username contains "gr"
/// ```
public final class UserController: Sendable {
    public let database: Database
    public let auth: Auth

    public init(database: Database, auth: Auth) {
        self.database = database
        self.auth = auth
    }

    /// The signed-in account's uid, or ``TimelineError/signedOut``.
    public func currentUID() throws(TimelineError) -> String {
        guard let uid = auth.currentUser?.uid else { throw .signedOut }
        return uid
    }

    // MARK: Accounts

    /// Creates the account, then its profile (the form is checked first, so a bad username never
    /// creates an account without a profile).
    public func signUp(email: String, password: String, profile form: ProfileForm) async throws -> TimelineUser {
        let fields = try form.validated()
        let result: AuthDataResult
        do {
            result = try await auth.createUser(withEmail: email.trimmingWhitespace, password: password)
        } catch {
            throw TimelineError(error)
        }
        var user = TimelineUser(uid: result.user.uid, username: fields.username, bio: fields.bio, url: fields.url)
        do {
            try await user.save(in: database)
        } catch {
            throw TimelineError(error)
        }
        return user
    }

    /// Logs in and returns the account's profile (a placeholder from the email if it has none yet,
    /// as the web app does).
    public func logIn(email: String, password: String) async throws -> TimelineUser {
        let result: AuthDataResult
        do {
            result = try await auth.signIn(withEmail: email.trimmingWhitespace, password: password)
        } catch {
            throw TimelineError(error)
        }
        return try await profileOrPlaceholder(of: result.user)
    }

    /// The profile of a remembered session (``Auth/currentUser``), or nil when signed out.
    public func restoredSession() async throws -> TimelineUser? {
        guard let user = auth.currentUser else { return nil }
        return try await profileOrPlaceholder(of: user)
    }

    public func logOut() throws {
        try auth.signOut()
    }

    private func profileOrPlaceholder(of account: Hearth.User) async throws -> TimelineUser {
        if let profile = try await user(account.uid) { return profile }
        return TimelineUser(uid: account.uid, username: account.email?.split(separator: "@").first.map(String.init) ?? "me")
    }

    // MARK: Profiles

    /// The profile at `users/<uid>`, or nil when there is none.
    public func user(_ uid: String) async throws -> TimelineUser? {
        let snapshot = try await database.reference(withPath: TimelineUser.collection).child(uid).getData()
        guard snapshot.exists() else { return nil }
        return try snapshot.decoded(as: TimelineUser.self)
    }

    /// Everyone with a profile, by username.
    public func allUsers() async throws -> [TimelineUser] {
        try await database.reference(withPath: TimelineUser.collection).getDecodedChildren(as: TimelineUser.self).values.byUsername()
    }

    /// Saves the signed-in user's username, bio and web address; a blank bio or address is removed.
    /// Follows are left as they are.
    public func saveProfile(_ form: ProfileForm) async throws -> ProfileFields {
        let fields = try form.validated()
        let uid = try currentUID()
        let values: [AnyHashable: Any] = ["username": fields.username, "bio": fields.bio ?? NSNull(), "url": fields.url ?? NSNull()]
        do {
            _ = try await database.reference(withPath: TimelineUser.collection).child(uid).updateChildValues(values)
        } catch {
            throw TimelineError(error)
        }
        return fields
    }

    /// Everyone but the signed-in user whose username contains `term` (ignoring case), by
    /// username; everyone for an empty term.
    public func search(_ term: String) async throws -> [TimelineUser] {
        let me = auth.currentUser?.uid
        return try await allUsers().matching(term, excluding: me)
    }

    // MARK: Following

    /// Follows `uid` as the signed-in user (`users/<me>/follows/<uid>: true`).
    public func follow(_ uid: String) async throws {
        try await write(followsOf: try currentUID(), uid, value: true)
    }

    public func unfollow(_ uid: String) async throws {
        try await write(followsOf: try currentUID(), uid, value: nil)
    }

    private func write(followsOf me: String, _ uid: String, value: Bool?) async throws {
        do {
            _ = try await database.reference(withPath: TimelineUser.collection).child(me).child("follows").child(uid).setValue(value)
        } catch {
            throw TimelineError(error)
        }
    }
}

extension [TimelineUser] {
    /// Sorted by username (case-insensitive), then uid.
    public func byUsername() -> [TimelineUser] {
        sorted { ($0.username.lowercased(), $0.uid) < ($1.username.lowercased(), $1.uid) }
    }

    /// The web app's search: usernames containing `term`, ignoring case, without `excluded`.
    public func matching(_ term: String, excluding excluded: String?) -> [TimelineUser] {
        let term = term.trimmingWhitespace.lowercased()
        return filter { $0.uid != excluded && (term.isEmpty || $0.username.lowercased().contains(term)) }.byUsername()
    }

    /// How many of these users follow `uid`.
    public func followerCount(of uid: String) -> Int {
        filter { $0.isFollowing(uid) }.count
    }
}

extension TimelineError {
    /// A failure of the SDK, worded for a person: the web app's sign-in messages, the rules'
    /// refusals as "Not allowed".
    public init(_ error: any Error) {
        switch error {
        case let error as TimelineError:
            self = error
        case let error as AuthError:
            self = .refused(Self.message(for: error))
        case let error as DatabaseError where error.code == .permissionDenied:
            self = .refused("Not allowed: \(error.message)")
        case let error as StorageError where error.code == .unauthorized:
            self = .refused("Not allowed: \(error.message)")
        default:
            self = .refused("\(error)")
        }
    }

    private static func message(for error: AuthError) -> String {
        switch error.code {
        case .emailAlreadyInUse: "An account already uses this email: log in instead."
        case .invalidCredential, .wrongPassword: "Wrong email or password."
        case .userNotFound: "No account uses this email: sign up."
        case .weakPassword: "Choose a password of at least 6 characters."
        case .invalidEmail, .missingEmail: "That email address is not valid."
        default: error.message
        }
    }
}
