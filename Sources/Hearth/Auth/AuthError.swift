import Foundation

/// FirebaseAuth's error codes (every one of them, with the same raw values), so app code that
/// switches on them ports as is. Like Firebase's, the code is itself an `Error`, and `code` is the
/// code, so `AuthErrorCode(rawValue: (error as NSError).code)` and `error.code` read the same.
///
/// For example:
/// ```swift
/// do { try await Auth.auth().signIn(withEmail: email, password: password) }
/// catch let error as AuthError where error.code == .wrongPassword { showWrongPassword() }
/// ```
public enum AuthErrorCode: Int, Error, Sendable, Hashable {
    case invalidCustomToken = 17000
    case customTokenMismatch = 17002
    case invalidCredential = 17004
    case userDisabled = 17005
    case operationNotAllowed = 17006
    case emailAlreadyInUse = 17007
    case invalidEmail = 17008
    case wrongPassword = 17009
    case tooManyRequests = 17010
    case userNotFound = 17011
    case accountExistsWithDifferentCredential = 17012
    case requiresRecentLogin = 17014
    case providerAlreadyLinked = 17015
    case noSuchProvider = 17016
    case invalidUserToken = 17017
    case networkError = 17020
    case userTokenExpired = 17021
    case invalidAPIKey = 17023
    case userMismatch = 17024
    case credentialAlreadyInUse = 17025
    case weakPassword = 17026
    case appNotAuthorized = 17028
    case expiredActionCode = 17029
    case invalidActionCode = 17030
    case invalidMessagePayload = 17031
    case invalidSender = 17032
    case invalidRecipientEmail = 17033
    case missingEmail = 17034
    case missingIosBundleID = 17036
    case missingAndroidPackageName = 17037
    case unauthorizedDomain = 17038
    case invalidContinueURI = 17039
    case missingContinueURI = 17040
    case missingPhoneNumber = 17041
    case invalidPhoneNumber = 17042
    case missingVerificationCode = 17043
    case invalidVerificationCode = 17044
    case missingVerificationID = 17045
    case invalidVerificationID = 17046
    case missingAppCredential = 17047
    case invalidAppCredential = 17048
    case sessionExpired = 17051
    case quotaExceeded = 17052
    case missingAppToken = 17053
    case notificationNotForwarded = 17054
    case appNotVerified = 17055
    case captchaCheckFailed = 17056
    case webContextAlreadyPresented = 17057
    case webContextCancelled = 17058
    case appVerificationUserInteractionFailure = 17059
    case invalidClientID = 17060
    case webNetworkRequestFailed = 17061
    case webInternalError = 17062
    case webSignInUserInteractionFailure = 17063
    case localPlayerNotAuthenticated = 17066
    case nullUser = 17067
    case invalidProviderID = 17071
    case tenantIDMismatch = 17072
    case unsupportedTenantOperation = 17073
    case invalidHostingLinkDomain = 17214
    case rejectedCredential = 17075
    case gameKitNotLinked = 17076
    case secondFactorRequired = 17078
    case missingMultiFactorSession = 17081
    case missingMultiFactorInfo = 17082
    case invalidMultiFactorSession = 17083
    case multiFactorInfoNotFound = 17084
    case adminRestrictedOperation = 17085
    case unverifiedEmail = 17086
    case secondFactorAlreadyEnrolled = 17087
    case maximumSecondFactorCountExceeded = 17088
    case unsupportedFirstFactor = 17089
    case emailChangeNeedsVerification = 17090
    case missingClientIdentifier = 17093
    case missingOrInvalidNonce = 17094
    case blockingCloudFunctionError = 17105
    case recaptchaNotEnabled = 17200
    case missingRecaptchaToken = 17201
    case invalidRecaptchaToken = 17202
    case invalidRecaptchaAction = 17203
    case missingClientType = 17204
    case missingRecaptchaVersion = 17205
    case invalidRecaptchaVersion = 17206
    case invalidReqType = 17207
    case recaptchaSDKNotLinked = 17208
    case recaptchaSiteKeyMissing = 17209
    case recaptchaActionCreationFailed = 17210
    case passwordDoesNotMeetRequirements = 17211
    case keychainError = 17995
    case internalError = 17999
    case malformedJWT = 18000

    /// The code itself, as Firebase's `AuthErrorCode.code`.
    public var code: AuthErrorCode { self }
}

