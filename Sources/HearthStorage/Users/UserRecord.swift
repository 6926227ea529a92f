/// One user of the identity service, as stored. Field names and meanings follow Firebase's
/// `UserInfo` (auth-storage.md §2); times are milliseconds since 1970 unless named otherwise.
///
/// The password is kept only as an encoded slow hash (see `PasswordHasher` in HearthServer); this
/// type never holds a plain password.
///
/// For example:
/// ```swift
/// var user = UserRecord(localId: "ada", createdAt: 1_700_000_000_000)
/// user.email = "ada@example.com"
/// ```
public struct UserRecord: Sendable, Equatable, Codable {
    public var localId: String
    /// Lower-cased; unique within a project.
    public var email: String?
    public var emailVerified = false
    public var displayName: String?
    public var photoUrl: String?
    public var phoneNumber: String?
    /// The encoded password hash (`scrypt$…`), nil for users without a password.
    public var passwordHash: String?
    public var passwordUpdatedAt: Int64?
    /// Tokens issued before this (seconds since 1970) are revoked, as Firebase's `validSince`.
    public var validSince: Int64?
    /// Raised whenever the user's tokens are revoked (password or email change, `validSince`); refresh
    /// tokens of an older generation are refused. Exact where `validSince`, in whole seconds, is not: a
    /// revocation also ends refresh tokens made earlier in the same second.
    public var tokenGeneration: Int64 = 0
    public var createdAt: Int64
    public var lastLoginAt: Int64?
    public var lastRefreshAt: Int64?
    public var disabled = false
    /// Custom claims as a JSON object text (at most 1000 characters).
    public var customAttributes: String?
    /// Created by a custom-token sign-in.
    public var customAuth = false
    /// The first email address the user had, for email recovery.
    public var initialEmail: String?
    /// Signed in with an email link at least once (Firebase's `emailLinkSignin`): the address is then
    /// a `password` provider of the account even without a password. Nil in records stored before it
    /// was kept.
    public var emailLinkSignin: Bool?
    /// Identity-provider accounts linked to the user (imported from Firebase: Google, Apple, …). Nil when
    /// there are none (and in records stored before they were kept).
    public var linkedProviders: [LinkedProvider]?
    /// The undo links of the account's latest address changes, oldest first: each was mailed to the
    /// address the account left (Firebase's `RECOVER_EMAIL`). Kept with the account, so a restart does
    /// not end them. Nil when there are none.
    public var emailRecoveries: [EmailRecovery]?
    /// When an undo last moved the account back (ms since 1970): email-change codes asked for before it
    /// apply no more.
    public var emailRecoveredAt: Int64?

    public init(localId: String, createdAt: Int64) {
        self.localId = localId
        self.createdAt = createdAt
    }
}

/// The undo of one address change: its code (only its SHA-256, as refresh tokens are kept) restores
/// `email`, the address the account had before it moved to `changedTo` (nil: it was removed).
///
/// For example:
/// ```swift
/// user.emailRecoveries = [EmailRecovery(codeHash: digest, email: "ada@example.com", changedTo: "eve@example.com", issuedAt: now)]
/// ```
public struct EmailRecovery: Sendable, Equatable, Codable {
    public var codeHash: String
    /// The address the code restores (where it was mailed).
    public var email: String
    /// The address the account moved to; nil when the change removed the address.
    public var changedTo: String?
    /// Milliseconds since 1970.
    public var issuedAt: Int64

    public init(codeHash: String, email: String, changedTo: String?, issuedAt: Int64) {
        self.codeHash = codeHash
        self.email = email
        self.changedTo = changedTo
        self.issuedAt = issuedAt
    }
}

/// An identity-provider account linked to a user, as Firebase's `providerUserInfo` lists it. Hearth
/// does not sign in with identity providers yet; it keeps, shows and finds these links so users
/// imported from Firebase keep them.
///
/// For example:
/// ```swift
/// user.linkedProviders = [LinkedProvider(providerId: "google.com", rawId: "1234567890")]
/// ```
public struct LinkedProvider: Sendable, Equatable, Codable {
    public var providerId: String
    /// The user's id at the provider.
    public var rawId: String
    public var email: String?
    public var displayName: String?
    public var photoUrl: String?

    public init(providerId: String, rawId: String, email: String? = nil, displayName: String? = nil, photoUrl: String? = nil) {
        self.providerId = providerId
        self.rawId = rawId
        self.email = email
        self.displayName = displayName
        self.photoUrl = photoUrl
    }
}

/// A refresh token as stored: only the SHA-256 of the token itself, with what it grants.
public struct RefreshTokenRecord: Sendable, Equatable, Codable {
    /// Hex SHA-256 of the token.
    public var tokenHash: String
    public var project: String
    public var localId: String
    /// `password`, `anonymous`, `custom`: the `firebase.sign_in_provider` of the ID tokens it grants.
    public var provider: String
    /// Claims of a custom-token sign-in (a JSON object text) that every refreshed ID token carries.
    public var extraClaims: String?
    /// When it was created (milliseconds since 1970).
    public var createdAt: Int64
    /// When the user signed in (seconds since 1970): the `auth_time` of every ID token it grants.
    public var authTime: Int64
    /// The user's ``UserRecord/tokenGeneration`` when it was made; the store sets it.
    public var generation: Int64 = 0

    public init(tokenHash: String, project: String, localId: String, provider: String, extraClaims: String?, createdAt: Int64, authTime: Int64) {
        self.tokenHash = tokenHash
        self.project = project
        self.localId = localId
        self.provider = provider
        self.extraClaims = extraClaims
        self.createdAt = createdAt
        self.authTime = authTime
    }
}

/// Why the user store refused a change. Descriptions never contain passwords or tokens.
public enum UserStoreError: Error, Sendable, Equatable {
    /// Another user of the project has this email.
    case emailExists
    /// A user with this `localId` exists already.
    case localIdExists
    /// No user with this `localId`.
    case userNotFound
    /// The store could not be read or written.
    case unavailable(String)
}
