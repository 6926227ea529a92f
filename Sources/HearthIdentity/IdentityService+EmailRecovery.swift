import Foundation
import HearthAccess
import Logging
import HearthStorage

/// Undoing an address change (Firebase's `RECOVER_EMAIL`). When a client moves an account to another
/// address or removes its address (`accounts:update` with `email` or deleting `EMAIL`/`password`, a
/// verified `VERIFY_AND_CHANGE_EMAIL` code, `accounts:signUp` relinking), the address it left gets a
/// mail: "Your sign-in email was changed", with a link that moves the account back. So whoever took over
/// a session and moved the account cannot keep it from its owner.
///
/// The undo is kept with the account (only its code's SHA-256), so it outlives a restart, and it lasts
/// three days: it answers a mail its owner may read days later, where a reset or a verification the
/// user asked for lasts an hour. Its code names the account (`<localId, base64url>.<random>`), as no
/// index of codes is stored. The undos of an account are kept oldest first; an admin's change of the
/// address clears them (they would take the account from where the admin put it). Using one restores its
/// address (verified: the link came to it), takes that address from an unverified account that holds it
/// meanwhile (a squatter cannot block the way back), ends every session and voids the account's pending
/// codes, and drops the undos of later changes (it undoes them too), not those of earlier ones: an
/// intruder who moved the account twice cannot wipe the owner's link with the one mailed to himself, and
/// a flood of changes never pushes out the oldest.
///
/// For example, the client side (as Firebase's SDKs do it):
/// ```swift
/// let info = try await Auth.auth().checkActionCode(code)   // .recoverEmail; previousEmail is the address restored
/// try await Auth.auth().applyActionCode(code)
/// ```
extension IdentityService {
    static let emailRecoveryLifetimeMillis: Int64 = 3 * 24 * 60 * 60 * 1000
    /// The undos an account keeps. A change past it gets none: dropping an older one instead would let
    /// whoever keeps moving the account push the owner's out.
    static let emailRecoveryLimit = 10