/// FirebaseAuth's error domain and `userInfo` keys, as its `AuthErrors`.
///
/// For example:
/// ```swift
/// let email = (error as NSError).userInfo[AuthErrors.userInfoEmailKey] as? String
/// ```
public final class AuthErrors: Sendable {
    /// `FIRAuthErrorDomain`, the domain of every Auth error.
    public static let domain: String = "FIRAuthErrorDomain"
    /// The key of the error's name (`ERROR_WRONG_PASSWORD`).
    public static let userInfoNameKey: String = "FIRAuthErrorUserInfoNameKey"
    /// The key of the email address an error concerns (`emailAlreadyInUse`, …).
    public static let userInfoEmailKey: String = "FIRAuthErrorUserInfoEmailKey"
    /// The key of an updated credential to recover with (Hearth never sets it).
    public static let userInfoUpdatedCredentialKey: String = "FIRAuthErrorUserInfoUpdatedCredentialKey"
    /// The key of a multi-factor resolver (Hearth never sets it: it has no multi-factor sign-in).
    public static let userInfoMultiFactorResolverKey: String = "FIRAuthErrorUserInfoMultiFactorResolverKey"

    private init() {}
}

/// FirebaseAuth's error domain (its Objective-C constant `FIRAuthErrorDomain`).
public let AuthErrorDomain: String = AuthErrors.domain
/// The `userInfo` key of an Auth error's name.
public let AuthErrorUserInfoNameKey: String = AuthErrors.userInfoNameKey
/// The `userInfo` key of the email address an Auth error concerns.
public let AuthErrorUserInfoEmailKey: String = AuthErrors.userInfoEmailKey
/// The `userInfo` key of an updated credential.
public let AuthErrorUserInfoUpdatedCredentialKey: String = AuthErrors.userInfoUpdatedCredentialKey
/// The `userInfo` key of a multi-factor resolver.
public let AuthErrorUserInfoMultiFactorResolverKey: String = AuthErrors.userInfoMultiFactorResolverKey

