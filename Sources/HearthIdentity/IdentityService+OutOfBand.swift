import Foundation
import HearthAccess
import HearthCore
import HearthProtocol
import HearthStorage

/// The out-of-band flows: `accounts:sendOobCode` (password reset, email verification, email change),
/// `accounts:resetPassword`, and `accounts:update` with an `oobCode`.
extension IdentityService {
    static let oobModes = [
        "PASSWORD_RESET": "resetPassword", "VERIFY_EMAIL": "verifyEmail", "VERIFY_AND_CHANGE_EMAIL": "verifyAndChangeEmail", "EMAIL_SIGNIN": "signIn",
        "RECOVER_EMAIL": "recoverEmail",
    ]

    /// The link a user would follow: Hearth's action page (`/__/auth/action`, Firebase Hosting's
    /// default handler path); `origin` is the configured one (``ActionLinks/origin``), never the request's.
    func oobLink(code: String, requestType: String, origin: String, apiKey: String? = nil, continueURL: String? = nil) -> String {
        var link = "\(origin)/__/auth/action?mode=\(Self.oobModes[requestType] ?? "action")&oobCode=\(code)&apiKey=\(PercentEncoding.component(apiKey ?? "hearth"))&lang=en"
        if let continueURL { link += "&continueUrl=\(PercentEncoding.component(continueURL))" }
        return link
    }

    /// The mail a user gets for an out-of-band code, in Firebase's default wording.
    static func email(for entry: OobCodeBook.Entry, link: String, sentAt: Int64) -> EmailMessage {
        let app = entry.project
        let (to, subject, text): (String, String, String)
        switch entry.requestType {
        case "PASSWORD_RESET":
            (to, subject, text) = (entry.email, "Reset your password for \(app)",
                "Hello,\n\nFollow this link to reset your \(app) password for your \(entry.email) account.\n\n\(link)\n\n"
                + "If you didn't ask to reset your password, you can ignore this email.\n\nThanks,\n\nYour \(app) team")
        case "EMAIL_SIGNIN":
            (to, subject, text) = (entry.email, "Sign in to \(app) requested at \(IdentityService.rfc3339(sentAt))",
                "Hello,\n\nWe received a request to sign in to \(app) using this email address. If you want to sign in with your \(entry.email) account, follow this link:\n\n\(link)\n\n"
                + "If you did not request this link, you can safely ignore this email.\n\nThanks,\n\nYour \(app) team")
        case "VERIFY_AND_CHANGE_EMAIL":
            let newEmail = entry.newEmail ?? entry.email
            (to, subject, text) = (newEmail, "Verify your new email for \(app)",
                "Hello,\n\nFollow this link to verify your new email address, \(newEmail), for \(app).\n\n\(link)\n\n"
                + "If you didn't ask to change your email, you can ignore this email.\n\nThanks,\n\nYour \(app) team")
        case "RECOVER_EMAIL":
            let change = entry.newEmail.map { "was changed to \($0)" } ?? "was removed from your account"
            (to, subject, text) = (entry.email, "Your sign-in email was changed for \(app)",
                "Hello,\n\nYour sign-in email for \(app) \(change).\n\n"
                + "If you didn't ask to change your email, follow this link to reset your sign-in email.\n\n\(link)\n\nThanks,\n\nYour \(app) team")
        default:
            (to, subject, text) = (entry.email, "Verify your email for \(app)",
                "Hello,\n\nFollow this link to verify your email address.\n\n\(link)\n\n"
                + "If you didn't ask to verify this address, you can ignore this email.\n\nThanks,\n\nYour \(app) team")
        }
        return EmailMessage(project: entry.project, to: to, subject: subject, body: text, link: link, requestType: entry.requestType, sentAt: sentAt)
    }

