import Foundation
import HearthAccess
import HearthCore
import HearthStorage

/// `accounts:batchCreate` (firebase-admin's `import_users`): users with their ids, profiles and,
/// optionally, password hashes made elsewhere. Firebase's own "modified scrypt" (`SCRYPT` with the
/// project's signer key, salt separator, rounds and memory cost) is stored as is, verified at sign-in
/// and upgraded to Hearth's scrypt then.
extension IdentityService {
    /// Returns the users not imported and why; the others are stored.
    func batchCreate(_ request: BatchCreate.Request, project: String) async throws -> [BatchCreate.Refusal] {
        guard let users = request.users else { throw IdentityError.invalid("MISSING_USER_ACCOUNT") }
        guard users.count <= 1000 else { throw IdentityError.invalid("MAXIMUM_USER_COUNT_EXCEEDED") }
        let algorithm = request.hashAlgorithm
        var firebaseScrypt: (rounds: Int, memoryCost: Int, separator: [UInt8], key: [UInt8])?
        switch algorithm {
        case nil, "HEARTH":
            // HEARTH: hashes as `hearth users export` writes them (Hearth's own stored form, base64).
            break
        case "SCRYPT":
            guard let key = request.signerKey.flatMap(Self.decodeBase64), !key.isEmpty else { throw IdentityError.invalid("MISSING_SIGNER_KEY") }
            let separator = request.saltSeparator.flatMap(Self.decodeBase64) ?? []
            guard let rounds = request.rounds, (1...32).contains(rounds) else { throw IdentityError.invalid("INVALID_ROUNDS") }
            guard let memoryCost = request.memoryCost, (1...20).contains(memoryCost) else { throw IdentityError.invalid("INVALID_MEMORY_COST") }
            firebaseScrypt = (Int(rounds), Int(memoryCost), separator, key)
        default:
            throw IdentityError.invalid("UNSUPPORTED_HASH_ALGORITHM : \(algorithm!)")
        }
        let now = OperationInstant().millis
        var refusals: [BatchCreate.Refusal] = []
        for (index, entry) in users.enumerated() {
            func fail(_ message: String) { refusals.append(BatchCreate.Refusal(index: index, message: message)) }
            guard let localId = entry.localId, !localId.isEmpty, localId.utf8.count <= 128 else { fail("localId is missing or invalid"); continue }
            var user = UserRecord(localId: localId, createdAt: entry.createdAt ?? now)
            if let email = entry.email {
                guard let valid = try? validEmail(email) else { fail("email is invalid"); continue }
                user.email = valid
            }
            user.emailVerified = entry.emailVerified ?? false
            user.displayName = entry.displayName
            user.photoUrl = entry.photoUrl
            user.disabled = entry.disabled ?? false
            user.lastLoginAt = entry.lastLoginAt
            if let claims = entry.customAttributes {
                guard let valid = try? validCustomClaims(claims) else { fail("customAttributes are invalid"); continue }
                user.customAttributes = valid
            }
            if let phone = entry.phoneNumber {
                guard let valid = try? validPhoneNumber(phone) else { fail("phoneNumber is invalid"); continue }
                user.phoneNumber = valid
            }
            if let providers = entry.providers {
                // Password and phone entries follow from the record itself; identity providers are kept.
                let linked = providers.compactMap { provider -> LinkedProvider? in
                    guard let id = provider.providerId, !["password", "phone"].contains(id) else { return nil }
                    guard let rawId = provider.rawId, !rawId.isEmpty else { return LinkedProvider(providerId: id, rawId: "") }
                    return LinkedProvider(providerId: id, rawId: rawId, email: provider.email, displayName: provider.displayName, photoUrl: provider.photoUrl)
                }
                if linked.contains(where: { $0.providerId.isEmpty || $0.rawId.isEmpty }) { fail("providerUserInfo needs providerId and rawId"); continue }
                user.linkedProviders = linked.isEmpty ? nil : linked
            }
            if let hashText = entry.passwordHash, algorithm == "HEARTH" {
                guard let bytes = Self.decodeBase64(hashText), let stored = String(validating: bytes, as: UTF8.self),
                    PasswordHasher.parse(stored) != nil || FirebaseScryptHash(stored) != nil
                else { fail("passwordHash is not a hash exported by Hearth"); continue }
                user.passwordHash = stored
                user.passwordUpdatedAt = now
            } else if let hashText = entry.passwordHash {
                guard let scrypt = firebaseScrypt else { fail("passwordHash needs a hashAlgorithm"); continue }
                guard let hash = Self.decodeBase64(hashText), !hash.isEmpty else { fail("passwordHash is not base64"); continue }
                let salt = entry.salt.flatMap(Self.decodeBase64) ?? []
                user.passwordHash = FirebaseScryptHash(
                    rounds: scrypt.rounds, memoryCost: scrypt.memoryCost, saltSeparator: scrypt.separator, signerKey: scrypt.key, salt: salt, hash: hash
                ).stored
                user.passwordUpdatedAt = now
            }
            // The uid may be one deleted before: its tokens issued before now stay refused, and the
            // revocations learn the new account's state. (Only then: the emulator's mock tokens, issued at
            // 0, of a new uid stay accepted, and an import of many users tells nothing to every session.)
            let reused = signer.revocations?.isTracked(project: project, uid: localId) == true
            if reused { user.validSince = now / 1000 }
            do {
                try await store.create(user, project: project, issuing: nil)
                if reused || user.disabled { reportTokens(of: user, project: project) }
            } catch UserStoreError.localIdExists {
                fail("localId belongs to an existing account")
            } catch UserStoreError.emailExists {
                fail("email exists in other account")
            }
        }
        return refusals
    }

    /// Standard or URL-safe base64, padded or not (firebase-admin sends URL-safe).
    static func decodeBase64(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
