import Foundation
import HearthAccess
import HearthCore
import HearthStorage

/// A user's own account, or any account for the admin: `accounts:lookup`, `accounts:update`, `accounts:delete`.
extension IdentityService {
    /// `accounts:lookup`: the caller's own user (client, by `idToken`), or any users by `localId` /
    /// `email` (admin). No match: an empty list (the answer then has no `users`, which the admin SDKs
    /// read as "not found").
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
    ///
    /// A client that moves the account from its address (to another, where that is allowed, or to none)
    /// sends the address it leaves an undo link when `links` is given (`IdentityService+EmailRecovery`).
    func update(
        _ request: AccountUpdate.Request, project: String, caller: IdentityCaller, address: String? = nil, links: ActionLinks? = nil, apiKey: String? = nil
    ) async throws -> AccountUpdate.Result {
        let now = OperationInstant()
        let localId: String
        var provider: String?
        var currentEmail: String?
        var checkedGeneration: Int64?
        if let token = request.idToken {
            let (user, claims) = try await user(fromIDToken: token, project: project)
            localId = user.localId
            currentEmail = user.email
            checkedGeneration = user.tokenGeneration
            if case .string(let p)? = claims["firebase"]?["sign_in_provider"] { provider = p }
        } else if caller == .admin {
            guard let id = request.localId, !id.isEmpty else { throw IdentityError.missingLocalID }
            localId = id
        } else if let code = request.oobCode {
            return .oobCodeApplied(try await applyOobCode(code, project: project, links: links, apiKey: apiKey))
        } else {
            throw IdentityError.invalid("INVALID_REQ_TYPE : Unsupported request parameters.")
        }
        if caller == .client {
            if request.namesCustomAttributes { throw IdentityError.insufficientPermission }
            if request.namesDisableUser { throw IdentityError.invalid("OPERATION_NOT_ALLOWED") }
        }
        // Everything that can fail on its own is checked before the transaction.
        let email = try request.email.map(validEmail)
        // With enumeration protection on (Firebase's default for new projects, and Hearth's outside
        // emulator mode), an app changes an account's address only by `sendOobCode`
        // VERIFY_AND_CHANGE_EMAIL: the new address proves itself, and a stolen ID token cannot move the
        // account elsewhere. An account without one (anonymous) may take one: that is how SDKs link an
        // email and password, and it moves nothing.
        if caller == .client, enumerationProtection, let email, let currentEmail, email != currentEmail {
            throw IdentityError.verifyNewEmailFirst
        }
        if caller == .client, email != nil, let signUpsPerAddress {
            // An email change answers EMAIL_EXISTS for a taken address: probing with it counts as
            // signing up does.
            guard signUpsPerAddress.reserve(Self.addressKey(address), now: serverClock.elapsed) else {
                throw IdentityError.tooManyAttemptsFromAddress
            }
        }
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
        // The undo of an address change a client makes, mailed to the address it leaves.
        let recoveryCode = caller == .client && links != nil ? Self.makeEmailRecoveryCode(localId: localId) : nil
        let tokenGeneration = checkedGeneration
        let user = try await store.update(project: project, localId: localId, issuing: refresh?.record) { user in
            // The token was checked before the password was hashed: if the account's sessions ended
            // meanwhile (an undo, a revocation), this one ended with them.
            if let tokenGeneration, user.tokenGeneration != tokenGeneration { throw IdentityError.tokenExpired }
            let before = user.email
            let beforeVerified = user.emailVerified
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
                user.emailLinkSignin = nil
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
                user.validSince = explicitValidSince ?? max(user.validSince ?? 0, now.seconds)
                user.tokenGeneration += 1
            }
            Self.recordAddressChange(code: recoveryCode, from: before, verified: beforeVerified, in: &user, now: now.millis)
            // The admin's change of address ends the undo chain: its links would take the account from
            // where the admin put it.
            if caller == .admin, user.email != before { user.emailRecoveries = nil }
        }
        if bumps || disable != nil { reportTokens(of: user, project: project) }
        await sendEmailRecovery(code: recoveryCode, of: user, project: project, links: links, apiKey: apiKey)
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
}