    /// `accounts:sendOobCode`.
    ///
    /// An app's requests are limited per client address and per recipient (an email each, sent to
    /// someone else's inbox, and a code kept for an hour).
    func sendOobCode(
        _ request: SendOobCode.Request, project: String, caller: IdentityCaller, links: ActionLinks, address: String? = nil
    ) async throws -> SendOobCode.Result {
        let now = OperationInstant()
        guard let requestType = request.requestType else { throw IdentityError.invalid("MISSING_REQ_TYPE") }
        if caller == .client, let accountEmailsPerAddress {
            guard accountEmailsPerAddress.reserve(Self.addressKey(address), now: serverClock.elapsed) else {
                throw IdentityError.tooManyAttemptsFromAddress
            }
        }
        // The page may send the user on to `continueUrl`: only to an authorized domain (Firebase's rule).
        let continueURL = nonEmpty(request.continueUrl)
        if let continueURL {
            switch links.check(continueURL: continueURL) {
            case .authorized: break
            case .invalid: throw IdentityError.invalidContinueURI
            case .unauthorized: throw IdentityError.unauthorizedDomain
            }
        }
        let entry: OobCodeBook.Entry
        switch requestType {
        case "PASSWORD_RESET":
            guard let raw = request.email else { throw IdentityError.missingEmail }
            let email = try validEmail(raw)
            // Counted before the lookup: an address without an account reaches the limit alike, so the
            // limit tells nothing about whether the account exists.
            try limitRecipient(email, project: project, caller: caller, requestType: requestType)
            guard let user = try await store.user(project: project, email: email) else {
                // With enumeration protection the answer does not tell whether the account exists.
                if enumerationProtection && caller == .client { return SendOobCode.Result(email: email) }
                throw IdentityError.emailNotFound
            }
            entry = .init(project: project, localId: user.localId, email: email, requestType: requestType)
        case "VERIFY_EMAIL", "VERIFY_AND_CHANGE_EMAIL":
            let user: UserRecord
            if let token = request.idToken {
                user = try await self.user(fromIDToken: token, project: project).user
            } else if caller == .admin, let raw = request.email {
                guard let found = try await store.user(project: project, email: try validEmail(raw)) else { throw IdentityError.emailNotFound }
                user = found
            } else {
                throw IdentityError.missingIDToken
            }
            guard let email = user.email else { throw IdentityError.missingEmail }
            var newEmail: String?
            if requestType == "VERIFY_AND_CHANGE_EMAIL" {
                guard let raw = request.newEmail else { throw IdentityError.invalid("MISSING_NEW_EMAIL") }
                newEmail = try validEmail(raw)
                // Counted before the lookup, as a reset: a taken address reaches the limit alike.
                try limitRecipient(newEmail!, project: project, caller: caller, requestType: requestType)
                if try await store.user(project: project, email: newEmail!) != nil {
                    // With enumeration protection the answer does not tell that the address is taken:
                    // nothing is sent (applying a code for it would fail with EMAIL_EXISTS anyway).
                    if enumerationProtection && caller == .client { return SendOobCode.Result(email: email) }
                    throw IdentityError.emailExists
                }
            }
            entry = .init(
                project: project, localId: user.localId, email: email, requestType: requestType, newEmail: newEmail,
                recoveredAt: user.emailRecoveredAt
            )
        case "EMAIL_SIGNIN":
            // Passwordless sign-in is off by default in Firebase projects: here apps may ask for links in
            // emulator mode; the admin (firebase-admin's generate_sign_in_with_email_link) always.
            guard caller == .admin || emulatorMode else { throw IdentityError.invalid("OPERATION_NOT_ALLOWED") }
            guard let raw = request.email else { throw IdentityError.missingEmail }
            let email = try validEmail(raw)
            // A link may create the account, as Firebase's does; the user need not exist yet.
            let existing = try await store.user(project: project, email: email)
            entry = .init(project: project, localId: existing?.localId ?? "", email: email, requestType: requestType)
        default:
            throw IdentityError.invalid("INVALID_REQ_TYPE : \(requestType)")
        }
        if requestType != "PASSWORD_RESET" && requestType != "VERIFY_AND_CHANGE_EMAIL" {
            try limitRecipient(entry.email, project: project, caller: caller, requestType: requestType)
        }
        let code = oobCodes.issue(entry, now: now.millis)
        let link = oobLink(code: code, requestType: requestType, origin: links.origin, apiKey: request.apiKey, continueURL: continueURL)
        if caller == .admin, request.returnOobLink {
            // The admin asked for the link (firebase-admin's generate_*_link): no mail, as Firebase does.
            return SendOobCode.Result(email: entry.email, link: SendOobCode.IssuedLink(oobLink: link, oobCode: code))
        }
        let message = Self.email(for: entry, link: link, sentAt: now.millis)
        try await store.recordEmail(message)
        mailer?.enqueue(message)
        return SendOobCode.Result(email: entry.email)
    }