/// An error from the identity service or the network, with Firebase's code and the server's message.
///
/// It bridges to `NSError` as FirebaseAuth's errors are: domain `FIRAuthErrorDomain`, the code's raw
/// value, the error's name (`ERROR_WRONG_PASSWORD`) under `AuthErrorUserInfoNameKey`, and the email
/// address it concerns (for `emailAlreadyInUse`) under `AuthErrorUserInfoEmailKey`, so Firebase-style
/// handling works unchanged:
/// ```swift
/// catch {
///     if AuthErrorCode(rawValue: (error as NSError).code) == .wrongPassword { showWrongPassword() }
/// }
/// ```
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible, CustomNSError {
    public var code: AuthErrorCode
    /// The server's message (`EMAIL_EXISTS`, `WEAK_PASSWORD : Password should be at least 6 characters`, …).
    public var message: String
    /// The email address the error concerns, when known (`userInfo[AuthErrorUserInfoEmailKey]`).
    public var email: String?

    public init(_ code: AuthErrorCode, _ message: String, email: String? = nil) {
        self.code = code
        self.message = message
        self.email = email
    }

    /// Maps the message of an Identity Toolkit error body to a code, as the official SDKs do.
    public init(serverMessage message: String) {
        let name = message.split(separator: ":", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? message
        self.init(AuthErrorCode(serverName: name) ?? .internalError, message)
    }

    /// This error with the email address it concerns.
    func concerning(email: String?) -> AuthError {
        var copy = self
        if copy.email == nil { copy.email = email }
        return copy
    }

    public var description: String { "AuthError(\(code), \(message))" }

    // MARK: CustomNSError

    /// FirebaseAuth's error domain.
    public static let domain = AuthErrors.domain
    /// The `userInfo` key of the error's name, as FirebaseAuth's `AuthErrorUserInfoNameKey`.
    public static let userInfoNameKey = AuthErrors.userInfoNameKey
    /// The `userInfo` key of the email address, as FirebaseAuth's `AuthErrorUserInfoEmailKey`.
    public static let userInfoEmailKey = AuthErrors.userInfoEmailKey

    public static var errorDomain: String { domain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        // The server's detail (`WEAK_PASSWORD : Password should be at least 6 characters`) when it gave one.
        let detail = message.range(of: " : ").map { String(message[$0.upperBound...]) }
        var info: [String: Any] = [NSLocalizedDescriptionKey: detail ?? code.summary, Self.userInfoNameKey: code.name]
        if let email { info[Self.userInfoEmailKey] = email }
        return info
    }
}

extension AuthErrorCode: CustomNSError {
    public static var errorDomain: String { AuthErrors.domain }
    public var errorCode: Int { rawValue }
    public var errorUserInfo: [String: Any] {
        [NSLocalizedDescriptionKey: summary, AuthErrors.userInfoNameKey: name]
    }
}

extension AuthErrorCode {
    /// The code of an Identity Toolkit error message's name (`EMAIL_EXISTS`), as FirebaseAuth maps
    /// them; nil for a name it does not know.
    init?(serverName name: String) {
        let code: AuthErrorCode? = switch name {
        case "EMAIL_EXISTS": .emailAlreadyInUse
        case "INVALID_PASSWORD": .wrongPassword
        case "INVALID_LOGIN_CREDENTIALS", "INVALID_IDP_RESPONSE", "INVALID_PENDING_TOKEN": .invalidCredential
        case "EMAIL_NOT_FOUND", "USER_NOT_FOUND": .userNotFound
        case "USER_DISABLED": .userDisabled
        case "WEAK_PASSWORD": .weakPassword
        case "INVALID_EMAIL", "INVALID_IDENTIFIER": .invalidEmail
        case "MISSING_EMAIL": .missingEmail
        case "TOO_MANY_ATTEMPTS_TRY_LATER": .tooManyRequests
        case "OPERATION_NOT_ALLOWED", "PASSWORD_LOGIN_DISABLED": .operationNotAllowed
        case "ADMIN_ONLY_OPERATION": .adminRestrictedOperation
        case "INVALID_CUSTOM_TOKEN": .invalidCustomToken
        case "CREDENTIAL_MISMATCH": .customTokenMismatch
        case "TOKEN_EXPIRED": .userTokenExpired
        case "INVALID_ID_TOKEN", "INVALID_REFRESH_TOKEN", "USER_DELETED": .invalidUserToken
        case "CREDENTIAL_TOO_OLD_LOGIN_AGAIN": .requiresRecentLogin
        case "INVALID_API_KEY", "API_KEY_INVALID", "MISSING_API_KEY": .invalidAPIKey
        case "EXPIRED_OOB_CODE": .expiredActionCode
        case "INVALID_OOB_CODE": .invalidActionCode
        case "INVALID_MESSAGE_PAYLOAD": .invalidMessagePayload
        case "INVALID_SENDER": .invalidSender
        case "INVALID_RECIPIENT_EMAIL": .invalidRecipientEmail
        case "MISSING_IOS_BUNDLE_ID": .missingIosBundleID
        case "MISSING_ANDROID_PACKAGE_NAME": .missingAndroidPackageName
        case "UNAUTHORIZED_DOMAIN": .unauthorizedDomain
        case "INVALID_CONTINUE_URI": .invalidContinueURI
        case "MISSING_CONTINUE_URI": .missingContinueURI
        case "INVALID_PHONE_NUMBER": .invalidPhoneNumber
        case "QUOTA_EXCEEDED": .quotaExceeded
        case "APP_NOT_VERIFIED": .appNotVerified
        case "CAPTCHA_CHECK_FAILED": .captchaCheckFailed
        case "INVALID_APP_CREDENTIAL": .invalidAppCredential
        case "MISSING_APP_CREDENTIAL": .missingAppCredential
        case "INVALID_CODE": .invalidVerificationCode
        case "INVALID_HOSTING_LINK_DOMAIN": .invalidHostingLinkDomain
        case "INVALID_SESSION_INFO": .invalidVerificationID
        case "SESSION_EXPIRED": .sessionExpired
        case "BLOCKING_FUNCTION_ERROR_RESPONSE": .blockingCloudFunctionError
        case "EMAIL_CHANGE_NEEDS_VERIFICATION": .emailChangeNeedsVerification
        case "INVALID_MFA_PENDING_CREDENTIAL": .invalidMultiFactorSession
        case "INVALID_PROVIDER_ID": .invalidProviderID
        case "MFA_ENROLLMENT_NOT_FOUND": .multiFactorInfoNotFound
        case "MISSING_CLIENT_IDENTIFIER": .missingClientIdentifier
        case "MISSING_IOS_APP_TOKEN": .missingAppToken
        case "MISSING_MFA_ENROLLMENT_ID": .missingMultiFactorInfo
        case "MISSING_MFA_PENDING_CREDENTIAL": .missingMultiFactorSession
        case "MISSING_OR_INVALID_NONCE": .missingOrInvalidNonce
        case "PASSWORD_DOES_NOT_MEET_REQUIREMENTS": .passwordDoesNotMeetRequirements
        case "SECOND_FACTOR_EXISTS": .secondFactorAlreadyEnrolled
        case "SECOND_FACTOR_LIMIT_EXCEEDED": .maximumSecondFactorCountExceeded
        case "TENANT_ID_MISMATCH": .tenantIDMismatch
        case "UNSUPPORTED_FIRST_FACTOR": .unsupportedFirstFactor
        case "UNSUPPORTED_TENANT_OPERATION": .unsupportedTenantOperation
        case "UNVERIFIED_EMAIL": .unverifiedEmail
        case "FEDERATED_USER_ID_ALREADY_LINKED": .credentialAlreadyInUse
        case "INVALID_REQ_TYPE": .invalidReqType
        default: nil
        }
        guard let code else { return nil }
        self = code
    }

    /// FirebaseAuth's name of the error (`userInfo[AuthErrorUserInfoNameKey]`).
    public var name: String {
        switch self {
        case .invalidCustomToken: "ERROR_INVALID_CUSTOM_TOKEN"
        case .customTokenMismatch: "ERROR_CUSTOM_TOKEN_MISMATCH"
        case .invalidCredential: "ERROR_INVALID_CREDENTIAL"
        case .userDisabled: "ERROR_USER_DISABLED"
        case .operationNotAllowed: "ERROR_OPERATION_NOT_ALLOWED"
        case .emailAlreadyInUse: "ERROR_EMAIL_ALREADY_IN_USE"
        case .invalidEmail: "ERROR_INVALID_EMAIL"
        case .wrongPassword: "ERROR_WRONG_PASSWORD"
        case .tooManyRequests: "ERROR_TOO_MANY_REQUESTS"
        case .userNotFound: "ERROR_USER_NOT_FOUND"
        case .accountExistsWithDifferentCredential: "ERROR_ACCOUNT_EXISTS_WITH_DIFFERENT_CREDENTIAL"
        case .requiresRecentLogin: "ERROR_REQUIRES_RECENT_LOGIN"
        case .providerAlreadyLinked: "ERROR_PROVIDER_ALREADY_LINKED"
        case .noSuchProvider: "ERROR_NO_SUCH_PROVIDER"
        case .invalidUserToken: "ERROR_INVALID_USER_TOKEN"
        case .networkError: "ERROR_NETWORK_REQUEST_FAILED"
        case .userTokenExpired: "ERROR_USER_TOKEN_EXPIRED"
        case .invalidAPIKey: "ERROR_INVALID_API_KEY"
        case .userMismatch: "ERROR_USER_MISMATCH"
        case .credentialAlreadyInUse: "ERROR_CREDENTIAL_ALREADY_IN_USE"
        case .weakPassword: "ERROR_WEAK_PASSWORD"
        case .appNotAuthorized: "ERROR_APP_NOT_AUTHORIZED"
        case .expiredActionCode: "ERROR_EXPIRED_ACTION_CODE"
        case .invalidActionCode: "ERROR_INVALID_ACTION_CODE"
        case .invalidMessagePayload: "ERROR_INVALID_MESSAGE_PAYLOAD"
        case .invalidSender: "ERROR_INVALID_SENDER"
        case .invalidRecipientEmail: "ERROR_INVALID_RECIPIENT_EMAIL"
        case .missingEmail: "ERROR_MISSING_EMAIL"
        case .missingIosBundleID: "ERROR_MISSING_IOS_BUNDLE_ID"
        case .missingAndroidPackageName: "ERROR_MISSING_ANDROID_PKG_NAME"
        case .unauthorizedDomain: "ERROR_UNAUTHORIZED_DOMAIN"
        case .invalidContinueURI: "ERROR_INVALID_CONTINUE_URI"
        case .missingContinueURI: "ERROR_MISSING_CONTINUE_URI"
        case .missingPhoneNumber: "ERROR_MISSING_PHONE_NUMBER"
        case .invalidPhoneNumber: "ERROR_INVALID_PHONE_NUMBER"
        case .missingVerificationCode: "ERROR_MISSING_VERIFICATION_CODE"
        case .invalidVerificationCode: "ERROR_INVALID_VERIFICATION_CODE"
        case .missingVerificationID: "ERROR_MISSING_VERIFICATION_ID"
        case .invalidVerificationID: "ERROR_INVALID_VERIFICATION_ID"
        case .missingAppCredential: "MISSING_APP_CREDENTIAL"
        case .invalidAppCredential: "INVALID_APP_CREDENTIAL"
        case .sessionExpired: "ERROR_SESSION_EXPIRED"
        case .quotaExceeded: "ERROR_QUOTA_EXCEEDED"
        case .missingAppToken: "ERROR_MISSING_APP_TOKEN"
        case .notificationNotForwarded: "ERROR_NOTIFICATION_NOT_FORWARDED"
        case .appNotVerified: "ERROR_APP_NOT_VERIFIED"
        case .captchaCheckFailed: "ERROR_CAPTCHA_CHECK_FAILED"
        case .webContextAlreadyPresented: "ERROR_WEB_CONTEXT_ALREADY_PRESENTED"
        case .webContextCancelled: "ERROR_WEB_CONTEXT_CANCELLED"
        case .appVerificationUserInteractionFailure: "ERROR_APP_VERIFICATION_FAILED"
        case .invalidClientID: "ERROR_INVALID_CLIENT_ID"
        case .webNetworkRequestFailed: "ERROR_WEB_NETWORK_REQUEST_FAILED"
        case .webInternalError: "ERROR_WEB_INTERNAL_ERROR"
        case .webSignInUserInteractionFailure: "ERROR_WEB_USER_INTERACTION_FAILURE"
        case .localPlayerNotAuthenticated: "ERROR_LOCAL_PLAYER_NOT_AUTHENTICATED"
        case .nullUser: "ERROR_NULL_USER"
        case .invalidProviderID: "ERROR_INVALID_PROVIDER_ID"
        case .tenantIDMismatch: "ERROR_TENANT_ID_MISMATCH"
        case .unsupportedTenantOperation: "ERROR_UNSUPPORTED_TENANT_OPERATION"
        case .invalidHostingLinkDomain: "ERROR_INVALID_HOSTING_LINK_DOMAIN"
        case .rejectedCredential: "ERROR_REJECTED_CREDENTIAL"
        case .gameKitNotLinked: "ERROR_GAME_KIT_NOT_LINKED"
        case .secondFactorRequired: "ERROR_SECOND_FACTOR_REQUIRED"
        case .missingMultiFactorSession: "ERROR_MISSING_MULTI_FACTOR_SESSION"
        case .missingMultiFactorInfo: "ERROR_MISSING_MULTI_FACTOR_INFO"
        case .invalidMultiFactorSession: "ERROR_INVALID_MULTI_FACTOR_SESSION"
        case .multiFactorInfoNotFound: "ERROR_MULTI_FACTOR_INFO_NOT_FOUND"
        case .adminRestrictedOperation: "ERROR_ADMIN_RESTRICTED_OPERATION"
        case .unverifiedEmail: "ERROR_UNVERIFIED_EMAIL"
        case .secondFactorAlreadyEnrolled: "ERROR_SECOND_FACTOR_ALREADY_ENROLLED"
        case .maximumSecondFactorCountExceeded: "ERROR_MAXIMUM_SECOND_FACTOR_COUNT_EXCEEDED"
        case .unsupportedFirstFactor: "ERROR_UNSUPPORTED_FIRST_FACTOR"
        case .emailChangeNeedsVerification: "ERROR_EMAIL_CHANGE_NEEDS_VERIFICATION"
        case .missingClientIdentifier: "ERROR_MISSING_CLIENT_IDENTIFIER"
        case .missingOrInvalidNonce: "ERROR_MISSING_OR_INVALID_NONCE"
        case .blockingCloudFunctionError: "ERROR_BLOCKING_CLOUD_FUNCTION_RETURNED_ERROR"
        case .recaptchaNotEnabled: "ERROR_RECAPTCHA_NOT_ENABLED"
        case .missingRecaptchaToken: "ERROR_MISSING_RECAPTCHA_TOKEN"
        case .invalidRecaptchaToken: "ERROR_INVALID_RECAPTCHA_TOKEN"
        case .invalidRecaptchaAction: "ERROR_INVALID_RECAPTCHA_ACTION"
        case .missingClientType: "ERROR_MISSING_CLIENT_TYPE"
        case .missingRecaptchaVersion: "ERROR_MISSING_RECAPTCHA_VERSION"
        case .invalidRecaptchaVersion: "ERROR_INVALID_RECAPTCHA_VERSION"
        case .invalidReqType: "ERROR_INVALID_REQ_TYPE"
        case .recaptchaSDKNotLinked: "ERROR_RECAPTCHA_SDK_NOT_LINKED"
        case .recaptchaSiteKeyMissing: "ERROR_RECAPTCHA_SITE_KEY_MISSING"
        case .recaptchaActionCreationFailed: "ERROR_RECAPTCHA_ACTION_CREATION_FAILED"
        case .passwordDoesNotMeetRequirements: "ERROR_PASSWORD_DOES_NOT_MEET_REQUIREMENTS"
        case .keychainError: "ERROR_KEYCHAIN_ERROR"
        case .internalError: "ERROR_INTERNAL_ERROR"
        case .malformedJWT: "ERROR_MALFORMED_JWT"
        }
    }

    /// A sentence for people, for errors whose server message has no detail.
    var summary: String {
        switch self {
        case .invalidCustomToken: "The custom token is malformed or belongs to another project."
        case .customTokenMismatch: "The custom token was made for another project."
        case .invalidCredential: "The sign-in credential is wrong or has expired."
        case .userDisabled: "This account has been disabled."
        case .operationNotAllowed: "This way of signing in is turned off for the project."
        case .adminRestrictedOperation: "Only an administrator may do this."
        case .emailAlreadyInUse: "Another account already uses this email address."
        case .invalidEmail: "The email address is malformed."
        case .wrongPassword: "The password is wrong, or the account has no password."
        case .tooManyRequests: "Too many attempts from this device; try again later."
        case .userNotFound: "No account matches; it may have been deleted."
        case .accountExistsWithDifferentCredential: "An account with this email address signs in another way."
        case .requiresRecentLogin: "This change needs a recent sign-in; sign in again and retry."
        case .providerAlreadyLinked: "The account already has a credential of this provider."
        case .noSuchProvider: "The account is not linked to this provider."
        case .userMismatch: "The credential belongs to another user."
        case .credentialAlreadyInUse: "The credential already belongs to another account."
        case .invalidUserToken: "The user's credential is no longer valid; sign in again."
        case .networkError: "The server could not be reached."
        case .userTokenExpired: "The user's credential has expired or was revoked; sign in again."
        case .invalidAPIKey: "The API key is not valid for this project."
        case .appNotAuthorized: "This app may not use the project's identity service with this API key."
        case .weakPassword: "The password is too weak."
        case .passwordDoesNotMeetRequirements: "The password does not meet the project's requirements."
        case .expiredActionCode: "The action code has expired."
        case .invalidActionCode: "The action code is malformed, expired or already used."
        case .missingEmail: "An email address is needed."
        case .invalidMessagePayload: "The email template is invalid."
        case .invalidSender: "The email template's sender is invalid."
        case .invalidRecipientEmail: "The recipient's email address is invalid."
        case .missingIosBundleID: "An iOS bundle ID is needed when an Android package name is given."
        case .missingAndroidPackageName: "An Android package name is needed to install the Android app."
        case .unauthorizedDomain: "The continue URL's domain is not authorized for the project."
        case .invalidContinueURI: "The continue URL is invalid."
        case .missingContinueURI: "A continue URL is needed."
        case .missingPhoneNumber: "A phone number is needed."
        case .invalidPhoneNumber: "The phone number is malformed."
        case .invalidVerificationCode: "The verification code is invalid."
        case .invalidVerificationID: "The verification ID is invalid."
        case .sessionExpired: "The verification session has expired."
        case .quotaExceeded: "The project's quota for this operation is exceeded."
        case .emailChangeNeedsVerification: "The new email address must be verified first."
        case .unverifiedEmail: "The email address must be verified first."
        case .invalidProviderID: "The provider ID is invalid."
        case .tenantIDMismatch: "The user belongs to another tenant."
        case .unsupportedTenantOperation: "This operation is not supported with a tenant."
        case .blockingCloudFunctionError: "A blocking function refused the operation."
        case .invalidReqType: "The request type is invalid."
        case .nullUser: "No user is signed in."
        case .keychainError: "The keychain could not be read or written."
        case .malformedJWT: "The token is malformed."
        case .internalError: "The identity service failed."
        default: "The identity service refused the request (\(name))."
        }
    }
}
