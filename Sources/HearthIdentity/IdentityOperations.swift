import HearthStorage

// The requests and results of ``IdentityService``'s operations, one namespace per Identity Toolkit
// operation. They carry no JSON: ``IdentityToolkitCodec`` decodes requests from the API's bodies and
// encodes results into the JSON Firebase answers with. Failures are ``IdentityError``s.
//
// Text fields are optional: nil when the request did not send them. A few operations treat a field
// that was sent but is not text (an array, an object) differently from one not sent at all, as
// Firebase does; those requests say so in a `names…` flag beside the field.

/// The tokens of a new session, as every sign-in returns them.
struct SessionTokens: Sendable, Equatable {
    var idToken: String
    var refreshToken: String
    /// How long the ID token is valid, in seconds.
    var expiresIn: Int
}

/// A user signed in: the account as stored after the sign-in, and the new session.
struct SignInResult: Sendable {
    var user: UserRecord
    var tokens: SessionTokens
    /// True when the sign-in created the account (custom tokens, email links).
    var isNewUser = false
}

/// `accounts:signUp`, and the admin `projects/{p}/accounts` create.
enum SignUp {
    struct Request: Sendable {
        var email: String?
        var password: String?
        var displayName: String?
        /// Admin only: the uid to create the user with (a random one otherwise).
        var localId: String?
        /// Whether the request names a `localId` at all (a client may not, even an unreadable one).
        var namesLocalId: Bool
        /// Whether the request names an email or a password: an email/password account, not an anonymous one.
        var isPasswordAccount: Bool
        /// An anonymous user's ID token: the request links an email and password to that user.
        /// Empty when the field was sent without text.
        var idToken: String?
        /// Admin only, as are the fields below.
        var photoUrl: String?
        var phoneNumber: String?
        var emailVerified: Bool?
        var disabled: Bool?

        init(
            email: String? = nil, password: String? = nil, displayName: String? = nil, localId: String? = nil, idToken: String? = nil,
            photoUrl: String? = nil, phoneNumber: String? = nil, emailVerified: Bool? = nil, disabled: Bool? = nil
        ) {
            self.email = email
            self.password = password
            self.displayName = displayName
            self.localId = localId
            self.idToken = idToken
            self.photoUrl = photoUrl
            self.phoneNumber = phoneNumber
            self.emailVerified = emailVerified
            self.disabled = disabled
            namesLocalId = localId != nil
            isPasswordAccount = email != nil || password != nil
        }
    }

    /// The new (or linked) user; `tokens` is nil for an admin creation, which signs no one in.
    struct Result: Sendable {
        var user: UserRecord
        var tokens: SessionTokens?
    }
}

/// `accounts:signInWithPassword`; answers a ``SignInResult``.
enum SignInWithPassword {
    struct Request: Sendable {
        var email: String?
        var password: String?
    }
}

/// `accounts:signInWithCustomToken`; answers a ``SignInResult``.
enum SignInWithCustomToken {
    struct Request: Sendable {
        var token: String?
    }
}

/// `accounts:signInWithEmailLink`; answers a ``SignInResult``.
enum SignInWithEmailLink {
    struct Request: Sendable {
        var oobCode: String?
        var email: String?
        /// Linking to a signed-in user, which is not implemented. Empty when sent without text.
        var idToken: String?
    }
}

/// `securetoken.googleapis.com/v1/token`: a new ID token for a refresh token.
enum TokenRefresh {
    struct Request: Sendable {
        var grantType: String?
        var refreshToken: String?
    }

    struct Result: Sendable {
        var tokens: SessionTokens
        var localId: String
    }
}

/// `accounts:lookup`; answers the users found, without duplicates, in the order asked.
enum AccountLookup {
    struct Request: Sendable {
        /// The caller's own token (required of a client). Empty when sent without text.
        var idToken: String?
        /// Admin only, as are the lists below.
        var localIds: [String] = []
        var emails: [String] = []
        var phoneNumbers: [String] = []
        var federatedIds: [FederatedID] = []
    }

    /// A user's account at an identity provider.
    struct FederatedID: Sendable, Hashable {
        var providerId: String
        var rawId: String
    }
}

/// `accounts:update`: profile, email, password, custom claims, disabling, revocation; or, with an
/// `oobCode`, applying an email verification or change.
enum AccountUpdate {
    struct Request: Sendable {
        var idToken: String?
        /// Admin only: whose account.
        var localId: String?
        /// A client's email-verification or email-change code.
        var oobCode: String?
        var email: String?
        var password: String?
        var displayName: ProfileChange?
        var photoUrl: ProfileChange?
        /// `DISPLAY_NAME`, `PHOTO_URL`, `PASSWORD`, `EMAIL`, `PHONE_NUMBER`.
        var deleteAttributes: [String] = []
        /// Provider ids to unlink (`password`, `phone` or an identity provider's).
        var deleteProviders: [String] = []
        /// Admin only, as are the fields below.
        var customAttributes: String?
        /// Whether the request names `customAttributes` at all (a client may not, even an unreadable one).
        var namesCustomAttributes: Bool
        var phoneNumber: String?
        var emailVerified: Bool?
        var disableUser: Bool?
        /// Whether the request names `disableUser` at all (a client may not, even an unreadable one).
        var namesDisableUser: Bool
        /// Seconds since 1970 before which the user's tokens are refused.
        var validSince: Int64?

