import HearthAccess
import HearthCore

/// An error of the Identity Toolkit API: the HTTP status (`code`) and Firebase's message, which
/// ``IdentityToolkitCodec`` renders in Firebase's envelope:
/// `{"error":{"code":400,"message":"EMAIL_EXISTS","errors":[{"message":"EMAIL_EXISTS","reason":"invalid","domain":"global"}]}}`.
///
/// `message` is `CODE` or `CODE : detail`, which every SDK splits and maps to its own error type.
struct IdentityError: HearthError, Equatable {
    var code: Int
    var message: String
    var reason = "invalid"
    var status: String?

    /// Firebase's error code: the message up to ` : ` (`EMAIL_NOT_FOUND`, `WEAK_PASSWORD`).
    var firebaseCode: String {
        guard let separator = message.firstRange(of: " : ") else { return message }
        return String(message[..<separator.lowerBound])
    }

    /// A business-rule failure: 400 with an ALL_CAPS code.
    static func invalid(_ message: String) -> IdentityError {
        IdentityError(code: 400, message: message)
    }

    static let emailExists = invalid("EMAIL_EXISTS")
    /// An app's direct email change while enumeration protection is on (Firebase's wording; the JS SDK
    /// shows it as `auth/operation-not-allowed`).
    static let verifyNewEmailFirst = invalid("OPERATION_NOT_ALLOWED : Please verify the new email before changing email.")
    static let emailNotFound = invalid("EMAIL_NOT_FOUND")
    static let invalidPassword = invalid("INVALID_PASSWORD")
    static let invalidLoginCredentials = invalid("INVALID_LOGIN_CREDENTIALS")
    static let weakPassword = invalid("WEAK_PASSWORD : Password should be at least 6 characters")
    static let invalidEmail = invalid("INVALID_EMAIL")
    static let missingEmail = invalid("MISSING_EMAIL")
    static let missingPassword = invalid("MISSING_PASSWORD")
    static let userDisabled = invalid("USER_DISABLED")
    static let userNotFound = invalid("USER_NOT_FOUND")
    static let invalidIDToken = invalid("INVALID_ID_TOKEN")
    static let tokenExpired = invalid("TOKEN_EXPIRED")
    static let missingIDToken = invalid("MISSING_ID_TOKEN")
    static let missingLocalID = invalid("MISSING_LOCAL_ID")
    static let duplicateLocalID = invalid("DUPLICATE_LOCAL_ID")
    static let insufficientPermission = invalid("INSUFFICIENT_PERMISSION")
    static let invalidMaxResults = invalid("INVALID_ARGUMENT : maxResults must be between 1 and 1000.")
    static let tooManyAttempts = invalid(
        "TOO_MANY_ATTEMPTS_TRY_LATER : Access to this account has been temporarily disabled due to many failed login attempts. You can immediately restore it by resetting your password or you can try again later."
    )

    /// A per-address limit (sign-ups, failed sign-ins): Firebase answers the bare code for these.
    static let tooManyAttemptsFromAddress = invalid("TOO_MANY_ATTEMPTS_TRY_LATER")

    /// A client address locked out of the admin secret (``AdminSecretGuard``): 429, with the code the
    /// SDKs map to "too many requests".
    static let tooManyAdminSecretGuesses = IdentityError(
        code: 429, message: "TOO_MANY_ATTEMPTS_TRY_LATER", reason: "rateLimitExceeded", status: "RESOURCE_EXHAUSTED"
    )
    /// A `continueUrl` on a domain that is not authorized (Firebase's answer; the SDKs map it to
    /// `auth/unauthorized-continue-uri`).
    static let unauthorizedDomain = invalid("UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
    static let invalidContinueURI = invalid("INVALID_CONTINUE_URI : ((expected an absolute URI with valid scheme and host))")

    static let missingAPIKey = IdentityError(
        code: 403, message: "The request is missing a valid API key.", reason: "forbidden", status: "PERMISSION_DENIED"
    )
    static let invalidAPIKey = IdentityError(
        code: 400, message: "API key not valid. Please pass a valid API key.", reason: "keyInvalid", status: "INVALID_ARGUMENT"
    )
    static let adminOnly = IdentityError(
        code: 403, message: "INSUFFICIENT_PERMISSION : This operation needs the admin credential.", reason: "forbidden",
        status: "PERMISSION_DENIED"
    )
    static let badCredentials = IdentityError(
        code: 401,
        message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        reason: "authError", status: "UNAUTHENTICATED"
    )
    static let notFound = IdentityError(code: 404, message: "Not Found", reason: "notFound", status: "NOT_FOUND")
    static let notImplemented = IdentityError(code: 501, message: "Not Implemented", reason: "unimplemented", status: "NOT_IMPLEMENTED")

    static func malformedJSON(_ detail: String) -> IdentityError {
        IdentityError(code: 400, message: "Invalid JSON payload received. \(detail)", reason: "parseError", status: "INVALID_ARGUMENT")
    }
}