    /// A new undo code for the account `localId`.
    static func makeEmailRecoveryCode(localId: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let secret = Base64URL.encode((0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) })
        return Base64URL.encode(Array(localId.utf8)) + "." + secret
    }

    /// Inside a change of `user` that a client made: when it left `before`, an address the account had
    /// verified, keeps the undo `code` of it. Nothing without a code (the caller mails none), when the
    /// address stayed, or when it was never verified: the account never proved that mailbox its own, so
    /// the mail could go to a stranger (and the undo could hand a stranger's address to whoever set it).
    static func recordAddressChange(code: String?, from before: String?, verified: Bool, in user: inout UserRecord, now: Int64) {
        guard let code, let before, verified, user.email != before else { return }
        var kept = (user.emailRecoveries ?? []).filter { now - $0.issuedAt < emailRecoveryLifetimeMillis }
        guard kept.count < emailRecoveryLimit else { return }
        kept.append(EmailRecovery(codeHash: digest(code), email: before, changedTo: user.email, issuedAt: now))
        user.emailRecoveries = kept
    }

    /// After the change: mails the undo `code` if the change kept it.
    func sendEmailRecovery(code: String?, of user: UserRecord, project: String, links: ActionLinks?, apiKey: String?) async {
        guard let code, let links else { return }
        let hash = Self.digest(code)
        guard let recovery = user.emailRecoveries?.last(where: { $0.codeHash == hash }) else { return }
        await sendEmailRecovery(code: code, recovery, localId: user.localId, project: project, links: links, apiKey: apiKey)
    }

    /// Mails an undo's link to the address the account left; in emulator mode its code is also listed
    /// with the others (`/emulator/v1/projects/{project}/oobCodes`), as the Auth emulator lists it.
    ///
    /// The change is made by then: a mail that cannot be recorded is logged, and does not turn the
    /// change's answer into an error.
    private func sendEmailRecovery(code: String, _ recovery: EmailRecovery, localId: String, project: String, links: ActionLinks, apiKey: String?) async {
        let entry = OobCodeBook.Entry(
            project: project, localId: localId, email: recovery.email, requestType: "RECOVER_EMAIL", newEmail: recovery.changedTo
        )
        if emulatorMode { oobCodes.list(code, entry, now: recovery.issuedAt) }
        let link = oobLink(code: code, requestType: "RECOVER_EMAIL", origin: links.origin, apiKey: apiKey)
        let message = Self.email(for: entry, link: link, sentAt: recovery.issuedAt)
        do {
            try await store.recordEmail(message)
        } catch {
            logger.error("The notice of an email change could not be put in the outbox", metadata: ["hearth.error": "\(error)"])
        }
        mailer?.enqueue(message)
    }

    /// Whether `code` is an undo's (the other codes are random base64url, without a dot).
    static func isEmailRecoveryCode(_ code: String) -> Bool { code.contains(".") }

    /// The undo a code names, unused: `accounts:resetPassword` with only the code (`checkActionCode`).
    func peekEmailRecovery(_ code: String, project: String) async throws -> EmailRecovery {
        let now = OperationInstant().millis
        guard let localId = Self.emailRecoveryAccount(code), let user = try await store.user(project: project, localId: localId) else {
            throw IdentityError.invalid("INVALID_OOB_CODE")
        }
        return try Self.recovery(code, of: user, now: now).recovery
    }

    /// Uses an undo: `accounts:update` with the code (`applyActionCode`). `EMAIL_EXISTS` (and the code
    /// kept) when another account has taken the address meanwhile and verified it.
    func applyEmailRecovery(_ code: String, project: String) async throws -> UserRecord {
        let now = OperationInstant()
        guard let localId = Self.emailRecoveryAccount(code), let current = try await store.user(project: project, localId: localId) else {
            throw IdentityError.invalid("INVALID_OOB_CODE")
        }
        let address = try Self.recovery(code, of: current, now: now.millis).recovery.email
        // A link mailed to the address proves it; an account that took it since without proving it
        // loses it (else whoever moved the account could sign up with the old address and keep it).
        if let holder = try await store.user(project: project, email: address), holder.localId != localId {
            guard !holder.emailVerified else { throw IdentityError.emailExists }
            let freed = try await store.update(project: project, localId: holder.localId, issuing: nil) { holder in
                guard holder.email == address, !holder.emailVerified else { throw IdentityError.emailExists }
                holder.email = nil
                holder.emailLinkSignin = nil
                holder.validSince = max(holder.validSince ?? 0, now.seconds)
                holder.tokenGeneration += 1
            }
            reportTokens(of: freed, project: project)
        }
        let user: UserRecord
        do {
            user = try await store.update(project: project, localId: localId, issuing: nil) { user in
                let (index, recovery) = try Self.recovery(code, of: user, now: now.millis)
                // This undo and those of later changes go; those of earlier changes stay.
                let earlier = Array((user.emailRecoveries ?? [])[..<index])
                user.emailRecoveries = earlier.isEmpty ? nil : earlier
                user.email = recovery.email
                user.emailVerified = true
                // Whoever moved the account is signed out, even if the address is back already: every
                // token minted until the next second too (`validSince` counts whole seconds, and a
                // token of this second would pass it).
                user.validSince = now.seconds + 1
                user.tokenGeneration += 1
                user.emailRecoveredAt = now.millis
                // He may have set the password; the owner chooses a new one (the page offers the reset).
                user.passwordHash = nil
            }
        } catch UserStoreError.userNotFound {
            throw IdentityError.invalid("INVALID_OOB_CODE")
        }
        // Codes asked for before (an email change the intruder holds) would move it again.
        oobCodes.revoke(project: project, localId: localId)
        _ = oobCodes.take(code, now: now.millis)
        // Its open realtime sessions end now: the grace a password change gives an SDK to sign in again
        // would give whoever moved the account ten more seconds.
        reportTokens(of: user, project: project, immediately: true)
        // The answer waits for the second `validSince` names: a token minted before it is refused, so
        // the owner's next sign-in (or reset), made after this answer, must come after it.
        // At most a second (the wall clock may step back meanwhile).
        let wait = min((user.validSince ?? 0) * 1000 - OperationInstant().millis, 1000)
        if wait > 0 { try? await Task.sleep(for: .milliseconds(wait)) }
        return user
    }

    private static func emailRecoveryAccount(_ code: String) -> String? {
        guard let dot = code.firstIndex(of: "."), let bytes = Base64URL.decode(code[..<dot]) else { return nil }
        return String(bytes: bytes, encoding: .utf8)
    }

    private static func recovery(_ code: String, of user: UserRecord, now: Int64) throws -> (index: Int, recovery: EmailRecovery) {
        let hash = digest(code)
        guard let index = user.emailRecoveries?.firstIndex(where: { $0.codeHash == hash }), let recovery = user.emailRecoveries?[index] else {
            throw IdentityError.invalid("INVALID_OOB_CODE")
        }
        guard now - recovery.issuedAt < emailRecoveryLifetimeMillis else { throw IdentityError.invalid("EXPIRED_OOB_CODE") }
        return (index, recovery)
    }
}