    /// `accounts:resetPassword`: with only `oobCode`, tells what the code is for; with `newPassword`,
    /// sets it (and revokes the account's sessions) and uses the code.
    func resetPassword(_ request: PasswordReset.Request, project: String) async throws -> PasswordReset.Result {
        let now = OperationInstant()
        guard let code = request.oobCode, !code.isEmpty else { throw IdentityError.invalid("MISSING_OOB_CODE") }
        if Self.isEmailRecoveryCode(code) {
            // An undo of an address change is told about here, and used by `accounts:update`.
            guard request.newPassword == nil else { throw IdentityError.invalid("INVALID_OOB_CODE") }
            let recovery = try await peekEmailRecovery(code, project: project)
            return PasswordReset.Result(email: recovery.email, requestType: "RECOVER_EMAIL", newEmail: recovery.changedTo)
        }
        guard let newPassword = request.newPassword else {
            let entry = try Self.valid(oobCodes.peek(code, now: now.millis), project: project)
            return PasswordReset.Result(
                email: entry.requestType == "EMAIL_SIGNIN" ? nil : entry.email, requestType: entry.requestType, newEmail: entry.newEmail
            )
        }
        // The code first: hashing a password costs tens of milliseconds of a core, which no one without
        // a code may spend (as the emulator, which refuses an unknown code before looking at the password).
        guard case .valid(let peeked) = oobCodes.peek(code, now: now.millis), peeked.requestType == "PASSWORD_RESET" else {
            _ = try Self.valid(oobCodes.peek(code, now: now.millis), project: project)
            throw IdentityError.invalid("INVALID_OOB_CODE")
        }
        _ = try Self.valid(.valid(peeked), project: project)
        let hash = try await hashNewPassword(newPassword)
        let entry = try Self.valid(oobCodes.take(code, now: now.millis), project: project)
        let user = try await store.update(project: project, localId: entry.localId, issuing: nil) { user in
            // The code was sent to an address: once the account has moved to another, it resets nothing.
            guard user.email == entry.email else { throw IdentityError.invalid("INVALID_OOB_CODE") }
            user.passwordHash = hash
            user.passwordUpdatedAt = now.millis
            // Following the link proves the address.
            if user.email == entry.email { user.emailVerified = true }
            user.validSince = max(user.validSince ?? 0, now.seconds)
            user.tokenGeneration += 1
        }
        reportTokens(of: user, project: project)
        // "You can immediately restore it by resetting your password" (the lock's message).
        throttle?.clear(project + "/" + entry.email)
        return PasswordReset.Result(email: entry.email, requestType: "PASSWORD_RESET")
    }

    /// `accounts:update` with an `oobCode`: verifies the email, moves the account to the new one (and
    /// mails the address it leaves an undo, when `links` is given), or undoes a move. Returns the account
    /// as stored after the change.
    func applyOobCode(_ code: String, project: String, links: ActionLinks? = nil, apiKey: String? = nil) async throws -> UserRecord {
        if Self.isEmailRecoveryCode(code) { return try await applyEmailRecovery(code, project: project) }
        let now = OperationInstant()
        // Only verification and email-change codes apply here; others stay usable where they belong.
        let peeked = try Self.valid(oobCodes.peek(code, now: now.millis), project: project)
        guard peeked.requestType == "VERIFY_EMAIL" || peeked.requestType == "VERIFY_AND_CHANGE_EMAIL" else {
            throw IdentityError.invalid("INVALID_OOB_CODE")
        }
        let entry = try Self.valid(oobCodes.take(code, now: now.millis), project: project)
        let recoveryCode = entry.newEmail == nil ? nil : Self.makeEmailRecoveryCode(localId: entry.localId)
        let user = try await store.update(project: project, localId: entry.localId, issuing: nil) { user in
            if let newEmail = entry.newEmail {
                // A change requested for an address the account has since left applies no more, nor one
                // asked for before an undo moved the account back (whoever moved it may have kept one).
                guard user.email == entry.email, entry.recoveredAt == user.emailRecoveredAt else {
                    throw IdentityError.invalid("INVALID_OOB_CODE")
                }
                if user.initialEmail == nil, user.email != nil { user.initialEmail = user.email }
                let wasVerified = user.emailVerified
                user.email = newEmail
                Self.recordAddressChange(code: recoveryCode, from: entry.email, verified: wasVerified, in: &user, now: now.millis)
                user.validSince = max(user.validSince ?? 0, now.seconds)
                user.tokenGeneration += 1
            } else if user.email != entry.email {
                // Sent to an address the account has since left: it verifies nothing, and says so.
                throw IdentityError.invalid("INVALID_OOB_CODE")
            }
            user.emailVerified = true
        }
        if entry.newEmail != nil { reportTokens(of: user, project: project) }
        await sendEmailRecovery(code: recoveryCode, of: user, project: project, links: links, apiKey: apiKey)
        return user
    }

