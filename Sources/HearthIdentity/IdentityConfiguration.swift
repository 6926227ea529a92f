import HearthAccess
/// Settings of the identity service (Firebase Authentication's Identity Toolkit API).
///
/// For example:
/// ```swift
/// var identity = IdentityConfiguration()   // ServerConfiguration.identity
/// identity.projectID = "demo-timeline"
/// identity.apiKeys = ["AIza-demo"]
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
    /// Failed password sign-ins allowed per client address (across all accounts) within
    /// ``failedSignInsPerAddressWindow``; further sign-ins from it get `TOO_MANY_ATTEMPTS_TRY_LATER`.
    /// Only failures count, so many people behind one NAT who know their passwords are not locked out.
    /// Nil: 100 in the default mode, no limit in emulator mode; 0: no limit.
    public var failedSignInsPerAddressLimit: Int?
    public var failedSignInsPerAddressWindow: Duration = .seconds(15 * 60)
    /// Accounts an app may try to create (`accounts:signUp`, email or anonymous) per client address within
    /// ``signUpsPerAddressWindow`` (Firebase's quota: 100 an hour per IP address); further sign-ups get
    /// `TOO_MANY_ATTEMPTS_TRY_LATER`. Admin creations do not count. Nil: 100 in the default mode, no limit
    /// in emulator mode; 0: no limit.
    public var signUpsPerAddressLimit: Int?
    public var signUpsPerAddressWindow: Duration = .seconds(3600)
    /// Account emails (`accounts:sendOobCode`: password resets, verifications, email changes, sign-in
    /// links) an app may ask for per client address within ``accountEmailsWindow``; further requests get
    /// `TOO_MANY_ATTEMPTS_TRY_LATER`. Admin requests do not count. Nil: 50 in the default mode, no limit in
    /// emulator mode; 0: no limit.
    public var accountEmailsPerAddressLimit: Int?
    /// Account emails one address may be sent at an app's request within ``accountEmailsWindow``, so
    /// nobody can flood someone's inbox through the server; further requests get
    /// `RESET_PASSWORD_EXCEED_LIMIT` (a reset) or `TOO_MANY_ATTEMPTS_TRY_LATER`. Nil: 10 in the default
    /// mode, no limit in emulator mode; 0: no limit.
    public var accountEmailsPerRecipientLimit: Int?
    public var accountEmailsWindow: Duration = .seconds(3600)
    /// Take the client's address from the last entry of `X-Forwarded-For` (the one the proxy in front of
    /// Hearth appended) instead of the connection's peer. Only turn this on behind a proxy that sets the
    /// header: otherwise any client can claim any address and evade the per-address limits. Off: the
    /// header is ignored, and behind a proxy every client shares the proxy's address.
    public var trustForwardedFor = false
    /// The origin users reach the server at (`https://hearth.example.com`, no path): the origin of
    /// every link in account emails and of the `oobLink` given to admins. Nil: the address the server
    /// listens on (``ActionLinks``), never the client's `Host` or `X-Forwarded-Host`. Check it with
    /// ``ActionLinks/validatedOrigin(_:)``.
    public var publicURL: String?
    /// Domains a `continueUrl` may point at besides `localhost`, `127.0.0.1` and the links' own host
    /// (Firebase's "authorized domains"; a domain admits its subdomains, an IP address only itself).
    public var authorizedDomains: [String] = []
    /// Wrong admin secrets one client address may send within ``adminSecretFailuresWindow``, on any
    /// surface, before it is locked out for a window (429), even with the right secret (``AdminSecretGuard``).
    public var adminSecretFailuresPerAddress = 10
    public var adminSecretFailuresWindow: Duration = .seconds(60)
    /// Deliver the outbox's emails to this SMTP server (in the background, with retries). Nil: the
    /// emails are only kept in the outbox (`hearth users outbox`, the emulator's `oobCodes` hook).
    public var smtp: SMTPConfiguration?

    public init() {}
}
