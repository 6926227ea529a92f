import Foundation
import GRDB
import HearthCore
public import HearthStorage
import Synchronization

/// File metadata in `files.sqlite` in the data directory, with the database's durability: WAL and
/// `synchronous=FULL`, so a change is on disk before the call returns.
///
/// An object is one row: its `StoredObject` as JSON beside the indexed columns (bucket, name, blob).
/// Names compare bytewise (SQLite's BINARY collation on UTF-8), the order Cloud Storage lists in.
///
/// For example:
/// ```swift
/// let catalog = try SQLiteObjectCatalog(directory: storage.directory)
/// ```
public final class SQLiteObjectCatalog: ObjectCatalog {
    /// A pool: reads (every download looks its object up) run beside the one writer.
    let queue: DatabasePool
    public let url: URL
    /// The rows downloads read, kept between changes.
    let cache = ObjectRecordCache()
    /// Transactions that changed objects so far, numbered in commit order (see ``writeInOrder(_:)``).
    private let commits = Atomic<UInt64>(0)
    /// Puts waiting for the next group commit, and whether a commit is running.
    private let waitingPuts = Mutex<(puts: [WaitingPut], committing: Bool)>(([], false))

    private struct WaitingPut {
        var text: String
        var object: StoredObject
        var ifGeneration: Int64?
        var ifMetageneration: Int64?
        var done: CheckedContinuation<StoredObject?, any Error>
    }