    /// Counts an app's account email to `email` (``IdentityConfiguration/accountEmailsPerRecipientLimit``).
    private func limitRecipient(_ email: String, project: String, caller: IdentityCaller, requestType: String) throws {
        guard caller == .client, let accountEmailsPerRecipient else { return }
        guard accountEmailsPerRecipient.reserve(project + "/" + email, now: serverClock.elapsed) else {
            throw requestType == "PASSWORD_RESET" ? IdentityError.invalid("RESET_PASSWORD_EXCEED_LIMIT") : IdentityError.tooManyAttemptsFromAddress
        }
    }

    static func valid(_ lookup: OobCodeBook.Lookup, project: String) throws -> OobCodeBook.Entry {
        switch lookup {
        case .valid(let entry) where entry.project == project: return entry
        case .expired: throw IdentityError.invalid("EXPIRED_OOB_CODE")
        default: throw IdentityError.invalid("INVALID_OOB_CODE")
        }
    }

    /// `accounts:signInWithEmailLink`: an `EMAIL_SIGNIN` code and its email sign the user in (creating
    /// the account if there is none) and verify the email, as following a link proves the address.
    func signInWithEmailLink(_ request: SignInWithEmailLink.Request, project: String) async throws -> SignInResult {
        let now = OperationInstant()
        guard let code = request.oobCode, !code.isEmpty else { throw IdentityError.invalid("MISSING_OOB_CODE") }
        guard let raw = request.email else { throw IdentityError.missingEmail }
        let email = try validEmail(raw)
        if request.idToken != nil { throw IdentityError.notImplemented }
        guard case .valid(let peeked) = oobCodes.peek(code, now: now.millis), peeked.requestType == "EMAIL_SIGNIN" else {
            _ = try Self.valid(oobCodes.peek(code, now: now.millis), project: project)
            throw IdentityError.invalid("INVALID_OOB_CODE")
        }
        guard peeked.email == email else { throw IdentityError.invalid("INVALID_EMAIL : The email provided does not match the sign-in email address.") }
        if let existing = try await store.user(project: project, email: email), existing.disabled { throw IdentityError.userDisabled }
        _ = try Self.valid(oobCodes.take(code, now: now.millis), project: project)
        let user: UserRecord
        let isNewUser: Bool
        if let existing = try await store.user(project: project, email: email) {
            let refresh = makeRefreshToken(project: project, localId: existing.localId, provider: "password", extraClaims: nil, now: now)
            user = try await store.update(project: project, localId: existing.localId, issuing: refresh.record) { user in
                user.emailVerified = true
                user.emailLinkSignin = true
                user.lastLoginAt = now.millis
                user.lastRefreshAt = max(user.lastRefreshAt ?? 0, now.millis)
            }
            isNewUser = false
            return try signedInByEmailLink(user, refresh: refresh.token, isNewUser: isNewUser, project: project, now: now)
        }
        var created = UserRecord(localId: try newLocalID(nil), createdAt: now.millis)
        created.email = email
        created.emailVerified = true
        created.emailLinkSignin = true
        created.lastLoginAt = now.millis
        created.lastRefreshAt = now.millis
        let refresh = makeRefreshToken(project: project, localId: created.localId, provider: "password", extraClaims: nil, now: now)
        try await store.create(created, project: project, issuing: refresh.record)
        return try signedInByEmailLink(created, refresh: refresh.token, isNewUser: true, project: project, now: now)
    }

    private func signedInByEmailLink(_ user: UserRecord, refresh: String, isNewUser: Bool, project: String, now: OperationInstant) throws -> SignInResult {
        let idToken = try mintIDToken(user, project: project, provider: "password", extraClaims: nil, authTime: now.seconds, now: now)
        return SignInResult(user: user, tokens: tokens(idToken: idToken, refreshToken: refresh), isNewUser: isNewUser)
    }
}
