import Foundation
import HearthAccess
import HearthCore
import HearthStorage

/// The Authentication part of an emulators:export directory (`auth_export/accounts.json`,
/// docs/specs/emulator-suite.md §2.4): users as the Auth emulator's `accounts:batchGet` gives them.
///
/// Passwords: the emulator stores them as `fakeHash:salt=<salt>:password=<plain text>`; on import
/// the plain text is hashed with Hearth's scrypt, so those users sign in as before. Hearth has no
/// plain text to give back: its export carries its own stored hash (`scrypt$…`, parameters included),
/// which Hearth imports as is and firebase-tools stores but cannot check.
///
/// For example:
/// ```swift
/// let file = try await EmulatorAccounts.export(store: users, project: "demo-app")
/// let report = try await EmulatorAccounts.importFile(file, store: users, project: "demo-app", hasher: PasswordHasher())
/// ```
package enum EmulatorAccounts {
    package struct ImportReport: Sendable {
        package var imported = 0
        package var problems: [String] = []
    }

    /// `accounts.json`: every user of `project`, ordered by uid.
    package static func export(store: any UserStore, project: String) async throws -> JSONValue {
        var users: [JSONValue] = []
        var after: String?
        while true {
            let page = try await store.users(project: project, after: after, limit: 1000)
            guard let last = page.last else { break }
            users += page.map(exported)
            after = last.localId
        }
        return .object([("kind", .string("identitytoolkit#DownloadAccountResponse")), ("users", .array(users))])
    }

    /// A user as lookup shows it, with its stored password hash in place of the redacted one.
    static func exported(_ user: UserRecord) -> JSONValue {
        guard case .object(var members) = IdentityToolkitCodec.userInfo(user) else { return .null }
        if let stored = user.passwordHash, let index = members.firstIndex(where: { $0.key == "passwordHash" }) {
            members[index].value = .string(stored)
        }
        return .object(members)
    }

    /// Stores the users of an `accounts.json` (the emulator's or Hearth's). Users that cannot be
    /// imported are reported, not silently skipped as firebase-tools does.
    package static func importFile(_ file: JSONValue, store: any UserStore, project: String, hasher: PasswordHasher) async throws -> ImportReport {
        guard let users = file["users"]?.arrayValue ?? (file["users"] == nil ? [] : nil) else {
            throw IdentityImportError("\"users\" must be a list")
        }
        var report = ImportReport()
        let now = OperationInstant().millis
        for (index, entry) in users.enumerated() {
            let name = entry["localId"]?.stringValue ?? "#\(index)"
            do {
                var problem: String?
                let user = try await record(entry, now: now, hasher: hasher, problem: &problem)
                try await store.create(user, project: project, issuing: nil)
                report.imported += 1
                if let problem { report.problems.append("\(name): \(problem)") }
            } catch UserStoreError.localIdExists {
                report.problems.append("\(name): not imported, the uid exists")
            } catch UserStoreError.emailExists {
                report.problems.append("\(name): not imported, another user has its email")
            } catch let error as IdentityImportError {
                report.problems.append("\(name): not imported, \(error.description)")
            }
        }
        return report
    }

    static func record(_ entry: JSONValue, now: Int64, hasher: PasswordHasher, problem: inout String?) async throws -> UserRecord {
        guard let localId = entry["localId"]?.stringValue, !localId.isEmpty, localId.utf8.count <= 128 else {
            throw IdentityImportError("localId is missing or invalid")
        }
        var user = UserRecord(localId: localId, createdAt: entry["createdAt"]?.wholeNumber ?? now)
        if let email = entry["email"]?.stringValue {
            guard email.contains("@"), email.utf8.count <= 320 else { throw IdentityImportError("email is invalid") }
            user.email = email.lowercased()
        }
        user.emailVerified = entry["emailVerified"] == .bool(true) || entry["emailVerified"]?.stringValue == "true"
        user.disabled = entry["disabled"] == .bool(true) || entry["disabled"]?.stringValue == "true"
        user.displayName = entry["displayName"]?.stringValue
        user.photoUrl = entry["photoUrl"]?.stringValue
        user.phoneNumber = entry["phoneNumber"]?.stringValue
        user.lastLoginAt = entry["lastLoginAt"]?.wholeNumber
        user.validSince = entry["validSince"]?.wholeNumber
        user.passwordUpdatedAt = entry["passwordUpdatedAt"]?.wholeNumber
        user.lastRefreshAt = entry["lastRefreshAt"]?.rfc3339Milliseconds
        user.customAuth = entry["customAuth"] == .bool(true)
        user.initialEmail = entry["initialEmail"]?.stringValue
        if entry["emailLinkSignin"] == .bool(true) { user.emailLinkSignin = true }
        if let claims = entry["customAttributes"]?.stringValue, !claims.isEmpty {
            guard case .object? = try? JSONValue(parsing: claims) else { throw IdentityImportError("customAttributes is not a JSON object") }
            user.customAttributes = claims
        }
        let linked = (entry["providerUserInfo"]?.arrayValue ?? []).compactMap { provider -> LinkedProvider? in
            guard let id = provider["providerId"]?.stringValue, !["password", "phone"].contains(id),
                let rawId = provider["rawId"]?.stringValue, !rawId.isEmpty
            else { return nil }
            return LinkedProvider(
                providerId: id, rawId: rawId, email: provider["email"]?.stringValue, displayName: provider["displayName"]?.stringValue,
                photoUrl: provider["photoUrl"]?.stringValue
            )
        }
        user.linkedProviders = linked.isEmpty ? nil : linked
        if let hash = entry["passwordHash"]?.stringValue, !hash.isEmpty {
            let fakePrefix = "fakeHash:salt=\(entry["salt"]?.stringValue ?? ""):password="
            if hash.hasPrefix(fakePrefix) {
                user.passwordHash = try await hasher.hash(String(hash.dropFirst(fakePrefix.count)))
            } else if PasswordHasher.parse(hash) != nil || FirebaseScryptHash(hash) != nil {
                user.passwordHash = hash
            } else {
                problem = "its password hash is in a form Hearth cannot check; it must reset its password"
            }
            if user.passwordHash != nil, user.passwordUpdatedAt == nil { user.passwordUpdatedAt = now }
        }
        return user
    }
}

/// A user in an `accounts.json` that cannot be imported, and why.
package struct IdentityImportError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}

extension IdentityService {
    /// `auth_export/accounts.json` of the project.
    package func exportEmulatorAccounts(project: String) async throws -> JSONValue {
        try await EmulatorAccounts.export(store: store, project: project)
    }

    /// Imports an `accounts.json`, hashing emulator passwords with this server's settings.
    package func importEmulatorAccounts(_ file: JSONValue, project: String) async throws -> EmulatorAccounts.ImportReport {
        let report = try await EmulatorAccounts.importFile(file, store: store, project: project, hasher: configuration.passwordHashing)
        // Imported users with a validSince start with it in force.
        try await signer.revocations?.load(from: store)
        return report
    }

    package func hasUsers(project: String) async throws -> Bool {
        try await store.count(project: project) > 0
    }

    package func deleteAllUsers(project: String) async throws {
        try await store.deleteAll(project: project)
    }
}
