import Foundation
import HearthAccess
import HearthCore
import HearthStorage

/// Sign-up and sign-in: `accounts:signUp` (with anonymous-user linking), `accounts:signInWithPassword`,
/// `accounts:signInWithCustomToken`, and the secure-token refresh. Each returns the user and a new
/// session (``SessionTokens``).
extension IdentityService {
    /// `accounts:signUp` (anonymous, email/password, or linking an anonymous user), and the admin
    /// `projects/{p}/accounts` create, which returns no tokens.
    ///
    /// `address` is the client's (for the per-address sign-up limit); admin creations are not limited.
    /// A link that moves an account to another address mails the one it leaves an undo, when `links` is
    /// given (as `accounts:update`).
    func signUp(
        _ request: SignUp.Request, project: String, caller: IdentityCaller, address: String? = nil, links: ActionLinks? = nil, apiKey: String? = nil
    ) async throws -> SignUp.Result {
        let now = OperationInstant()
        if caller == .client, request.namesLocalId { throw IdentityError.invalid("UNEXPECTED_PARAMETER : User ID") }
        if caller == .client, let signUpsPerAddress {
            // Every attempt counts, failed ones too: probing for taken emails by signing up (or by linking
            // an email to an account) is limited alike.
            let key = Self.addressKey(address)
            guard signUpsPerAddress.reserve(key, now: serverClock.elapsed) else { throw IdentityError.tooManyAttemptsFromAddress }
        }
        if let idToken = request.idToken {
            if request.namesLocalId { throw IdentityError.invalid("UNEXPECTED_PARAMETER : User ID") }
            return try await link(request, idToken: idToken, project: project, now: now, links: links, apiKey: apiKey)
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
            // A uid chosen by the admin may be one deleted before: its old tokens stay refused (without a
            // password, nothing above set when tokens start to count). Only then: the emulator's mock
            // tokens (issued at 0) of a new uid stay accepted.
            let reused = request.namesLocalId && signer.revocations?.isTracked(project: project, uid: user.localId) == true
            if reused, user.validSince == nil { user.validSince = now.seconds }
            try await store.create(user, project: project, issuing: nil)
            if reused || user.disabled { reportTokens(of: user, project: project) }
            return SignUp.Result(user: user, tokens: nil)
        }
        user.lastLoginAt = now.millis
        user.lastRefreshAt = max(user.lastRefreshAt ?? 0, now.millis)
        let provider = emailMode ? "password" : "anonymous"
        let refresh = makeRefreshToken(project: project, localId: user.localId, provider: provider, extraClaims: nil, now: now)
        try await store.create(user, project: project, issuing: refresh.record)
        let idToken = try mintIDToken(user, project: project, provider: provider, extraClaims: nil, authTime: now.seconds, now: now)
        return SignUp.Result(user: user, tokens: tokens(idToken: idToken, refreshToken: refresh.token))
    }

    /// `accounts:signUp` with an `idToken`: an anonymous user gains an email and password.
    private func link(
        _ request: SignUp.Request, idToken: String, project: String, now: OperationInstant, links: ActionLinks?, apiKey: String?
    ) async throws -> SignUp.Result {
        let (current, _) = try await user(fromIDToken: idToken, project: project)
        guard let rawEmail = request.email else { throw IdentityError.missingEmail }
        let email = try validEmail(rawEmail)
        // An account that has an address moves to another only through a verified change while
        // enumeration protection is on (a stolen ID token must not take the account), as `accounts:update`.
        if enumerationProtection, let existing = current.email, existing != email { throw IdentityError.verifyNewEmailFirst }
        guard let password = request.password, !password.isEmpty else { throw IdentityError.missingPassword }
        let hash = try await hashNewPassword(password)
        let displayName = nonEmpty(request.displayName)
        let refresh = makeRefreshToken(project: project, localId: current.localId, provider: "password", extraClaims: nil, now: now)
        let recoveryCode = links == nil ? nil : Self.makeEmailRecoveryCode(localId: current.localId)
        let user = try await store.update(project: project, localId: current.localId, issuing: refresh.record) { user in
            // As `accounts:update`: sessions ended since the token was checked end this one too.
            if user.tokenGeneration != current.tokenGeneration { throw IdentityError.tokenExpired }
            let before = user.email
            let beforeVerified = user.emailVerified
            // An account that had an email or a password gets new ones, as `accounts:update` would give
            // them: its other sessions end, and the first address is kept.
            if user.email != nil || user.passwordHash != nil {
                if user.initialEmail == nil, user.email != nil, user.email != email { user.initialEmail = user.email }
                user.validSince = max(user.validSince ?? 0, now.seconds)
                user.tokenGeneration += 1
            }
            user.email = email
            user.passwordHash = hash
            user.passwordUpdatedAt = now.millis
            // A relink with the same address keeps it verified (else the next move would leave an address
            // that no longer counts as verified, and mail it no undo).
            if user.email != before { user.emailVerified = false }
            if let displayName { user.displayName = displayName }
            user.lastLoginAt = now.millis
            user.lastRefreshAt = max(user.lastRefreshAt ?? 0, now.millis)
            Self.recordAddressChange(code: recoveryCode, from: before, verified: beforeVerified, in: &user, now: now.millis)
        }
        if user.tokenGeneration != current.tokenGeneration { reportTokens(of: user, project: project) }
        await sendEmailRecovery(code: recoveryCode, of: user, project: project, links: links, apiKey: apiKey)
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
            // The password was checked against the account as it was before the (slow) hash: if it changed
            // since (a new password, a reset, a revocation, a disable), no tokens are issued, or they would
            // carry the new generation and outlive the change. (A concurrent sign-in's upgrade of the
            // same password's hash is no change.)
            guard user.passwordUpdatedAt == found.passwordUpdatedAt, user.tokenGeneration == found.tokenGeneration,
                user.validSince == found.validSince, !user.disabled
            else {
                throw enumerationProtection ? IdentityError.invalidLoginCredentials : IdentityError.invalidPassword
            }
            user.lastLoginAt = now.millis
            user.lastRefreshAt = max(user.lastRefreshAt ?? 0, now.millis)
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
        case .number(let number)?:
            // A whole number (the Auth emulator takes one); anything else, or one out of range, is no uid.
            guard number.isFinite, let whole = Int64(exactly: number) else { throw IdentityError.invalid("MISSING_IDENTIFIER") }
            uid = String(whole)
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
                user.lastRefreshAt = max(user.lastRefreshAt ?? 0, now.millis)
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
        // `lastRefreshAt` is written in batches, not a synced write for each refresh on the store sign-ins
        // wait for (a reconnecting fleet refreshes at once).
        refreshes.record(UserRefresh(project: project, localId: user.localId, at: now.millis))
        let idToken = try mintIDToken(user, project: project, provider: record.provider, extraClaims: record.extraClaims, authTime: record.authTime, now: now)
        return TokenRefresh.Result(tokens: tokens(idToken: idToken, refreshToken: token), localId: user.localId)
    }
}