    /// Opens (creating when needed) `files.sqlite` in `directory`. Open it only while holding the data
    /// directory (`SQLiteStorage` takes the lock).
    public init(directory: URL) throws {
        url = directory.appendingPathComponent("files.sqlite")
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        configuration.label = "hearth-files"
        do {
            queue = try DatabasePool(path: url.path, configuration: configuration)
            try queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS objects (
                            bucket TEXT NOT NULL, name TEXT NOT NULL, blob TEXT NOT NULL, record TEXT NOT NULL,
                            PRIMARY KEY (bucket, name)) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS buckets (name TEXT PRIMARY KEY NOT NULL, time_created INTEGER NOT NULL) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS uploads (id TEXT PRIMARY KEY NOT NULL, record TEXT NOT NULL) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS rules (version INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL, time INTEGER NOT NULL);
                        """
                )
            }
        } catch {
            throw DatabaseStorageError(.unavailable, "Cannot open \(url.path): \(error)")
        }
    }

    public func object(bucket: String, name: String) async throws -> StoredObject? {
        let ticket: UInt64
        switch cache.lookup(bucket: bucket, name: name) {
        case .hit(let object): return object
        case .miss(let missed): ticket = missed
        }
        let object = try await read { db in
            // Cached: a download that misses the record cache should not parse its SQL again.
            try String.fetchOne(db.cachedStatement(sql: "SELECT record FROM objects WHERE bucket = ? AND name = ?"), arguments: [bucket, name])
                .map(Self.decode)
        }
        cache.fill(bucket: bucket, name: name, object, ticket: ticket)
        return object
    }

    /// Puts are group-committed: uploads finishing together share one transaction and one fsync
    /// (measured: with 16 concurrent 64 KiB uploads, commits were the serial part). Each caller still
    /// returns only once its row is durable.
    public func put(_ object: StoredObject, ifGeneration: Int64?, ifMetageneration: Int64?) async throws -> StoredObject? {
        let text = try Self.encode(object)
        return try await withCheckedThrowingContinuation { done in
            let lead = waitingPuts.withLock { state -> Bool in
                state.puts.append(WaitingPut(text: text, object: object, ifGeneration: ifGeneration, ifMetageneration: ifMetageneration, done: done))
                if state.committing { return false }
                state.committing = true
                return true
            }
            if lead { Task { await self.commitWaitingPuts() } }
        }
    }

    private func commitWaitingPuts() async {
        while true {
            let batch = waitingPuts.withLock { state in
                let batch = state.puts
                state.puts = []
                if batch.isEmpty { state.committing = false }
                return batch
            }
            if batch.isEmpty { return }
            let rows = batch.map {
                (text: $0.text, bucket: $0.object.bucket, name: $0.object.name, blob: $0.object.blob, ifGeneration: $0.ifGeneration,
                    ifMetageneration: $0.ifMetageneration)
            }
            let keys = rows.map { ObjectRecordCache.Key(bucket: $0.bucket, name: $0.name) }
            do {
                // Per row: the replaced object, or nil for a condition that failed (nothing written).
                let (outcomes, commit) = try await writeInOrder { db in
                    try rows.map { row -> Result<StoredObject?, ObjectChanged> in
                        let old = try String.fetchOne(
                            db, sql: "SELECT record FROM objects WHERE bucket = ? AND name = ?", arguments: [row.bucket, row.name]
                        ).map(Self.decode)
                        if let expected = row.ifGeneration, (old?.generation ?? 0) != expected { return .failure(ObjectChanged()) }
                        if let expected = row.ifMetageneration, old?.metageneration != expected { return .failure(ObjectChanged()) }
                        try db.execute(
                            sql: "INSERT OR REPLACE INTO objects (bucket, name, blob, record) VALUES (?, ?, ?, ?)",
                            arguments: [row.bucket, row.name, row.blob, row.text]
                        )
                        return .success(old)
                    }
                }
                let written = zip(zip(keys, batch), outcomes).compactMap { pair, outcome -> (key: ObjectRecordCache.Key, object: StoredObject?)? in
                    if case .success = outcome { return (key: pair.0, object: pair.1.object) }
                    return nil
                }
                cache.committed(written, commit: commit)
                for (waiting, outcome) in zip(batch, outcomes) { waiting.done.resume(with: outcome.mapError { $0 as any Error }) }
            } catch {
                cache.changed(keys)
                for waiting in batch { waiting.done.resume(throwing: error) }
            }
        }
    }

    public func update(
        bucket: String, name: String, _ change: @escaping @Sendable (inout StoredObject) throws -> Void
    ) async throws -> StoredObject? {
        let key = ObjectRecordCache.Key(bucket: bucket, name: name)
        do {
            let (updated, commit) = try await update(key, change)
            // Unchanged when there is no such object: nothing committed.
            if updated != nil { cache.committed([(key: key, object: updated)], commit: commit) }
            return updated
        } catch {
            cache.changed([key])
            throw error
        }
    }

    private func update(
        _ key: ObjectRecordCache.Key, _ change: @escaping @Sendable (inout StoredObject) throws -> Void
    ) async throws -> (StoredObject?, commit: UInt64) {
        let (bucket, name) = (key.bucket, key.name)
        return try await writeInOrder { db in
            guard var object = try String.fetchOne(
                db, sql: "SELECT record FROM objects WHERE bucket = ? AND name = ?", arguments: [bucket, name]
            ).map(Self.decode) else { return nil }
            try change(&object)
            try db.execute(
                sql: "UPDATE objects SET blob = ?, record = ? WHERE bucket = ? AND name = ?",
                arguments: [object.blob, try Self.encode(object), bucket, name]
            )
            return object
        }
    }

    public func remove(bucket: String, name: String, ifGeneration: Int64?, ifMetageneration: Int64?) async throws -> StoredObject? {
        let key = ObjectRecordCache.Key(bucket: bucket, name: name)
        do {
            let (removed, commit) = try await writeInOrder { db in
                let old = try String.fetchOne(
                    db, sql: "SELECT record FROM objects WHERE bucket = ? AND name = ?", arguments: [bucket, name]
                ).map(Self.decode)
                if let ifGeneration, (old?.generation ?? 0) != ifGeneration { throw ObjectChanged() }
                if let ifMetageneration, old?.metageneration != ifMetageneration { throw ObjectChanged() }
                try db.execute(sql: "DELETE FROM objects WHERE bucket = ? AND name = ?", arguments: [bucket, name])
                return old
            }
            cache.committed([(key: key, object: nil)], commit: commit)
            return removed
        } catch {
            cache.changed([key])
            throw error
        }
    }

    public func objects(bucket: String, prefix: String, after: String?, limit: Int) async throws -> [StoredObject] {
        // The range [prefix, prefix + past every name) lets SQLite walk just the prefix's part of the index.
        // In byte order, as SQLite compares: Swift orders strings by their normalised form.
        let lower = after.map { $0.utf8.lexicographicallyPrecedes(prefix.utf8) ? prefix : $0 } ?? prefix
        let upper = prefix + ObjectNames.pastEveryName
        return try await read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT record FROM objects WHERE bucket = ? AND name >= ? AND name < ? AND name != ?
                    AND substr(name, 1, length(?)) = ? ORDER BY name LIMIT ?
                    """,
                arguments: [bucket, lower, upper, after ?? "\u{0}", prefix, prefix, limit]
            ).map(Self.decode)
        }
    }

    public func referencedBlobs() async throws -> Set<String> {
        try await read { db in Set(try String.fetchAll(db, sql: "SELECT blob FROM objects")) }
    }

    public func buckets() async throws -> [BucketRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT name, time_created FROM buckets ORDER BY name").map {
                BucketRecord(name: $0["name"], timeCreated: $0["time_created"])
            }
        }
    }

    public func bucket(_ name: String) async throws -> BucketRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT name, time_created FROM buckets WHERE name = ?", arguments: [name]).map {
                BucketRecord(name: $0["name"], timeCreated: $0["time_created"])
            }
        }
    }

    public func createBucket(_ bucket: BucketRecord) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO buckets (name, time_created) VALUES (?, ?)", arguments: [bucket.name, bucket.timeCreated]
            )
            return db.changesCount > 0
        }
    }

    public func deleteBucket(_ name: String) async throws -> Bool {
        try await write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM objects WHERE bucket = ? LIMIT 1", arguments: [name]) != nil {
                throw ObjectCatalogError.bucketNotEmpty
            }
            try db.execute(sql: "DELETE FROM buckets WHERE name = ?", arguments: [name])
            return db.changesCount > 0
        }
    }

    public func upload(id: String) async throws -> UploadSession? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT record FROM uploads WHERE id = ?", arguments: [id]).map(Self.decodeUpload)
        }
    }

    public func saveUpload(_ session: UploadSession) async throws {
        let text = String(decoding: try JSONEncoder().encode(session), as: UTF8.self)
        try await write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO uploads (id, record) VALUES (?, ?)", arguments: [session.id, text])
        }
    }

    public func removeUpload(id: String) async throws {
        try await write { db in try db.execute(sql: "DELETE FROM uploads WHERE id = ?", arguments: [id]) }
    }

    public func uploads() async throws -> [UploadSession] {
        try await read { db in try String.fetchAll(db, sql: "SELECT record FROM uploads").map(Self.decodeUpload) }
    }

    public func rules() async throws -> String? {
        try await read { db in try String.fetchOne(db, sql: "SELECT source FROM rules ORDER BY version DESC LIMIT 1") }
    }

    public func saveRules(_ source: String, time: Int64) async throws {
        try await write { db in
            try db.execute(sql: "INSERT INTO rules (source, time) VALUES (?, ?)", arguments: [source, time])
            try RulesHistoryTable.trim(db, table: "rules")
        }
    }

    public func rulesHistory(limit: Int) async throws -> [RulesVersion] {
        try await read { db in try RulesHistoryTable.fetch(db, table: "rules", limit: limit) }
    }

    private static func encode(_ object: StoredObject) throws -> String {
        String(decoding: try JSONEncoder().encode(object), as: UTF8.self)
    }

    private static func decode(_ text: String) throws -> StoredObject {
        try JSONDecoder().decode(StoredObject.self, from: Data(text.utf8))
    }

    private static func decodeUpload(_ text: String) throws -> UploadSession {
        try JSONDecoder().decode(UploadSession.self, from: Data(text.utf8))
    }

    /// ``write(_:)`` that also returns the transaction's place in the commit order (numbered inside the
    /// writer, which runs one transaction at a time), for ``ObjectRecordCache/committed(_:commit:)``.
    private func writeInOrder<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> (T, commit: UInt64) {
        try await write { db in
            let result = try body(db)
            return (result, self.commits.add(1, ordering: .relaxed).newValue)
        }
    }

    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.write(body)
        } catch let error as DatabaseError {
            throw ObjectCatalogError.unavailable("files.sqlite: \(error.resultCode)")
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.read(body)
        } catch let error as DatabaseError {
            throw ObjectCatalogError.unavailable("files.sqlite: \(error.resultCode)")
        }
    }
}
