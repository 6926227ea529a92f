import Crypto
import Foundation
import HearthAccess
import HearthCore
import HearthStorage
import Logging
import Synchronization

/// Who calls the Identity Toolkit API: an app with an API key, or the admin credential.
enum IdentityCaller: Sendable, Equatable {
    case client
    case admin
}

/// The Identity Toolkit operations (auth-storage.md §3): sign-up, sign-in, lookup, update, delete,
/// refresh and the admin calls, over a ``UserStore``. Stateless apart from the store, so one value is
/// shared by every request.
///
/// Each operation takes a typed request and returns a typed result (IdentityOperations.swift);
/// every failure is an ``IdentityError`` with Firebase's code. The JSON of the API is
/// ``IdentityToolkitCodec``'s business, so ``UserAdministration`` calls the same operations without
/// it. Passwords and tokens are never logged.
package struct IdentityService: Sendable {
    let store: any UserStore
    let signer: TokenSigner
    let configuration: IdentityConfiguration
    let emulatorMode: Bool
    /// Nil when failed sign-ins are not limited (emulator mode by default).
    let throttle: SignInThrottle?
    /// Failed password sign-ins per client address; nil when not limited.
    let failedSignInsPerAddress: AddressRateLimit?
    /// Client sign-ups per client address; nil when not limited.
    let signUpsPerAddress: AddressRateLimit?
    /// Account emails asked for by apps, per client address and per recipient.
    let accountEmailsPerAddress: AddressRateLimit?
    let accountEmailsPerRecipient: AddressRateLimit?
    /// The server's clock, which the per-address windows run on.
    let serverClock: ServerClock
    /// Sends the outbox's emails when an SMTP server is configured.
    let mailer: MailDelivery?
    /// Password-reset and email codes issued and not yet used.
    let oobCodes = OobCodeBook()
    /// The Auth emulator's project settings, as `PATCH /emulator/v1/projects/{p}/config` left them.
    let emulatorSettings = EmulatorProjectSettings()
    let logger: Logger
    /// Token refreshes, written as `lastRefreshAt` in batches.
    let refreshes: RefreshRecorder

    package init(
        store: any UserStore, signer: TokenSigner, configuration: IdentityConfiguration, emulatorMode: Bool,
        clock: ServerClock = .system, logger: Logger = Logger(label: "hearth")
    ) {
        self.store = store
        self.signer = signer
        self.configuration = configuration
        self.emulatorMode = emulatorMode
        self.serverClock = clock
        self.logger = logger
        refreshes = RefreshRecorder(store: store, logger: logger)
        mailer = configuration.smtp.map { MailDelivery(configuration: $0, clock: clock, logger: logger) }
        let limit = configuration.failedSignInLimit ?? (emulatorMode ? nil : 10)
        throttle = limit.map { SignInThrottle(limit: $0, window: configuration.failedSignInWindow) }
        func perAddress(_ configured: Int?, _ window: Duration, default: Int = 100) -> AddressRateLimit? {
            let limit = configured ?? (emulatorMode ? 0 : `default`)
            return limit > 0 ? AddressRateLimit(limit: limit, window: window) : nil
        }
        failedSignInsPerAddress = perAddress(configuration.failedSignInsPerAddressLimit, configuration.failedSignInsPerAddressWindow)
        signUpsPerAddress = perAddress(configuration.signUpsPerAddressLimit, configuration.signUpsPerAddressWindow)
        accountEmailsPerAddress = perAddress(configuration.accountEmailsPerAddressLimit, configuration.accountEmailsWindow, default: 50)
        accountEmailsPerRecipient = perAddress(configuration.accountEmailsPerRecipientLimit, configuration.accountEmailsWindow, default: 10)
    }

    var hasher: PasswordHasher { configuration.passwordHashing }

    /// The key a client address is counted under (``RequestClient/addressKey(_:)``).
    static func addressKey(_ address: String?) -> String { RequestClient.addressKey(address) }
    var enumerationProtection: Bool {
        emulatorSettings.improvedEmailPrivacy ?? configuration.emailEnumerationProtection ?? !emulatorMode
    }

    static let customTokenAudience = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
    /// "REDACTED" in base64: what Firebase returns as `passwordHash` to anyone but an export.
    static let redactedPasswordHash = "UkVEQUNURUQ="
    static let reservedClaims: Set<String> = [
        "iss", "aud", "sub", "iat", "exp", "nbf", "jti", "nonce", "azp", "acr", "amr", "cnf", "auth_time", "firebase", "at_hash", "c_hash",
    ]

    // MARK: Tokens

    /// A session's tokens, with the configured lifetime.
    func tokens(idToken: String, refreshToken: String) -> SessionTokens {
        SessionTokens(idToken: idToken, refreshToken: refreshToken, expiresIn: configuration.idTokenLifetime)
    }

    /// Tells the database which of the user's tokens it must refuse from now on (``TokenRevocations``).
    func reportTokens(of user: UserRecord, project: String, ended: Bool? = nil, validSince: Int64? = nil, immediately: Bool = false) {
        signer.revocations?.update(
            project: project, uid: user.localId, validSince: validSince ?? user.validSince, ended: ended ?? user.disabled, immediately: immediately
        )
    }

    /// The user an ID token belongs to, and its claims. The token must be signed by this server (or be
    /// unsigned, in emulator mode), unexpired, for this project, of an existing enabled user, and not
    /// older than the user's `validSince`.
    func user(fromIDToken token: String, project: String) async throws -> (user: UserRecord, claims: JSONValue) {
        guard !token.isEmpty else { throw IdentityError.missingIDToken }
        let verified: VerifiedToken
        do {
            verified = try signer.verify(token, now: Date(), allowUnsigned: emulatorMode)
        } catch {
            throw IdentityError.invalidIDToken
        }
        guard let claims = verified.auth["token"], case .string(project)? = claims["aud"],
            case .string(let uid)? = claims["sub"] ?? claims["user_id"]
        else { throw IdentityError.invalidIDToken }
        guard let user = try await store.user(project: project, localId: uid) else { throw IdentityError.userNotFound }
        // Compared as doubles: a token's `iat` can be any JSON number (an unsigned token's in emulator mode).
        if let validSince = user.validSince, case .number(let issued)? = claims["iat"], !(issued >= Double(validSince)) {
            throw IdentityError.tokenExpired
        }
        if user.disabled { throw IdentityError.userDisabled }
        return (user, claims)
    }

    /// An ID token with Firebase's claims (auth-storage.md §4.1), signed by the server's key. Custom claims
    /// come first; the reserved claims win over them.
    func mintIDToken(_ user: UserRecord, project: String, provider: String, extraClaims: String?, authTime: Int64, now: OperationInstant) throws -> String {
        var identities: [(key: String, value: JSONValue)] = []
        if let email = user.email { identities.append(("email", .array([.string(email)]))) }
        if let phone = user.phoneNumber { identities.append(("phone", .array([.string(phone)]))) }
        let reserved: [(key: String, value: JSONValue?)] = [
            ("iss", .string(TokenSigner.firebaseIssuerPrefix + project)), ("aud", .string(project)),
            ("auth_time", .number(Double(authTime))), ("user_id", .string(user.localId)), ("sub", .string(user.localId)),
            ("iat", .number(Double(now.seconds))), ("exp", .number(Double(now.seconds + Int64(configuration.idTokenLifetime)))),
            ("email", user.email.map(JSONValue.string)), ("email_verified", user.email == nil ? nil : .bool(user.emailVerified)),
            ("phone_number", user.phoneNumber.map(JSONValue.string)), ("name", user.displayName.map(JSONValue.string)),
            ("picture", user.photoUrl.map(JSONValue.string)), ("provider_id", provider == "anonymous" ? .string("anonymous") : nil),
            ("firebase", .object([("identities", .object(identities)), ("sign_in_provider", .string(provider))])),
        ]
        var payload = compact(reserved)
        for text in [user.customAttributes, extraClaims].compactMap({ $0 }) {
            guard case .object(let members)? = try? JSONValue(parsing: text) else { continue }
            for member in members where !IdentityService.reservedClaims.contains(member.key) && !payload.contains(where: { $0.key == member.key }) {
                payload.append(member)
            }
        }
        return try signer.sign(payload: payload)
    }

    /// A new random refresh token (256 bits) and its stored form, which keeps only its SHA-256.
    func makeRefreshToken(project: String, localId: String, provider: String, extraClaims: String?, now: OperationInstant) -> (token: String, record: RefreshTokenRecord) {
        var generator = SystemRandomNumberGenerator()
        let token = Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let record = RefreshTokenRecord(
            tokenHash: IdentityService.digest(token), project: project, localId: localId, provider: provider,
            extraClaims: extraClaims, createdAt: now.millis, authTime: now.seconds
        )
        return (token, record)
    }

    static func digest(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    // MARK: Validation

    func validEmail(_ email: String) throws -> String {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, email.utf8.count <= 320 else { throw IdentityError.invalidEmail }
        // No control characters, spaces or angle brackets: addresses end up in SMTP commands and headers.
        guard SMTPConversation.isEnvelopeSafe(email) else { throw IdentityError.invalidEmail }
        return email.lowercased()
    }

    func hashNewPassword(_ password: String) async throws -> String {
        guard !password.isEmpty else { throw IdentityError.missingPassword }
        // Counted as JavaScript's `length` (UTF-16 code units), as Firebase counts: "👍👍👍" is 6.
        guard password.utf16.count >= 6 else { throw IdentityError.weakPassword }
        guard password.utf8.count <= 4096 else { throw IdentityError.invalid("WEAK_PASSWORD : Password should be at most 4096 bytes") }
        return try await hasher.hash(password)
    }

    func validPhoneNumber(_ phone: String) throws -> String {
        guard phone.hasPrefix("+"), phone.dropFirst().allSatisfy({ $0.isNumber || $0 == " " || $0 == "-" }), phone.count >= 4 else {
            throw IdentityError.invalid("INVALID_PHONE_NUMBER : Invalid format.")
        }
        return phone
    }

    /// Custom claims: a JSON object text of at most 1000 characters without reserved claim names.
    func validCustomClaims(_ text: String) throws -> String {
        guard text.count <= 1000 else { throw IdentityError.invalid("CLAIMS_TOO_LARGE") }
        guard case .object(let members)? = try? JSONValue(parsing: text) else { throw IdentityError.invalid("INVALID_CLAIMS") }
        for member in members where IdentityService.reservedClaims.contains(member.key) {
            throw IdentityError.invalid("FORBIDDEN_CLAIM : \(member.key)")
        }
        return text
    }

    /// The uid an admin asked for, validated, or a new random one.
    func newLocalID(_ requested: String?) throws -> String {
        if let localId = requested {
            guard !localId.isEmpty, localId.count <= 128 else { throw IdentityError.invalid("INVALID_LOCAL_ID") }
            return localId
        }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<28).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    static func rfc3339(_ millis: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }
}

/// One instant for a whole operation, in the two units Firebase uses. (Not a clock: the per-address
/// limits run on the injected ``ServerClock``; this only reads the wall time once.)
struct OperationInstant: Sendable {
    let millis: Int64
    var seconds: Int64 { millis / 1000 }

    init(_ date: Date = Date()) {
        millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}

/// The members whose value is present, in order.
func compact(_ members: [(key: String, value: JSONValue?)]) -> [(key: String, value: JSONValue)] {
    members.compactMap { member in member.value.map { (key: member.key, value: $0) } }
}

func nonEmpty(_ text: String?) -> String? {
    guard let text, !text.isEmpty else { return nil }
    return text
}

extension IdentityService {
    /// The Auth emulator's project config (`GET /emulator/v1/projects/{p}/config`, and
    /// `auth_export/config.json`).
    package var emulatorConfig: JSONValue {
        .object([
            ("signIn", .object([("allowDuplicateEmails", .bool(false))])),
            ("emailPrivacyConfig", .object([("enableImprovedEmailPrivacy", .bool(enumerationProtection))])),
        ])
    }

    /// Takes the settings of an exported config (`auth_export/config.json`) Hearth has.
    package func importEmulatorConfig(_ config: JSONValue) {
        if case .bool(let enabled)? = config["emailPrivacyConfig"]?["enableImprovedEmailPrivacy"] {
            emulatorSettings.improvedEmailPrivacy = enabled
        }
    }
}

/// What the Auth emulator's `PATCH /emulator/v1/projects/{p}/config` changes (emulator mode only):
/// email enumeration protection (`emailPrivacyConfig.enableImprovedEmailPrivacy`). Nil: the server's
/// setting.
final class EmulatorProjectSettings: Sendable {
    private let privacy = Mutex<Bool?>(nil)

    /// Set by a PATCH; nil until then.
    var improvedEmailPrivacy: Bool? {
        get { privacy.withLock { $0 } }
        set { privacy.withLock { $0 = newValue } }
    }
}
