import Foundation

/// FirebaseAuth's error codes (the same raw values), so app code that switches on them ports as is.
///
/// For example:
/// ```swift
/// do { try await Auth.auth().signIn(withEmail: email, password: password) }
/// catch let error as AuthError where error.code == .wrongPassword { showWrongPassword() }
/// ```
public enum AuthErrorCode: Int, Sendable, Hashable {
    case invalidCustomToken = 17000
    case invalidCredential = 17004
    case userDisabled = 17005
    case operationNotAllowed = 17006
    case emailAlreadyInUse = 17007
    case invalidEmail = 17008
    case wrongPassword = 17009
    case tooManyRequests = 17010
    case userNotFound = 17011
    case requiresRecentLogin = 17014
    case providerAlreadyLinked = 17015
    case invalidUserToken = 17017
    case networkError = 17020
    case userTokenExpired = 17021
    case invalidAPIKey = 17023
    case userMismatch = 17024
    case credentialAlreadyInUse = 17025
    case weakPassword = 17026
    case expiredActionCode = 17029
    case invalidActionCode = 17030
    case missingEmail = 17034
    case internalError = 17999
}

/// An error from the identity service or the network, with Firebase's code and the server's message.
///
/// It bridges to `NSError` as FirebaseAuth's errors are: domain `FIRAuthErrorDomain`, the code's raw
/// value, and the error's name (`ERROR_WRONG_PASSWORD`) under `FIRAuthErrorUserInfoNameKey`, so
/// Firebase-style handling works unchanged:
/// ```swift
/// catch {
///     if AuthErrorCode(rawValue: (error as NSError).code) == .wrongPassword { showWrongPassword() }
/// }
/// ```
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible, CustomNSError {
    public var code: AuthErrorCode
    /// The server's message (`EMAIL_EXISTS`, `WEAK_PASSWORD : Password should be at least 6 characters`, …).
    public var message: String

    public init(_ code: AuthErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Maps the message of an Identity Toolkit error body to a code, as the official SDKs do.
    public init(serverMessage message: String) {
        let name = message.split(separator: ":", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? message
        let code: AuthErrorCode = switch name {
        case "EMAIL_EXISTS": .emailAlreadyInUse
        case "INVALID_PASSWORD": .wrongPassword
        case "INVALID_LOGIN_CREDENTIALS", "INVALID_IDP_RESPONSE": .invalidCredential
        case "EMAIL_NOT_FOUND", "USER_NOT_FOUND": .userNotFound
        case "USER_DISABLED": .userDisabled
        case "WEAK_PASSWORD": .weakPassword
        case "INVALID_EMAIL": .invalidEmail
        case "MISSING_EMAIL": .missingEmail
        case "TOO_MANY_ATTEMPTS_TRY_LATER": .tooManyRequests
        case "OPERATION_NOT_ALLOWED", "PASSWORD_LOGIN_DISABLED", "ADMIN_ONLY_OPERATION": .operationNotAllowed
        case "INVALID_CUSTOM_TOKEN", "CREDENTIAL_MISMATCH": .invalidCustomToken
        case "TOKEN_EXPIRED": .userTokenExpired
        case "INVALID_ID_TOKEN", "INVALID_REFRESH_TOKEN", "USER_DELETED": .invalidUserToken
        case "CREDENTIAL_TOO_OLD_LOGIN_AGAIN": .requiresRecentLogin
        case "INVALID_API_KEY", "API_KEY_INVALID", "MISSING_API_KEY": .invalidAPIKey
        case "EXPIRED_OOB_CODE": .expiredActionCode
        case "INVALID_OOB_CODE": .invalidActionCode
        default: .internalError
        }
        self.init(code, message)
    }

    public var description: String { "AuthError(\(code), \(message))" }

    // MARK: CustomNSError

    /// FirebaseAuth's error domain.
    public static let domain = "FIRAuthErrorDomain"
    /// The `userInfo` key of the error's name, as FirebaseAuth's `AuthErrorUserInfoNameKey`.
    public static let userInfoNameKey = "FIRAuthErrorUserInfoNameKey"

    public static var errorDomain: String { domain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        // The server's detail (`WEAK_PASSWORD : Password should be at least 6 characters`) when it gave one.
        let detail = message.range(of: " : ").map { String(message[$0.upperBound...]) }
        return [NSLocalizedDescriptionKey: detail ?? code.summary, Self.userInfoNameKey: code.name]
    }
}

extension AuthErrorCode {
    /// FirebaseAuth's name of the error (`userInfo[AuthError.userInfoNameKey]`).
    public var name: String {
        switch self {
        case .invalidCustomToken: "ERROR_INVALID_CUSTOM_TOKEN"
        case .invalidCredential: "ERROR_INVALID_CREDENTIAL"
        case .userDisabled: "ERROR_USER_DISABLED"
        case .operationNotAllowed: "ERROR_OPERATION_NOT_ALLOWED"
        case .emailAlreadyInUse: "ERROR_EMAIL_ALREADY_IN_USE"
        case .invalidEmail: "ERROR_INVALID_EMAIL"
        case .wrongPassword: "ERROR_WRONG_PASSWORD"
        case .tooManyRequests: "ERROR_TOO_MANY_REQUESTS"
        case .userNotFound: "ERROR_USER_NOT_FOUND"
        case .requiresRecentLogin: "ERROR_REQUIRES_RECENT_LOGIN"
        case .providerAlreadyLinked: "ERROR_PROVIDER_ALREADY_LINKED"
        case .userMismatch: "ERROR_USER_MISMATCH"
        case .credentialAlreadyInUse: "ERROR_CREDENTIAL_ALREADY_IN_USE"
        case .invalidUserToken: "ERROR_INVALID_USER_TOKEN"
        case .networkError: "ERROR_NETWORK_REQUEST_FAILED"
        case .userTokenExpired: "ERROR_USER_TOKEN_EXPIRED"
        case .invalidAPIKey: "ERROR_INVALID_API_KEY"
        case .weakPassword: "ERROR_WEAK_PASSWORD"
        case .expiredActionCode: "ERROR_EXPIRED_ACTION_CODE"
        case .invalidActionCode: "ERROR_INVALID_ACTION_CODE"
        case .missingEmail: "ERROR_MISSING_EMAIL"
        case .internalError: "ERROR_INTERNAL_ERROR"
        }
    }

    /// A sentence for people, for errors whose server message has no detail.
    var summary: String {
        switch self {
        case .invalidCustomToken: "The custom token is malformed or belongs to another project."
        case .invalidCredential: "The sign-in credential is wrong or has expired."
        case .userDisabled: "This account has been disabled."
        case .operationNotAllowed: "This way of signing in is turned off for the project."
        case .emailAlreadyInUse: "Another account already uses this email address."
        case .invalidEmail: "The email address is malformed."
        case .wrongPassword: "The password is wrong, or the account has no password."
        case .tooManyRequests: "Too many attempts from this device; try again later."
        case .userNotFound: "No account matches; it may have been deleted."
        case .requiresRecentLogin: "This change needs a recent sign-in; sign in again and retry."
        case .providerAlreadyLinked: "The account already has a credential of this provider."
        case .userMismatch: "The credential belongs to another user."
        case .credentialAlreadyInUse: "The credential already belongs to another account."
        case .invalidUserToken: "The user's credential is no longer valid; sign in again."
        case .networkError: "The server could not be reached."
        case .userTokenExpired: "The user's credential has expired or was revoked; sign in again."
        case .invalidAPIKey: "The API key is not valid for this project."
        case .weakPassword: "The password is too weak."
        case .expiredActionCode: "The action code has expired."
        case .invalidActionCode: "The action code is malformed, expired or already used."
        case .missingEmail: "An email address is needed."
        case .internalError: "The identity service failed."
        }
    }
}
