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
    case invalidUserToken = 17017
    case networkError = 17020
    case userTokenExpired = 17021
    case invalidAPIKey = 17023
    case weakPassword = 17026
    case expiredActionCode = 17029
    case invalidActionCode = 17030
    case missingEmail = 17034
    case internalError = 17999
}

/// An error from the identity service or the network, with Firebase's code and the server's message.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
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
}
