import Foundation
import HearthAccess
public import HearthCore
public import HearthStorage

/// User management for tools that work on a user store directly (`hearth users`), with the same
/// validation and hashing as the Identity Toolkit API's admin calls.
///
/// For example:
/// ```swift
/// let admin = UserAdministration(store: try SQLiteUserStore(directory: dir), project: "demo")
/// let user = try await admin.create(.init(email: "ada@example.com", password: "s3cret-pw"))
/// ```
public struct UserAdministration: Sendable {
    /// What a new user gets; everything optional, as in firebase-admin's `create_user`.
    public struct NewUser: Sendable {
        public var uid: String?
        public var email: String?
        public var password: String?
        public var displayName: String?
        public var emailVerified = false
        public var disabled = false
        /// Custom claims as a JSON object text.
        public var claims: String?

        public init(uid: String? = nil, email: String? = nil, password: String? = nil, displayName: String? = nil) {
            self.uid = uid
            self.email = email
            self.password = password
            self.displayName = displayName
        }
    }

    /// A refused change, with Firebase's code (`EMAIL_EXISTS`, `WEAK_PASSWORD : …`).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    let service: IdentityService
    let project: String

    public init(store: any UserStore, project: String, hashing: PasswordHasher = PasswordHasher()) {
        var configuration = IdentityConfiguration()
        configuration.projectID = project
        configuration.passwordHashing = hashing
        service = IdentityService(store: store, signer: .generate(), configuration: configuration, emulatorMode: false)
        self.project = project
    }

    /// Creates a user; returns it as stored.
    public func create(_ user: NewUser) async throws -> UserRecord {
        let request = SignUp.Request(
            email: user.email, password: user.password, displayName: user.displayName, localId: user.uid,
            emailVerified: user.emailVerified, disabled: user.disabled
        )
        let localId: String
        do {
            localId = try await service.signUp(request, project: project, caller: .admin).user.localId
            if let claims = user.claims {
                _ = try await service.update(AccountUpdate.Request(localId: localId, customAttributes: claims), project: project, caller: .admin)
            }
        } catch let error as IdentityError {
            throw Failure(description: error.message)
        } catch UserStoreError.emailExists {
            throw Failure(description: "EMAIL_EXISTS")
        } catch UserStoreError.localIdExists {
            throw Failure(description: "DUPLICATE_LOCAL_ID")
        }
        guard let stored = try await service.store.user(project: project, localId: localId) else { throw Failure(description: "USER_NOT_FOUND") }
        return stored
    }

    /// What `update` changes: nil leaves a field as it is; an empty name or photo URL removes it.
    public struct Changes: Sendable {
        public var email: String?
        public var password: String?
        public var displayName: String?
        public var photoUrl: String?
        public var emailVerified: Bool?
        public var disabled: Bool?
        /// Custom claims as a JSON object text; `{}` removes them all.
        public var claims: String?

        public init() {}

        public var isEmpty: Bool {
            email == nil && password == nil && displayName == nil && photoUrl == nil && emailVerified == nil && disabled == nil && claims == nil
        }
    }

    /// The user with this uid, or this email when the argument contains `@`.
    public func user(_ uidOrEmail: String) async throws -> UserRecord {
        let user = uidOrEmail.contains("@")
            ? try await service.store.user(project: project, email: uidOrEmail.lowercased())
            : try await service.store.user(project: project, localId: uidOrEmail)
        guard let user else { throw Failure(description: "USER_NOT_FOUND") }
        return user
    }

    /// Changes a user (found by uid or email) with the admin API's validation: a new password is
    /// hashed, and a new password or email ends the user's sessions (`validSince`), as Firebase does.
    /// Returns the user as stored.
    public func update(_ uidOrEmail: String, _ changes: Changes) async throws -> UserRecord {
        let localId = try await user(uidOrEmail).localId
        // An empty name or photo URL removes it.
        func change(_ text: String?) -> AccountUpdate.ProfileChange? { text.map { $0.isEmpty ? .remove : .set($0) } }
        let request = AccountUpdate.Request(
            localId: localId, email: changes.email, password: changes.password, displayName: change(changes.displayName),
            photoUrl: change(changes.photoUrl), customAttributes: changes.claims, emailVerified: changes.emailVerified,
            disableUser: changes.disabled
        )
        do {
            _ = try await service.update(request, project: project, caller: .admin)
        } catch let error as IdentityError {
            throw Failure(description: error.message)
        } catch UserStoreError.emailExists {
            throw Failure(description: "EMAIL_EXISTS")
        } catch UserStoreError.userNotFound {
            throw Failure(description: "USER_NOT_FOUND")
        }
        return try await user(localId)
    }

