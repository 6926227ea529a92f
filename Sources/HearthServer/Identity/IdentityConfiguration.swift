/// Settings of the identity service (Firebase Authentication's Identity Toolkit API).
///
/// For example:
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.identity.projectID = "demo-timeline"
/// configuration.identity.apiKeys = ["AIza-demo"]
/// ```
public struct IdentityConfiguration: Sendable {
    /// The project: `aud` of ID tokens, `iss` = `https://securetoken.google.com/<project>`, and the only
    /// project admin paths may name (in emulator mode any project is accepted and each has its own users).
    public var projectID = "hearth"
    /// API keys clients may send (`?key=` or `x-goog-api-key`). Empty: any non-empty key, as Firebase's
    /// emulator does (a Firebase API key identifies the project; it is not a secret).
    public var apiKeys: Set<String> = []
    /// When on, a failed password sign-in answers `INVALID_LOGIN_CREDENTIALS` whether or not the email
    /// exists. Nil: on by default, off in emulator mode (the Auth emulator's default).
    public var emailEnumerationProtection: Bool?
    /// The cost of new password hashes.
    public var passwordHashing = PasswordHasher()
    /// Lifetime of ID tokens, in seconds (Firebase: one hour).
    public var idTokenLifetime = 3600
    /// Failed password sign-ins allowed per account within ``failedSignInWindow`` before further attempts
    /// get `TOO_MANY_ATTEMPTS_TRY_LATER`. Nil: 10 in the default mode, no limit in emulator mode.
    public var failedSignInLimit: Int?
    public var failedSignInWindow: Duration = .seconds(15 * 60)

    public init() {}
}
