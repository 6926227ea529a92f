import Crypto
import Foundation
import HearthAccess
import HearthCore
import HearthStorage
import Logging

/// Who calls the Identity Toolkit API: an app with an API key, or the admin credential.
enum IdentityCaller: Sendable, Equatable {
    case client
    case admin
}

/// The Identity Toolkit operations (auth-storage.md §3): sign-up, sign-in, lookup, update, delete,
/// refresh and the admin calls, over a ``UserStore``. Stateless apart from the store, so one value is
/// shared by every request.
///
/// Every response is the JSON Firebase answers with; every failure is an ``IdentityError`` with
/// Firebase's code. Passwords and tokens are never logged.
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
    /// The server's clock, which the per-address windows run on.
    let serverClock: ServerClock
    /// Sends the outbox's emails when an SMTP server is configured.
    let mailer: MailDelivery?
    /// Password-reset and email codes issued and not yet used.
    let oobCodes = OobCodeBook()

    package init(
        store: any UserStore, signer: TokenSigner, configuration: IdentityConfiguration, emulatorMode: Bool,
        clock: ServerClock = .system, logger: Logger = Logger(label: "hearth")
    ) {
        self.store = store
        self.signer = signer
        self.configuration = configuration
        self.emulatorMode = emulatorMode
        self.serverClock = clock
        mailer = configuration.smtp.map { MailDelivery(configuration: $0, clock: clock, logger: logger) }
        let limit = configuration.failedSignInLimit ?? (emulatorMode ? nil : 10)
        throttle = limit.map { SignInThrottle(limit: $0, window: configuration.failedSignInWindow) }
        func perAddress(_ configured: Int?, _ window: Duration) -> AddressRateLimit? {
            let limit = configured ?? (emulatorMode ? 0 : 100)
            return limit > 0 ? AddressRateLimit(limit: limit, window: window) : nil
        }
        failedSignInsPerAddress = perAddress(configuration.failedSignInsPerAddressLimit, configuration.failedSignInsPerAddressWindow)
        signUpsPerAddress = perAddress(configuration.signUpsPerAddressLimit, configuration.signUpsPerAddressWindow)
    }

    var hasher: PasswordHasher { configuration.passwordHashing }

    /// The key a client address is counted under (``RequestClient/addressKey(_:)``).
    static func addressKey(_ address: String?) -> String { RequestClient.addressKey(address) }
    var enumerationProtection: Bool { configuration.emailEnumerationProtection ?? !emulatorMode }

    static let customTokenAudience = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
    /// "REDACTED" in base64: what Firebase returns as `passwordHash` to anyone but an export.
    static let redactedPasswordHash = "UkVEQUNURUQ="
    static let reservedClaims: Set<String> = [
        "iss", "aud", "sub", "iat", "exp", "nbf", "jti", "nonce", "azp", "acr", "amr", "cnf", "auth_time", "firebase", "at_hash", "c_hash",
    ]

    // MARK: Sign-up and sign-in

    /// `accounts:signUp` (anonymous, email/password, or linking an anonymous user), and the admin
    /// `projects/{p}/accounts` create, which returns no tokens.
    ///
    /// `address` is the client's (for the per-address sign-up limit); admin creations are not limited.
    func signUp(_ body: IdentityRequestBody, project: String, caller: IdentityCaller, address: String? = nil) async throws -> JSONValue {
        let now = OperationInstant()
        if caller == .client, body.has("localId") { throw IdentityError.invalid("UNEXPECTED_PARAMETER : User ID") }
        if body.has("idToken") {
            if body.has("localId") { throw IdentityError.invalid("UNEXPECTED_PARAMETER : User ID") }
            return try await link(body, project: project, now: now)
        }
        if caller == .client, let signUpsPerAddress {
            // Every attempt counts, failed ones too: probing for taken emails by signing up is limited alike.
            let key = Self.addressKey(address)
            guard signUpsPerAddress.reserve(key, now: serverClock.elapsed) else { throw IdentityError.tooManyAttemptsFromAddress }
        }
        let emailMode = body.has("email") || body.has("password")
        var user = UserRecord(localId: try newLocalID(body, caller: caller), createdAt: now.millis)
        if caller == .admin || emailMode {
            if let email = body.string("email") { user.email = try validEmail(email) }
            if let password = body.string("password") { user.passwordHash = try await hashNewPassword(password) }
            if caller == .client {
                guard user.email != nil else { throw IdentityError.missingEmail }
                guard user.passwordHash != nil else { throw IdentityError.missingPassword }
            }
            if user.passwordHash != nil {
                user.passwordUpdatedAt = now.millis
                user.validSince = now.seconds
            }
            user.displayName = nonEmpty(body.string("displayName"))
        }
        if caller == .admin {
            user.photoUrl = nonEmpty(body.string("photoUrl"))
            if let phone = nonEmpty(body.string("phoneNumber")) { user.phoneNumber = try validPhoneNumber(phone) }
            user.emailVerified = body.bool("emailVerified") ?? false
            user.disabled = body.bool("disabled") ?? body.bool("disableUser") ?? false
            try await store.create(user, project: project, issuing: nil)
            // A uid chosen by the admin may be one deleted before: its old tokens stay refused.
            if body.has("localId") || user.disabled { reportTokens(of: user, project: project) }
            return .object(compact([
                ("kind", .string("identitytoolkit#SignupNewUserResponse")), ("localId", .string(user.localId)),
                ("email", user.email.map(JSONValue.string)), ("displayName", user.displayName.map(JSONValue.string)),
            ]))
        }
        user.lastLoginAt = now.millis
        let provider = emailMode ? "password" : "anonymous"
        let refresh = makeRefreshToken(project: project, localId: user.localId, provider: provider, extraClaims: nil, now: now)
        try await store.create(user, project: project, issuing: refresh.record)
        let idToken = try mintIDToken(user, project: project, provider: provider, extraClaims: nil, authTime: now.seconds, now: now)
        return .object(compact([
            ("kind", .string("identitytoolkit#SignupNewUserResponse")), ("localId", .string(user.localId)),
            ("email", user.email.map(JSONValue.string)), ("displayName", user.displayName.map(JSONValue.string)),
            ("idToken", .string(idToken)), ("refreshToken", .string(refresh.token)), ("expiresIn", .string(String(configuration.idTokenLifetime))),
        ]))
    }

    /// `accounts:signUp` with an `idToken`: an anonymous user gains an email and password.
    private func link(_ body: IdentityRequestBody, project: String, now: OperationInstant) async throws -> JSONValue {
        let (current, _) = try await user(fromIDToken: body.string("idToken") ?? "", project: project)
        guard let rawEmail = body.string("email") else { throw IdentityError.missingEmail }
        let email = try validEmail(rawEmail)
        guard let password = body.string("password"), !password.isEmpty else { throw IdentityError.missingPassword }
        let hash = try await hashNewPassword(password)
        let displayName = nonEmpty(body.string("displayName"))
        let refresh = makeRefreshToken(project: project, localId: current.localId, provider: "password", extraClaims: nil, now: now)
        let user = try await store.update(project: project, localId: current.localId, issuing: refresh.record) { user in
            user.email = email
            user.passwordHash = hash
            user.passwordUpdatedAt = now.millis
            user.emailVerified = false
            if let displayName { user.displayName = displayName }
            user.lastLoginAt = now.millis
        }
        let idToken = try mintIDToken(user, project: project, provider: "password", extraClaims: nil, authTime: now.seconds, now: now)
        return .object(compact([
            ("kind", .string("identitytoolkit#SignupNewUserResponse")), ("localId", .string(user.localId)),
            ("email", user.email.map(JSONValue.string)), ("displayName", user.displayName.map(JSONValue.string)),
            ("idToken", .string(idToken)), ("refreshToken", .string(refresh.token)), ("expiresIn", .string(String(configuration.idTokenLifetime))),
        ]))
    }

    /// `accounts:signInWithPassword`.
    ///
    /// `address` is the client's: failed attempts count against it as well as against the account.
    func signInWithPassword(_ body: IdentityRequestBody, project: String, address: String? = nil) async throws -> JSONValue {
        let now = OperationInstant()
        guard let rawEmail = body.string("email") else { throw IdentityError.missingEmail }
        let email = try validEmail(rawEmail)
        guard let password = body.string("password"), !password.isEmpty else { throw IdentityError.missingPassword }
        let account = project + "/" + email
        let addressKey = Self.addressKey(address)
        // Counted as failures before the slow password check, per address and per account, so attempts
        // sent at once cannot all slip under the limits; taken back if the password is right (only
        // failures count).
        if let failedSignInsPerAddress, !failedSignInsPerAddress.reserve(addressKey, now: serverClock.elapsed) {
            throw IdentityError.tooManyAttemptsFromAddress
        }
        var ticket: Duration?
        if let throttle {
            ticket = throttle.reserve(account, now: serverClock.elapsed)
            if ticket == nil {
                failedSignInsPerAddress?.release(addressKey, now: serverClock.elapsed)
                throw IdentityError.tooManyAttempts
            }
        }
        guard let found = try await store.user(project: project, email: email) else {
            await hasher.verifyNothing(password)
            throw enumerationProtection ? IdentityError.invalidLoginCredentials : IdentityError.emailNotFound
        }
        guard let stored = found.passwordHash, await hasher.verify(password, against: stored) else {
            if found.disabled { throw IdentityError.userDisabled }
            throw enumerationProtection ? IdentityError.invalidLoginCredentials : IdentityError.invalidPassword
        }
        failedSignInsPerAddress?.release(addressKey, now: serverClock.elapsed)
        if let throttle, let ticket { throttle.refund(account, ticket: ticket) }
        if found.disabled { throw IdentityError.userDisabled }
        // A hash made with older parameters is replaced now that the password is known.
        let upgraded = hasher.needsRehash(stored) ? try await hasher.hash(password) : nil
        let refresh = makeRefreshToken(project: project, localId: found.localId, provider: "password", extraClaims: nil, now: now)
        let user = try await store.update(project: project, localId: found.localId, issuing: refresh.record) { user in
            user.lastLoginAt = now.millis
            user.lastRefreshAt = now.millis
            if let upgraded, user.passwordHash == stored { user.passwordHash = upgraded }
        }
        let idToken = try mintIDToken(user, project: project, provider: "password", extraClaims: nil, authTime: now.seconds, now: now)
        return .object(compact([
            ("kind", .string("identitytoolkit#VerifyPasswordResponse")), ("registered", .bool(true)),
            ("localId", .string(user.localId)), ("email", user.email.map(JSONValue.string)),
            ("displayName", .string(user.displayName ?? "")), ("profilePicture", user.photoUrl.map(JSONValue.string)),
            ("idToken", .string(idToken)), ("refreshToken", .string(refresh.token)), ("expiresIn", .string(String(configuration.idTokenLifetime))),
        ]))
    }

    /// `accounts:signInWithCustomToken`. Tokens signed by this server's key are accepted in every mode;
    /// unsigned ones (and bare JSON) only in emulator mode, as the Auth emulator and firebase-admin's
    /// emulator mode make them.
    func signInWithCustomToken(_ body: IdentityRequestBody, project: String) async throws -> JSONValue {
        let now = OperationInstant()
        guard let token = body.string("token"), !token.isEmpty else { throw IdentityError.invalid("MISSING_CUSTOM_TOKEN") }
        let payload = try customTokenPayload(token, now: now)
        let uid: String
        switch payload["uid"] ?? payload["user_id"] {
        case .string(let text)?: uid = text
        case .number(let number)?: uid = String(Int64(number))
        default: throw IdentityError.invalid("MISSING_IDENTIFIER")
        }
        guard !uid.isEmpty, uid.count <= 128 else { throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : The uid must be 1 to 128 characters.") }
        var extraClaims: String?
        if let claims = payload["claims"], claims != .null {
            guard case .object = claims else { throw IdentityError.invalid("INVALID_CLAIMS") }
            extraClaims = try validCustomClaims(claims.jsonText)
        }
        var isNewUser = false
        let refresh = makeRefreshToken(project: project, localId: uid, provider: "custom", extraClaims: extraClaims, now: now)
        let user: UserRecord
        if let existing = try await store.user(project: project, localId: uid) {
            if existing.disabled { throw IdentityError.userDisabled }
            user = try await store.update(project: project, localId: uid, issuing: refresh.record) { user in
                user.lastLoginAt = now.millis
                user.lastRefreshAt = now.millis
            }
        } else {
            var created = UserRecord(localId: uid, createdAt: now.millis)
            created.customAuth = true
            created.lastLoginAt = now.millis
            created.lastRefreshAt = now.millis
            try await store.create(created, project: project, issuing: refresh.record)
            user = created
            isNewUser = true
            reportTokens(of: user, project: project, ended: false, validSince: now.seconds)
        }
        let idToken = try mintIDToken(user, project: project, provider: "custom", extraClaims: extraClaims, authTime: now.seconds, now: now)
        return .object([
            ("kind", .string("identitytoolkit#VerifyCustomTokenResponse")), ("isNewUser", .bool(isNewUser)),
            ("idToken", .string(idToken)), ("refreshToken", .string(refresh.token)), ("expiresIn", .string(String(configuration.idTokenLifetime))),
        ])
    }

    private func customTokenPayload(_ token: String, now: OperationInstant) throws -> JSONValue {
        if token.hasPrefix("{") {
            guard emulatorMode else { throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : Invalid assertion format") }
            guard let payload = try? JSONValue(parsing: token), case .object = payload else {
                throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : ((Auth Emulator only accepts strict JSON or JWTs as fake custom tokens.))")
            }
            return payload
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let header = try? JSONValue(parsing: headerBytes),
            let payloadBytes = Base64URL.decode(parts[1]), let payload = try? JSONValue(parsing: payloadBytes), case .object = payload
        else { throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : Invalid assertion format") }
        switch header["alg"] {
        case .string("none")? where emulatorMode:
            break
        case .string("ES256")?:
            guard signer.hasValidSignature(token) else { throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : Invalid signature") }
            guard case .number(let expires)? = payload["exp"], expires + signer.allowedSkew > Double(now.seconds) else {
                throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : Token expired")
            }
        default:
            throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : Only custom tokens signed by this server's key are accepted")
        }
        guard TokenSigner.audience(payload["aud"], contains: IdentityService.customTokenAudience) else {
            throw IdentityError.invalid("INVALID_CUSTOM_TOKEN : ((Invalid aud (audience): \(payload["aud"]?.jsonText ?? "none")))")
        }
        return payload
    }

    /// `securetoken.googleapis.com/v1/token`: a new ID token for a refresh token.
    func refresh(_ body: IdentityRequestBody, project: String) async throws -> JSONValue {
        let now = OperationInstant()
        guard let grantType = body.string("grantType") else { throw IdentityError.invalid("MISSING_GRANT_TYPE") }
        guard grantType == "refresh_token" else { throw IdentityError.invalid("INVALID_GRANT_TYPE") }
        guard let token = body.string("refreshToken"), !token.isEmpty else { throw IdentityError.invalid("MISSING_REFRESH_TOKEN") }
        guard let record = try await store.refreshToken(hash: IdentityService.digest(token)), record.project == project,
            let user = try await store.user(project: project, localId: record.localId)
        else { throw IdentityError.invalid("INVALID_REFRESH_TOKEN") }
        if user.disabled { throw IdentityError.userDisabled }
        if record.generation < user.tokenGeneration { throw IdentityError.tokenExpired }
        let idToken = try mintIDToken(user, project: project, provider: record.provider, extraClaims: record.extraClaims, authTime: record.authTime, now: now)
        return .object([
            ("id_token", .string(idToken)), ("access_token", .string(idToken)), ("expires_in", .string(String(configuration.idTokenLifetime))),
            ("refresh_token", .string(token)), ("token_type", .string("Bearer")), ("user_id", .string(user.localId)),
            ("project_id", .string("12345")),
        ])
    }

    // MARK: Account management

    /// `accounts:lookup`: the caller's own user (client, by `idToken`), or any users by `localId` /
    /// `email` (admin). No match: `users` is absent, which the admin SDKs read as "not found".
    func lookup(_ body: IdentityRequestBody, project: String, caller: IdentityCaller) async throws -> JSONValue {
        var users: [UserRecord] = []
        if caller == .client || body.has("idToken") {
            guard let token = body.string("idToken") else { throw IdentityError.missingIDToken }
            users.append(try await user(fromIDToken: token, project: project).user)
        } else {
            var seen = Set<String>()
            for localId in body.strings("localId") {
                if let user = try await store.user(project: project, localId: localId), seen.insert(user.localId).inserted { users.append(user) }
            }
            for email in body.strings("email") {
                if let user = try await store.user(project: project, email: email.lowercased()), seen.insert(user.localId).inserted { users.append(user) }
            }
            for phone in body.strings("phoneNumber") {
                if let user = try await store.user(project: project, phoneNumber: phone), seen.insert(user.localId).inserted { users.append(user) }
            }
            if case .array(let federated)? = body.fields["federatedUserId"], !federated.isEmpty {
                let wanted = Set(federated.compactMap { id -> String? in
                    guard let provider = id["providerId"]?.stringValue, let rawId = id["rawId"]?.stringValue else { return nil }
                    return provider + "\u{0}" + rawId
                })
                // Admin lookups only, and rare: a scan rather than an index.
                var after: String?
                while true {
                    let page = try await store.users(project: project, after: after, limit: 500)
                    for user in page where (user.linkedProviders ?? []).contains(where: { wanted.contains($0.providerId + "\u{0}" + $0.rawId) }) {
                        if seen.insert(user.localId).inserted { users.append(user) }
                    }
                    guard page.count == 500, let last = page.last else { break }
                    after = last.localId
                }
            }
        }
        var members: [(key: String, value: JSONValue)] = [("kind", .string("identitytoolkit#GetAccountInfoResponse"))]
        if !users.isEmpty { members.append(("users", .array(users.map(userInfo)))) }
        return .object(members)
    }

    /// `accounts:update`: profile, email, password, custom claims, disabling, revocation.
    func update(_ body: IdentityRequestBody, project: String, caller: IdentityCaller) async throws -> JSONValue {
        let now = OperationInstant()
        let localId: String
        var provider: String?
        if let token = body.string("idToken") {
            let (user, claims) = try await user(fromIDToken: token, project: project)
            localId = user.localId
            if case .string(let p)? = claims["firebase"]?["sign_in_provider"] { provider = p }
        } else if caller == .admin {
            guard let id = body.string("localId"), !id.isEmpty else { throw IdentityError.missingLocalID }
            localId = id
        } else if let code = body.string("oobCode") {
            return try await applyOobCode(code, project: project)
        } else {
            throw IdentityError.invalid("INVALID_REQ_TYPE : Unsupported request parameters.")
        }
        if caller == .client {
            if body.has("customAttributes") { throw IdentityError.insufficientPermission }
            if body.has("disableUser") { throw IdentityError.invalid("OPERATION_NOT_ALLOWED") }
        }
        // Everything that can fail on its own is checked before the transaction.
        let email = try body.string("email").map(validEmail)
        var passwordHash: String?
        if let password = body.string("password") { passwordHash = try await hashNewPassword(password) }
        let customAttributes = try (caller == .admin ? body.string("customAttributes") : nil).map(validCustomClaims)
        let phoneNumber = try (caller == .admin ? nonEmpty(body.string("phoneNumber")) : nil).map(validPhoneNumber)
        var requestedDeletions = Set(body.strings("deleteAttribute"))
        var unlinking = Set<String>()
        for provider in body.strings("deleteProvider") {
            switch provider {
            case "phone": requestedDeletions.insert("PHONE_NUMBER")
            case "password": requestedDeletions.formUnion(["EMAIL", "PASSWORD"])
            default: unlinking.insert(provider)
            }
        }
        let unlinked = unlinking
        let deletions = requestedDeletions
        for name in deletions where !["DISPLAY_NAME", "PHOTO_URL", "PASSWORD", "EMAIL", "PHONE_NUMBER"].contains(name) {
            throw IdentityError.notImplemented
        }
        let explicitValidSince = caller == .admin ? body.int64("validSince") : nil
        let displayName = body.fields["displayName"]
        let photoUrl = body.fields["photoUrl"]
        let emailVerified = caller == .admin ? body.bool("emailVerified") : nil
        let disable = caller == .admin ? body.bool("disableUser") : nil

        let newPasswordHash = passwordHash
        let bumps = passwordHash != nil || email != nil || explicitValidSince != nil
        if passwordHash != nil { provider = "password" }
        let refresh = bumps && provider != nil
            ? makeRefreshToken(project: project, localId: localId, provider: provider!, extraClaims: nil, now: now) : nil
        let user = try await store.update(project: project, localId: localId, issuing: refresh?.record) { user in
            switch displayName {
            case .string(let name)?: user.displayName = name.isEmpty ? nil : name
            case .null?: user.displayName = nil
            default: break
            }
            switch photoUrl {
            case .string(let url)?: user.photoUrl = url.isEmpty ? nil : url
            case .null?: user.photoUrl = nil
            default: break
            }
            if !unlinked.isEmpty, var linked = user.linkedProviders {
                linked.removeAll { unlinked.contains($0.providerId) }
                user.linkedProviders = linked.isEmpty ? nil : linked
            }
            if deletions.contains("DISPLAY_NAME") { user.displayName = nil }
            if deletions.contains("PHOTO_URL") { user.photoUrl = nil }
            if deletions.contains("PASSWORD") { user.passwordHash = nil }
            if deletions.contains("PHONE_NUMBER") { user.phoneNumber = nil }
            if deletions.contains("EMAIL") {
                user.email = nil
                user.emailVerified = false
            }
            if let email, email != user.email {
                if user.initialEmail == nil, user.email != nil { user.initialEmail = user.email }
                user.email = email
                user.emailVerified = false
            }
            if let newPasswordHash {
                user.passwordHash = newPasswordHash
                user.passwordUpdatedAt = now.millis
            }
            if let emailVerified { user.emailVerified = emailVerified }
            if let disable { user.disabled = disable }
            if let customAttributes { user.customAttributes = customAttributes }
            if let phoneNumber { user.phoneNumber = phoneNumber }
            if bumps {
                user.validSince = explicitValidSince ?? now.seconds
                user.tokenGeneration += 1
            }
        }
        if bumps || disable != nil { reportTokens(of: user, project: project) }
        var members: [(key: String, value: JSONValue?)] = [
            ("kind", .string("identitytoolkit#SetAccountInfoResponse")), ("localId", .string(user.localId)),
            ("email", user.email.map(JSONValue.string)), ("displayName", user.displayName.map(JSONValue.string)),
            ("photoUrl", user.photoUrl.map(JSONValue.string)), ("emailVerified", .bool(user.emailVerified)),
            ("providerUserInfo", .array(providerUserInfo(user))),
            ("passwordHash", user.passwordHash == nil ? nil : .string(IdentityService.redactedPasswordHash)),
        ]
        if let refresh, let provider {
            let authTime = now.seconds
            let idToken = try mintIDToken(user, project: project, provider: provider, extraClaims: nil, authTime: authTime, now: now)
            members += [
                ("idToken", .string(idToken)), ("refreshToken", .string(refresh.token)),
                ("expiresIn", .string(String(configuration.idTokenLifetime))),
            ]
        }
        return .object(compact(members))
    }

    /// `accounts:delete`: the caller's own account (`idToken`) or any (admin, `localId`).
    func delete(_ body: IdentityRequestBody, project: String, caller: IdentityCaller) async throws -> JSONValue {
        let localId: String
        if let token = body.string("idToken") {
            localId = try await user(fromIDToken: token, project: project).user.localId
        } else if caller == .admin {
            guard let id = body.string("localId"), !id.isEmpty else { throw IdentityError.missingLocalID }
            localId = id
        } else {
            throw IdentityError.missingIDToken
        }
        guard try await store.delete(project: project, localId: localId) else { throw IdentityError.userNotFound }
        signer.revocations?.update(project: project, uid: localId, validSince: nil, ended: true)
        return .object([("kind", .string("identitytoolkit#DeleteAccountResponse"))])
    }

    // MARK: Admin

    /// `GET projects/{p}/accounts:batchGet?maxResults=&nextPageToken=`: users ordered by `localId`.
    func batchGet(_ query: IdentityRequestBody, project: String) async throws -> JSONValue {
        var limit = 20
        if let text = query.string("maxResults") {
            guard let value = Int(text), value >= -1, value != 0, value <= 1000 else {
                throw IdentityError.invalid("INVALID_ARGUMENT : maxResults must be between 1 and 1000.")
            }
            limit = value == -1 ? Int.max - 1 : value
        }
        let after = nonEmpty(query.string("nextPageToken"))
        let page = try await store.users(project: project, after: after, limit: limit + 1)
        let users = Array(page.prefix(limit))
        var members: [(key: String, value: JSONValue)] = [
            ("kind", .string("identitytoolkit#DownloadAccountResponse")), ("users", .array(users.map(downloadedUserInfo))),
        ]
        if page.count > limit, let last = users.last { members.append(("nextPageToken", .string(last.localId))) }
        return .object(members)
    }

    /// `projects/{p}/accounts:batchDelete`: at most 1000 users; without `force`, only disabled ones.
    func batchDelete(_ body: IdentityRequestBody, project: String) async throws -> JSONValue {
        let localIds = body.strings("localIds")
        guard localIds.count <= 1000 else { throw IdentityError.invalid("LOCAL_ID_LIST_EXCEEDS_LIMIT") }
        let force = body.bool("force") ?? false
        var errors: [JSONValue] = []
        for (index, localId) in localIds.enumerated() {
            if !force, let user = try await store.user(project: project, localId: localId), !user.disabled {
                errors.append(.object([
                    ("index", .number(Double(index))), ("localId", .string(localId)),
                    ("message", .string("NOT_DISABLED : Disable the account before batch deletion.")),
                ]))
                continue
            }
            if try await store.delete(project: project, localId: localId) {
                signer.revocations?.update(project: project, uid: localId, validSince: nil, ended: true)
            }
        }
        var members: [(key: String, value: JSONValue)] = [("kind", .string("identitytoolkit#BatchDeleteAccountsResponse"))]
        if !errors.isEmpty { members.append(("errors", .array(errors))) }
        return .object(members)
    }

    /// `projects/{p}/accounts:query`: the count and (by default) every user, ordered by `localId`.
    func query(_ body: IdentityRequestBody, project: String) async throws -> JSONValue {
        if body.has("expression") || (body.int64("offset") ?? 0) != 0 { throw IdentityError.notImplemented }
        let count = try await store.count(project: project)
        var members: [(key: String, value: JSONValue)] = [("recordsCount", .string(String(count)))]
        if body.bool("returnUserInfo") ?? true {
            let limit = Int(body.int64("limit") ?? 500)
            guard (1...500).contains(limit) else { throw IdentityError.invalid("INVALID_ARGUMENT : limit must be between 1 and 500.") }
            let users = try await store.users(project: project, after: nil, limit: limit)
            members.append(("userInfo", .array(users.map(userInfo))))
        }
        return .object(members)
    }

    /// `projects/{p}:createSessionCookie`: a long-lived JWT with the ID token's claims, for servers
    /// that keep a session in a cookie (`verify_session_cookie`). Signed by the server's key; the
    /// database does not accept it as a credential (its issuer is not the ID-token issuer).
    func createSessionCookie(_ body: IdentityRequestBody, project: String) async throws -> JSONValue {
        let now = OperationInstant()
        guard let idToken = body.string("idToken") else { throw IdentityError.missingIDToken }
        let duration = body.int64("validDuration") ?? 1_209_600
        guard (300...1_209_600).contains(duration) else { throw IdentityError.invalid("INVALID_DURATION") }
        let (_, claims) = try await user(fromIDToken: idToken, project: project)
        guard case .object(let members) = claims else { throw IdentityError.invalidIDToken }
        var payload: [(key: String, value: JSONValue)] = [
            ("iss", .string("https://session.firebase.google.com/" + project)),
            ("iat", .number(Double(now.seconds))), ("exp", .number(Double(now.seconds + duration))),
        ]
        for member in members where !["iss", "iat", "exp"].contains(member.key) { payload.append(member) }
        return .object([("sessionCookie", .string(try signer.sign(payload: payload)))])
    }

    /// `GET /v1/projects`: what the web SDK asks before popup and redirect sign-ins.
    /// `authorizedDomains` are where a `continueUrl` may lead (``ActionLinks``); the action page asks
    /// for them before it follows one.
    func projectConfig(authorizedDomains: [String] = ["localhost", "127.0.0.1"]) -> JSONValue {
        .object([("projectId", .string("12345")), ("authorizedDomains", .array(authorizedDomains.map(JSONValue.string)))])
    }

    // MARK: Tokens

    /// Tells the database which of the user's tokens it must refuse from now on (``TokenRevocations``).
    func reportTokens(of user: UserRecord, project: String, ended: Bool? = nil, validSince: Int64? = nil) {
        signer.revocations?.update(project: project, uid: user.localId, validSince: validSince ?? user.validSince, ended: ended ?? user.disabled)
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
        if let validSince = user.validSince, case .number(let issued)? = claims["iat"], Int64(issued) < validSince {
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
        guard password.count >= 6 else { throw IdentityError.weakPassword }
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

    func newLocalID(_ body: IdentityRequestBody, caller: IdentityCaller) throws -> String {
        if caller == .admin, let localId = body.string("localId") {
            guard !localId.isEmpty, localId.count <= 128 else { throw IdentityError.invalid("INVALID_LOCAL_ID") }
            return localId
        }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<28).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    // MARK: Responses

    /// A user as `accounts:lookup` and the admin listings return it (Firebase's `UserInfo`).
    func userInfo(_ user: UserRecord) -> JSONValue {
        .object(compact([
            ("localId", .string(user.localId)), ("email", user.email.map(JSONValue.string)),
            ("emailVerified", .bool(user.emailVerified)), ("displayName", user.displayName.map(JSONValue.string)),
            ("photoUrl", user.photoUrl.map(JSONValue.string)), ("phoneNumber", user.phoneNumber.map(JSONValue.string)),
            ("passwordHash", user.passwordHash == nil ? nil : .string(IdentityService.redactedPasswordHash)),
            ("passwordUpdatedAt", user.passwordUpdatedAt.map { .number(Double($0)) }),
            ("providerUserInfo", .array(providerUserInfo(user))),
            ("validSince", user.validSince.map { .string(String($0)) }), ("disabled", .bool(user.disabled)),
            ("createdAt", .string(String(user.createdAt))), ("lastLoginAt", user.lastLoginAt.map { .string(String($0)) }),
            ("lastRefreshAt", user.lastRefreshAt.map { .string(IdentityService.rfc3339($0)) }),
            ("customAttributes", user.customAttributes.map(JSONValue.string)),
            ("customAuth", user.customAuth ? .bool(true) : nil), ("initialEmail", user.initialEmail.map(JSONValue.string)),
        ]))
    }

    /// A user as an admin's download (`accounts:batchGet`, firebase-admin's `list_users`) shows it: as
    /// lookup does, plus the password's hash and salt in base64, which Firebase gives an admin so users
    /// can move elsewhere. For Hearth's scrypt they are the derived key and the salt (Firebase's
    /// `STANDARD_SCRYPT` with the cost in the stored hash, 32 bytes); for an imported Firebase hash, its
    /// hash and salt (Firebase's `SCRYPT` with the project's parameters).
    func downloadedUserInfo(_ user: UserRecord) -> JSONValue {
        guard case .object(var members) = userInfo(user), let stored = user.passwordHash else { return userInfo(user) }
        let parts: (hash: [UInt8], salt: [UInt8])?
        if let parsed = PasswordHasher.parse(stored) {
            parts = (parsed.key, parsed.salt)
        } else if let imported = FirebaseScryptHash(stored) {
            parts = (imported.hash, imported.salt)
        } else {
            parts = nil
        }
        guard let parts, let index = members.firstIndex(where: { $0.key == "passwordHash" }) else { return .object(members) }
        members[index].value = .string(Data(parts.hash).base64EncodedString())
        members.insert((key: "salt", value: .string(Data(parts.salt).base64EncodedString())), at: index + 1)
        return .object(members)
    }

    func providerUserInfo(_ user: UserRecord) -> [JSONValue] {
        var providers: [JSONValue] = []
        if let email = user.email, user.passwordHash != nil {
            providers.append(.object(compact([
                ("providerId", .string("password")), ("email", .string(email)), ("federatedId", .string(email)), ("rawId", .string(email)),
                ("displayName", user.displayName.map(JSONValue.string)), ("photoUrl", user.photoUrl.map(JSONValue.string)),
            ])))
        }
        if let phone = user.phoneNumber {
            providers.append(.object([("providerId", .string("phone")), ("phoneNumber", .string(phone)), ("rawId", .string(phone))]))
        }
        for linked in user.linkedProviders ?? [] {
            providers.append(.object(compact([
                ("providerId", .string(linked.providerId)), ("rawId", .string(linked.rawId)), ("federatedId", .string(linked.rawId)),
                ("email", linked.email.map(JSONValue.string)), ("displayName", linked.displayName.map(JSONValue.string)),
                ("photoUrl", linked.photoUrl.map(JSONValue.string)),
            ])))
        }
        return providers
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