        init(
            idToken: String? = nil, localId: String? = nil, oobCode: String? = nil, email: String? = nil, password: String? = nil,
            displayName: ProfileChange? = nil, photoUrl: ProfileChange? = nil, customAttributes: String? = nil, phoneNumber: String? = nil,
            emailVerified: Bool? = nil, disableUser: Bool? = nil, validSince: Int64? = nil
        ) {
            self.idToken = idToken
            self.localId = localId
            self.oobCode = oobCode
            self.email = email
            self.password = password
            self.displayName = displayName
            self.photoUrl = photoUrl
            self.customAttributes = customAttributes
            self.phoneNumber = phoneNumber
            self.emailVerified = emailVerified
            self.disableUser = disableUser
            self.validSince = validSince
            namesCustomAttributes = customAttributes != nil
            namesDisableUser = disableUser != nil
        }
    }

    /// A new display name or photo URL, or its removal.
    enum ProfileChange: Sendable, Equatable {
        case set(String)
        case remove
    }

    enum Result: Sendable {
        /// The account as stored after the change; `tokens` when the caller's session was renewed
        /// (a new password or email ends the old ones).
        case updated(UserRecord, tokens: SessionTokens?)
        /// An out-of-band code verified the email or moved the account to a new one.
        case oobCodeApplied(UserRecord)
    }
}

/// `accounts:delete`: the caller's own account (`idToken`) or any (admin, `localId`).
enum AccountDeletion {
    struct Request: Sendable {
        var idToken: String?
        var localId: String?
    }
}

/// `accounts:sendOobCode`: a password-reset, email-verification, email-change or sign-in code.
enum SendOobCode {
    struct Request: Sendable {
        /// `PASSWORD_RESET`, `VERIFY_EMAIL`, `VERIFY_AND_CHANGE_EMAIL` or `EMAIL_SIGNIN`.
        var requestType: String?
        var email: String?
        var idToken: String?
        var newEmail: String?
        /// Where the action page may send the user on.
        var continueUrl: String?
        /// Admin only: answer the link instead of mailing it.
        var returnOobLink = false
        /// The API key the link carries to the action page.
        var apiKey: String?
    }

    struct Result: Sendable {
        var email: String
        /// Only when the admin asked for it (`returnOobLink`).
        var link: IssuedLink?
    }

    struct IssuedLink: Sendable {
        var oobLink: String
        var oobCode: String
    }
}

/// `accounts:resetPassword`: with only a code, what it is for; with a new password, the reset.
enum PasswordReset {
    struct Request: Sendable {
        var oobCode: String?
        var newPassword: String?
    }

    struct Result: Sendable {
        /// Nil for an email sign-in code: its client must already know the address (the sign-in checks
        /// it), so telling it would hand the account to whoever holds a leaked code.
        var email: String?
        var requestType: String
        /// The address an email-change code moves the account to.
        var newEmail: String?
    }
}

/// `GET projects/{p}/accounts:batchGet`: a page of users, ordered by uid, as an admin's download.
enum AccountDownload {
    struct Request: Sendable {
        /// 1 to 1000, or -1 for all; 20 when nil.
        var maxResults: Int?
        /// The last uid of the page before.
        var nextPageToken: String?
    }

    struct Result: Sendable {
        var users: [UserRecord]
        /// The uid to continue after; nil on the last page.
        var nextPageToken: String?
    }
}

/// `projects/{p}/accounts:batchDelete`.
enum BatchDelete {
    struct Request: Sendable {
        var localIds: [String] = []
        /// Delete enabled users too.
        var force = false
    }

    /// A user left in place, with Firebase's message.
    struct Refusal: Sendable {
        var index: Int
        var localId: String
        var message: String
    }
}

/// `projects/{p}/accounts:query`: only the form without an expression.
enum AccountQuery {
    struct Request: Sendable {
        /// Whether the request names an `expression` (not implemented).
        var namesExpression = false
        var offset: Int64?
        var returnUserInfo: Bool?
        var limit: Int64?
    }

    struct Result: Sendable {
        var count: Int
        /// Nil when the request asked for the count only.
        var users: [UserRecord]?
    }
}

/// `projects/{p}:createSessionCookie`; answers the cookie.
enum SessionCookie {
    struct Request: Sendable {
        var idToken: String?
        /// Seconds, 300 to 1,209,600 (two weeks, the default).
        var validDuration: Int64?
    }
}

/// `projects/{p}/accounts:batchCreate` (firebase-admin's `import_users`, `hearth users import`).
enum BatchCreate {
    struct Request: Sendable {
        /// Nil when the request has no list of users.
        var users: [ImportedUser]?
        /// Nil or `HEARTH` (Hearth's own stored hashes), or `SCRYPT` with the parameters below.
        var hashAlgorithm: String?
        /// Base64, as the Firebase console shows them.
        var signerKey: String?
        var saltSeparator: String?
        var rounds: Int64?
        var memoryCost: Int64?
    }

    /// A user as Firebase's `auth:export` writes one; what is missing or invalid is refused per user.
    struct ImportedUser: Sendable {
        var localId: String?
        var email: String?
        var emailVerified: Bool?
        var displayName: String?
        var photoUrl: String?
        var disabled: Bool?
        /// Milliseconds since 1970.
        var createdAt: Int64?
        var lastLoginAt: Int64?
        /// A JSON object text.
        var customAttributes: String?
        var phoneNumber: String?
        /// Nil when the user has no `providerUserInfo` list.
        var providers: [ImportedProvider]?
        /// Base64.
        var passwordHash: String?
        var salt: String?
    }

    struct ImportedProvider: Sendable {
        var providerId: String?
        var rawId: String?
        var email: String?
        var displayName: String?
        var photoUrl: String?
    }

    /// A user not imported, by its position in the request.
    struct Refusal: Sendable {
        var index: Int
        var message: String
    }
}