    /// Deletes a user by uid, or by email when the argument contains `@`.
    public func delete(_ uidOrEmail: String) async throws {
        let user = try await user(uidOrEmail)
        guard try await service.store.delete(project: project, localId: user.localId) else {
            throw Failure(description: "USER_NOT_FOUND")
        }
    }

    /// Every user, ordered by uid, a page at a time.
    public func list(pageSize: Int = 500) -> AsyncThrowingStream<UserRecord, any Error> {
        let store = service.store
        let project = project
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var after: String?
                    while true {
                        let page = try await store.users(project: project, after: after, limit: pageSize)
                        for user in page { continuation.yield(user) }
                        guard page.count == pageSize, let last = page.last else { break }
                        after = last.localId
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// How imported password hashes were made: Firebase's modified scrypt (the project's parameters,
    /// from the Firebase console's password hash settings) or Hearth's own (`hearth users export`).
    public enum ImportedHashes: Sendable {
        case none
        case hearth
        case firebaseScrypt(signerKey: String, saltSeparator: String, rounds: Int, memoryCost: Int)
    }

    /// Imports users in Firebase's `auth:export` shape (`{"users": [...]}`), 1,000 per batch;
    /// `progress(done, total)` after each batch. Returns one message per refused user.
    public func importUsers(_ users: [JSONValue], hashes: ImportedHashes, progress: (Int, Int) -> Void) async throws -> [String] {
        var refused: [String] = []
        var start = 0
        while start < users.count {
            let batch = Array(users[start..<min(start + 1000, users.count)])
            var request = BatchCreate.Request(users: batch.map(IdentityToolkitCodec.importedUser))
            switch hashes {
            case .none: break
            case .hearth: request.hashAlgorithm = "HEARTH"
            case .firebaseScrypt(let key, let separator, let rounds, let memoryCost):
                request.hashAlgorithm = "SCRYPT"
                request.signerKey = key
                request.saltSeparator = separator
                request.rounds = Int64(rounds)
                request.memoryCost = Int64(memoryCost)
            }
            let refusals: [BatchCreate.Refusal]
            do {
                refusals = try await service.batchCreate(request, project: project)
            } catch let error as IdentityError {
                throw Failure(description: error.message)
            }
            for refusal in refusals {
                let index = refusal.index + start
                let id = users[index]["localId"]?.stringValue ?? "#\(index)"
                refused.append("\(id): \(refusal.message)")
            }
            start += batch.count
            progress(start, users.count)
        }
        return refused
    }

    /// A user in Firebase's `auth:export` shape, its password hash in Hearth's form (base64), so
    /// `importUsers(_, hashes: .hearth)` brings it back with the same password.
    public func exported(_ user: UserRecord) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("localId", .string(user.localId))]
        if let email = user.email { members.append(("email", .string(email))) }
        members.append(("emailVerified", .bool(user.emailVerified)))
        if let hash = user.passwordHash { members.append(("passwordHash", .string(Data(hash.utf8).base64EncodedString()))) }
        if let name = user.displayName { members.append(("displayName", .string(name))) }
        if let photo = user.photoUrl { members.append(("photoUrl", .string(photo))) }
        if let phone = user.phoneNumber { members.append(("phoneNumber", .string(phone))) }
        members.append(("createdAt", .string(String(user.createdAt))))
        if let last = user.lastLoginAt { members.append(("lastSignedInAt", .string(String(last)))) }
        members.append(("disabled", .bool(user.disabled)))
        if let claims = user.customAttributes { members.append(("customAttributes", .string(claims))) }
        if let linked = user.linkedProviders {
            members.append(("providerUserInfo", .array(linked.map { provider in
                .object(compact([
                    ("providerId", .string(provider.providerId)), ("rawId", .string(provider.rawId)),
                    ("email", provider.email.map(JSONValue.string)), ("displayName", provider.displayName.map(JSONValue.string)),
                    ("photoUrl", provider.photoUrl.map(JSONValue.string)),
                ]))
            })))
        }
        return .object(members)
    }

    /// A user as the API's `accounts:lookup` shows it (password hash redacted).
    public func userInfo(_ user: UserRecord) -> JSONValue {
        IdentityToolkitCodec.userInfo(user)
    }
}
