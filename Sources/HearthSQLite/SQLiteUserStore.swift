import Foundation
import GRDB
import HearthCore
public import HearthStorage

/// Users and refresh tokens in `users.sqlite` in the data directory, with the database's durability:
/// WAL and `synchronous=FULL`, so a change is on disk before the call returns.
///
/// A user is one row: its `UserRecord` as JSON, beside the indexed columns (project, localId, email).
/// A unique index on (project, email) makes email uniqueness the database's job, so it holds under
/// any interleaving of requests.
///
/// For example:
/// ```swift
/// let users = try SQLiteUserStore(directory: storage.directory)
/// ```
public final class SQLiteUserStore: UserStore {
    let queue: DatabaseQueue
    public let url: URL

    /// Opens (creating when needed) `users.sqlite` in `directory`. Open it only while holding the data
    /// directory (`SQLiteStorage` takes the lock).
    public init(directory: URL) throws {
        url = directory.appendingPathComponent("users.sqlite")
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        configuration.label = "hearth-users"
        do {
            queue = try DatabaseQueue(path: url.path, configuration: configuration)
            try queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS users (
                            project TEXT NOT NULL, local_id TEXT NOT NULL, email TEXT, record TEXT NOT NULL,
                            PRIMARY KEY (project, local_id)) WITHOUT ROWID;
                        CREATE UNIQUE INDEX IF NOT EXISTS users_email ON users (project, email) WHERE email IS NOT NULL;
                        CREATE TABLE IF NOT EXISTS refresh_tokens (
                            token_hash TEXT PRIMARY KEY NOT NULL, project TEXT NOT NULL, local_id TEXT NOT NULL,
                            record TEXT NOT NULL) WITHOUT ROWID;
                        CREATE INDEX IF NOT EXISTS refresh_tokens_user ON refresh_tokens (project, local_id);
                        CREATE TABLE IF NOT EXISTS outbox (
                            id INTEGER PRIMARY KEY AUTOINCREMENT, project TEXT NOT NULL, record TEXT NOT NULL);
                        CREATE INDEX IF NOT EXISTS outbox_project ON outbox (project, id);
                        """
                )
            }
        } catch {
            throw DatabaseStorageError(.unavailable, "Cannot open \(url.path): \(error)")
        }
    }

    public func create(_ user: UserRecord, project: String, issuing token: RefreshTokenRecord?) async throws {
        let text = try Self.encode(user)
        try await write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE project = ? AND local_id = ?", arguments: [project, user.localId]) != nil {
                throw UserStoreError.localIdExists
            }
            try Self.checkEmailFree(db, project: project, email: user.email, except: nil)
            try db.execute(
                sql: "INSERT INTO users (project, local_id, email, record) VALUES (?, ?, ?, ?)",
                arguments: [project, user.localId, user.email, text]
            )
            if var token {
                token.generation = user.tokenGeneration
                try Self.insert(token, db)
            }
        }
    }

    public func update(
        project: String,
        localId: String,
        issuing token: RefreshTokenRecord?,
        _ change: @escaping @Sendable (inout UserRecord) throws -> Void
    ) async throws -> UserRecord {
        try await write { db in
            guard let text = try String.fetchOne(db, sql: "SELECT record FROM users WHERE project = ? AND local_id = ?", arguments: [project, localId])
            else { throw UserStoreError.userNotFound }
            var user = try Self.decode(text)
            let generationBefore = user.tokenGeneration
            try change(&user)
            user.localId = localId
            try Self.checkEmailFree(db, project: project, email: user.email, except: localId)
            try db.execute(
                sql: "UPDATE users SET email = ?, record = ? WHERE project = ? AND local_id = ?",
                arguments: [user.email, try Self.encode(user), project, localId]
            )
            if user.tokenGeneration > generationBefore {
                // A revocation. The tokens of this one still answer TOKEN_EXPIRED; those an earlier one
                // revoked are dropped (and answer INVALID_REFRESH_TOKEN), so a user's revoked tokens do not
                // pile up sign-in after sign-in.
                try db.execute(
                    sql: "DELETE FROM refresh_tokens WHERE project = ? AND local_id = ? AND json_extract(record, '$.generation') < ?",
                    arguments: [project, localId, generationBefore]
                )
            }
            if var token {
                token.generation = user.tokenGeneration
                try Self.insert(token, db)
            }
            return user
        }
    }

    public func recordRefreshes(_ refreshes: [UserRefresh]) async throws {
        guard !refreshes.isEmpty else { return }
        try await write { db in
            // In place in the stored JSON: no decoding and encoding of each record.
            let statement = try db.makeStatement(sql: """
                UPDATE users SET record = json_set(record, '$.lastRefreshAt', ?)
                WHERE project = ? AND local_id = ? AND coalesce(json_extract(record, '$.lastRefreshAt'), 0) < ?
                """)
            for refresh in refreshes {
                try statement.execute(arguments: [refresh.at, refresh.project, refresh.localId, refresh.at])
            }
        }
    }

    public func delete(project: String, localId: String) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM refresh_tokens WHERE project = ? AND local_id = ?", arguments: [project, localId])
            try db.execute(sql: "DELETE FROM users WHERE project = ? AND local_id = ?", arguments: [project, localId])
            return db.changesCount > 0
        }
    }

    public func deleteAll(project: String) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM refresh_tokens WHERE project = ?", arguments: [project])
            try db.execute(sql: "DELETE FROM users WHERE project = ?", arguments: [project])
        }
    }

    public func user(project: String, localId: String) async throws -> UserRecord? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT record FROM users WHERE project = ? AND local_id = ?", arguments: [project, localId]).map(Self.decode)
        }
    }

    public func user(project: String, email: String) async throws -> UserRecord? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT record FROM users WHERE project = ? AND email = ?", arguments: [project, email]).map(Self.decode)
        }
    }

    public func user(project: String, phoneNumber: String) async throws -> UserRecord? {
        try await read { db in
            try String.fetchOne(
                db, sql: "SELECT record FROM users WHERE project = ? AND json_extract(record, '$.phoneNumber') = ? ORDER BY local_id LIMIT 1",
                arguments: [project, phoneNumber]
            ).map(Self.decode)
        }
    }

    public func users(project: String, after: String?, limit: Int) async throws -> [UserRecord] {
        try await read { db in
            try String.fetchAll(
                db,
                sql: "SELECT record FROM users WHERE project = ? AND local_id > ? ORDER BY local_id LIMIT ?",
                arguments: [project, after ?? "", limit]
            ).map(Self.decode)
        }
    }

    public func count(project: String) async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM users WHERE project = ?", arguments: [project]) ?? 0 }
    }

    public func refreshToken(hash: String) async throws -> RefreshTokenRecord? {
        try await read { db in
            guard let text = try String.fetchOne(db, sql: "SELECT record FROM refresh_tokens WHERE token_hash = ?", arguments: [hash]) else { return nil }
            return try JSONDecoder().decode(RefreshTokenRecord.self, from: Data(text.utf8))
        }
    }

    public func revocations() async throws -> [StoredRevocation] {
        try await read { db in
            var found: [StoredRevocation] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT project, record FROM users")
            while let row = try rows.next() {
                let user = try Self.decode(row["record"])
                if user.disabled || user.tokenGeneration > 0 {
                    found.append(StoredRevocation(project: row["project"], localId: user.localId, validSince: user.validSince, disabled: user.disabled))
                }
            }
            return found
        }
    }

    public func close() throws {
        try queue.close()
    }

    // MARK: Helpers

    /// Runs a write transaction, passing `UserStoreError` and the caller's errors through unchanged.
    public func recordEmail(_ message: EmailMessage) async throws {
        let text = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
        try await write { db in
            try db.execute(sql: "INSERT INTO outbox (project, record) VALUES (?, ?)", arguments: [message.project, text])
            // The newest 1,000 per project are enough to read; older mail goes.
            try db.execute(
                sql: "DELETE FROM outbox WHERE project = ? AND id <= (SELECT id FROM outbox WHERE project = ? ORDER BY id DESC LIMIT 1 OFFSET 1000)",
                arguments: [message.project, message.project]
            )
        }
    }

    public func outbox(project: String, limit: Int) async throws -> [EmailMessage] {
        try await read { db in
            try String.fetchAll(db, sql: "SELECT record FROM outbox WHERE project = ? ORDER BY id DESC LIMIT ?", arguments: [project, limit])
                .map { try JSONDecoder().decode(EmailMessage.self, from: Data($0.utf8)) }
        }
    }

    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.write(body)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw UserStoreError.emailExists
        } catch let error as DatabaseError {
            throw UserStoreError.unavailable("users.sqlite: \(error.resultCode)")
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.read(body)
        } catch let error as DatabaseError {
            throw UserStoreError.unavailable("users.sqlite: \(error.resultCode)")
        }
    }

    private static func checkEmailFree(_ db: Database, project: String, email: String?, except localId: String?) throws {
        guard let email else { return }
        let owner = try String.fetchOne(db, sql: "SELECT local_id FROM users WHERE project = ? AND email = ?", arguments: [project, email])
        if let owner, owner != localId { throw UserStoreError.emailExists }
    }

    private static func insert(_ token: RefreshTokenRecord, _ db: Database) throws {
        let text = String(decoding: try JSONEncoder().encode(token), as: UTF8.self)
        try db.execute(
            sql: "INSERT OR REPLACE INTO refresh_tokens (token_hash, project, local_id, record) VALUES (?, ?, ?, ?)",
            arguments: [token.tokenHash, token.project, token.localId, text]
        )
    }

    private static func encode(_ user: UserRecord) throws -> String {
        String(decoding: try JSONEncoder().encode(user), as: UTF8.self)
    }

    private static func decode(_ text: String) throws -> UserRecord {
        do {
            return try JSONDecoder().decode(UserRecord.self, from: Data(text.utf8))
        } catch {
            throw UserStoreError.unavailable("users.sqlite holds an unreadable user record")
        }
    }
}
