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
    func signUp(_ request: SignUp.Request, project: String, caller: IdentityCaller, address: String? = nil) async throws -> SignUp.Result {
        let now = OperationInstant()
        if caller == .client, request.namesLocalId { throw IdentityError.invalid("UNEXPECTED_PARAMETER : User ID") }
        if let idToken = request.idToken {
            if request.namesLocalId { throw IdentityError.invalid("UNEXPECTED_PARAMETER : User ID") }
            return try await link(request, idToken: idToken, project: project, now: now)
        }
        if caller == .client, let signUpsPerAddress {
            // Every attempt counts, failed ones too: probing for taken emails by signing up is limited alike.
            let key = Self.addressKey(address)
            guard signUpsPerAddress.reserve(key, now: serverClock.elapsed) else { throw IdentityError.tooManyAttemptsFromAddress }
        }
        let emailMode = request.isPasswordAccount
        var user = UserRecord(localId: try newLocalID(caller == .admin ? request.localId : nil), createdAt: now.millis)
        if caller == .admin || emailMode {
            if let email = request.email { user.email = try validEmail(email) }
            if let password = request.password { user.passwordHash = try await hashNewPassword(password) }
            if caller == .client {
                guard user.email != nil else { throw IdentityError.missingEmail }
                guard user.passwordHash != nil else { throw IdentityError.missingPassword }
            }
            if user.passwordHash != nil {
                user.passwordUpdatedAt = now.millis
                user.validSince = now.seconds
            }
            user.displayName = nonEmpty(request.displayName)
        }
        if caller == .admin {
            user.photoUrl = nonEmpty(request.photoUrl)
            if let phone = nonEmpty(request.phoneNumber) { user.phoneNumber = try validPhoneNumber(phone) }
            user.emailVerified = request.emailVerified ?? false
            user.disabled = request.disabled ?? false
            try await store.create(user, project: project, issuing: nil)
            // A uid chosen by the admin may be one deleted before: its old tokens stay refused.
            if request.namesLocalId || user.disabled { reportTokens(of: user, project: project) }
            return SignUp.Result(user: user, tokens: nil)
        }
        user.lastLoginAt = now.millis
        let provider = emailMode ? "password" : "anonymous"
        let refresh = makeRefreshToken(project: project, localId: user.localId, provider: provider, extraClaims: nil, now: now)
        try await store.create(user, project: project, issuing: refresh.record)
        let idToken = try mintIDToken(user, project: project, provider: provider, extraClaims: nil, authTime: now.seconds, now: now)
        return SignUp.Result(user: user, tokens: tokens(idToken: idToken, refreshToken: refresh.token))
    }

    /// `accounts:signUp` with an `idToken`: an anonymous user gains an email and password.
    private func link(_ request: SignUp.Request, idToken: String, project: String, now: OperationInstant) async throws -> SignUp.Result {
        let (current, _) = try await user(fromIDToken: idToken, project: project)
        guard let rawEmail = request.email else { throw IdentityError.missingEmail }
        let email = try validEmail(rawEmail)
        guard let password = request.password, !password.isEmpty else { throw IdentityError.missingPassword }
        let hash = try await hashNewPassword(password)
        let displayName = nonEmpty(request.displayName)
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
        return SignUp.Result(user: user, tokens: tokens(idToken: idToken, refreshToken: refresh.token))
    }

    /// `accounts:signInWithPassword`.
    ///
    /// `address` is the client's: failed attempts count against it as well as against the account.
    func signInWithPassword(_ request: SignInWithPassword.Request, project: String, address: String? = nil) async throws -> SignInResult {
        let now = OperationInstant()
        guard let rawEmail = request.email else { throw IdentityError.missingEmail }
        let email = try validEmail(rawEmail)
        guard let password = request.password, !password.isEmpty else { throw IdentityError.missingPassword }
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
        return SignInResult(user: user, tokens: tokens(idToken: idToken, refreshToken: refresh.token))
    }

    /// `accounts:signInWithCustomToken`. Tokens signed by this server's key are accepted in every mode;
    /// unsigned ones (and bare JSON) only in emulator mode, as the Auth emulator and firebase-admin's
    /// emulator mode make them.
    func signInWithCustomToken(_ request: SignInWithCustomToken.Request, project: String) async throws -> SignInResult {
        let now = OperationInstant()
        guard let token = request.token, !token.isEmpty else { throw IdentityError.invalid("MISSING_CUSTOM_TOKEN") }
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
        return SignInResult(user: user, tokens: tokens(idToken: idToken, refreshToken: refresh.token), isNewUser: isNewUser)
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
    func refresh(_ request: TokenRefresh.Request, project: String) async throws -> TokenRefresh.Result {
        let now = OperationInstant()
        guard let grantType = request.grantType else { throw IdentityError.invalid("MISSING_GRANT_TYPE") }
        guard grantType == "refresh_token" else { throw IdentityError.invalid("INVALID_GRANT_TYPE") }
        guard let token = request.refreshToken, !token.isEmpty else { throw IdentityError.invalid("MISSING_REFRESH_TOKEN") }
        guard let record = try await store.refreshToken(hash: IdentityService.digest(token)), record.project == project,
            let user = try await store.user(project: project, localId: record.localId)
        else { throw IdentityError.invalid("INVALID_REFRESH_TOKEN") }
        if user.disabled { throw IdentityError.userDisabled }
        if record.generation < user.tokenGeneration { throw IdentityError.tokenExpired }
        let idToken = try mintIDToken(user, project: project, provider: record.provider, extraClaims: record.extraClaims, authTime: record.authTime, now: now)
        return TokenRefresh.Result(tokens: tokens(idToken: idToken, refreshToken: token), localId: user.localId)
    }

    /// A session's tokens, with the configured lifetime.
    func tokens(idToken: String, refreshToken: String) -> SessionTokens {
        SessionTokens(idToken: idToken, refreshToken: refreshToken, expiresIn: configuration.idTokenLifetime)
    }

    // MARK: Account management

    /// `accounts:lookup`: the caller's own user (client, by `idToken`), or any users by `localId` /
    /// `email` (admin). No match: `users` is absent, which the admin SDKs read as "not found".
    func lookup(_ request: AccountLookup.Request, project: String, caller: IdentityCaller) async throws -> [UserRecord] {
        var users: [UserRecord] = []
        if caller == .client || request.idToken != nil {
            guard let token = request.idToken else { throw IdentityError.missingIDToken }
            users.append(try await user(fromIDToken: token, project: project).user)
        } else {
            var seen = Set<String>()
            for localId in request.localIds {
                if let user = try await store.user(project: project, localId: localId), seen.insert(user.localId).inserted { users.append(user) }
            }
            for email in request.emails {
                if let user = try await store.user(project: project, email: email.lowercased()), seen.insert(user.localId).inserted { users.append(user) }
            }
            for phone in request.phoneNumbers {
                if let user = try await store.user(project: project, phoneNumber: phone), seen.insert(user.localId).inserted { users.append(user) }
            }
            if !request.federatedIds.isEmpty {
                let wanted = Set(request.federatedIds.map { $0.providerId + "\u{0}" + $0.rawId })
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
        return users
    }

    /// `accounts:update`: profile, email, password, custom claims, disabling, revocation.
    func update(_ request: AccountUpdate.Request, project: String, caller: IdentityCaller) async throws -> AccountUpdate.Result {
        let now = OperationInstant()
        let localId: String
        var provider: String?
        if let token = request.idToken {
            let (user, claims) = try await user(fromIDToken: token, project: project)
            localId = user.localId
            if case .string(let p)? = claims["firebase"]?["sign_in_provider"] { provider = p }
        } else if caller == .admin {
            guard let id = request.localId, !id.isEmpty else { throw IdentityError.missingLocalID }
            localId = id
        } else if let code = request.oobCode {
            return .oobCodeApplied(try await applyOobCode(code, project: project))
        } else {
            throw IdentityError.invalid("INVALID_REQ_TYPE : Unsupported request parameters.")
        }
        if caller == .client {
            if request.namesCustomAttributes { throw IdentityError.insufficientPermission }
            if request.namesDisableUser { throw IdentityError.invalid("OPERATION_NOT_ALLOWED") }
        }
        // Everything that can fail on its own is checked before the transaction.
        let email = try request.email.map(validEmail)
        var passwordHash: String?
        if let password = request.password { passwordHash = try await hashNewPassword(password) }
        let customAttributes = try (caller == .admin ? request.customAttributes : nil).map(validCustomClaims)
        let phoneNumber = try (caller == .admin ? nonEmpty(request.phoneNumber) : nil).map(validPhoneNumber)
        var requestedDeletions = Set(request.deleteAttributes)
        var unlinking = Set<String>()
        for provider in request.deleteProviders {
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
        let explicitValidSince = caller == .admin ? request.validSince : nil
        let displayName = request.displayName
        let photoUrl = request.photoUrl
        let emailVerified = caller == .admin ? request.emailVerified : nil
        let disable = caller == .admin ? request.disableUser : nil

        let newPasswordHash = passwordHash
        let bumps = passwordHash != nil || email != nil || explicitValidSince != nil
        if passwordHash != nil { provider = "password" }
        let refresh = bumps && provider != nil
            ? makeRefreshToken(project: project, localId: localId, provider: provider!, extraClaims: nil, now: now) : nil
        let user = try await store.update(project: project, localId: localId, issuing: refresh?.record) { user in
            switch displayName {
            case .set(let name)?: user.displayName = nonEmpty(name)
            case .remove?: user.displayName = nil
            case nil: break
            }
            switch photoUrl {
            case .set(let url)?: user.photoUrl = nonEmpty(url)
            case .remove?: user.photoUrl = nil
            case nil: break
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
        guard let refresh, let provider else { return .updated(user, tokens: nil) }
        let idToken = try mintIDToken(user, project: project, provider: provider, extraClaims: nil, authTime: now.seconds, now: now)
        return .updated(user, tokens: tokens(idToken: idToken, refreshToken: refresh.token))
    }

    /// `accounts:delete`: the caller's own account (`idToken`) or any (admin, `localId`).
    func delete(_ request: AccountDeletion.Request, project: String, caller: IdentityCaller) async throws {
        let localId: String
        if let token = request.idToken {
            localId = try await user(fromIDToken: token, project: project).user.localId
        } else if caller == .admin {
            guard let id = request.localId, !id.isEmpty else { throw IdentityError.missingLocalID }
            localId = id
        } else {
            throw IdentityError.missingIDToken
        }
        guard try await store.delete(project: project, localId: localId) else { throw IdentityError.userNotFound }
        signer.revocations?.update(project: project, uid: localId, validSince: nil, ended: true)
    }

    // MARK: Admin

    /// `GET projects/{p}/accounts:batchGet?maxResults=&nextPageToken=`: users ordered by `localId`.
    func batchGet(_ request: AccountDownload.Request, project: String) async throws -> AccountDownload.Result {
        var limit = 20
        if let value = request.maxResults {
            guard value >= -1, value != 0, value <= 1000 else { throw IdentityError.invalidMaxResults }
            limit = value == -1 ? Int.max - 1 : value
        }
        let after = nonEmpty(request.nextPageToken)
        let page = try await store.users(project: project, after: after, limit: limit + 1)
        let users = Array(page.prefix(limit))
        let nextPageToken = page.count > limit ? users.last?.localId : nil
        return AccountDownload.Result(users: users, nextPageToken: nextPageToken)
    }

    /// `projects/{p}/accounts:batchDelete`: at most 1000 users; without `force`, only disabled ones.
    /// Returns the users not deleted and why.
    func batchDelete(_ request: BatchDelete.Request, project: String) async throws -> [BatchDelete.Refusal] {
        let localIds = request.localIds
        guard localIds.count <= 1000 else { throw IdentityError.invalid("LOCAL_ID_LIST_EXCEEDS_LIMIT") }
        var refusals: [BatchDelete.Refusal] = []
        for (index, localId) in localIds.enumerated() {
            if !request.force, let user = try await store.user(project: project, localId: localId), !user.disabled {
                refusals.append(BatchDelete.Refusal(index: index, localId: localId, message: "NOT_DISABLED : Disable the account before batch deletion."))
                continue
            }
            if try await store.delete(project: project, localId: localId) {
                signer.revocations?.update(project: project, uid: localId, validSince: nil, ended: true)
            }
        }
        return refusals
    }

    /// `projects/{p}/accounts:query`: the count and (by default) every user, ordered by `localId`.
    func query(_ request: AccountQuery.Request, project: String) async throws -> AccountQuery.Result {
        if request.namesExpression || (request.offset ?? 0) != 0 { throw IdentityError.notImplemented }
        let count = try await store.count(project: project)
        guard request.returnUserInfo ?? true else { return AccountQuery.Result(count: count, users: nil) }
        let limit = Int(request.limit ?? 500)
        guard (1...500).contains(limit) else { throw IdentityError.invalid("INVALID_ARGUMENT : limit must be between 1 and 500.") }
        let users = try await store.users(project: project, after: nil, limit: limit)
        return AccountQuery.Result(count: count, users: users)
    }

    /// `projects/{p}:createSessionCookie`: a long-lived JWT with the ID token's claims, for servers
    /// that keep a session in a cookie (`verify_session_cookie`). Signed by the server's key; the
    /// database does not accept it as a credential (its issuer is not the ID-token issuer).
    func createSessionCookie(_ request: SessionCookie.Request, project: String) async throws -> String {
        let now = OperationInstant()
        guard let idToken = request.idToken else { throw IdentityError.missingIDToken }
        let duration = request.validDuration ?? 1_209_600
        guard (300...1_209_600).contains(duration) else { throw IdentityError.invalid("INVALID_DURATION") }
        let (_, claims) = try await user(fromIDToken: idToken, project: project)
        guard case .object(let members) = claims else { throw IdentityError.invalidIDToken }
        var payload: [(key: String, value: JSONValue)] = [
            ("iss", .string("https://session.firebase.google.com/" + project)),
            ("iat", .number(Double(now.seconds))), ("exp", .number(Double(now.seconds + duration))),
        ]
        for member in members where !["iss", "iat", "exp"].contains(member.key) { payload.append(member) }
        return try signer.sign(payload: payload)
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
