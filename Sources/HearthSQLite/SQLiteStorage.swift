import Foundation
import GRDB
import GRDBSQLite
import Synchronization
public import HearthCore
public import HearthStorage

#if canImport(Glibc)
import Glibc
#endif

/// The embedded default storage: one SQLite database (WAL, `synchronous=FULL`) per namespace in a data
/// directory, one row per leaf value and per priority (see ``NodeRows``).
///
/// Opening takes an exclusive lock on the directory, so two servers (or a server and an offline import)
/// never write the same files.
///
/// For example:
/// ```swift
/// let storage = try SQLiteStorage(directory: URL(fileURLWithPath: "hearth-data"))
/// let db = try await storage.open(namespace: "demo")
/// ```
public final class SQLiteStorage: DatabaseStorage {
    public let directory: URL
    /// The directory lock's file descriptor; -1 once released.
    private let lockDescriptor: Mutex<Int32>
    private let opened = Mutex<[String: SQLiteNamespaceStorage]>([:])
    /// Nodes with more rows than this are read from the file a child at a time when the tree is served
    /// from the file (``SQLiteSnapshotReader``); tests lower it so every inner node is.
    let wholeNodeRows: Int

    /// Opens (creating when needed) a data directory.
    /// - Throws: ``DatabaseStorageError`` with code `.unavailable` when the directory cannot be created or written,
    ///   `.locked` when another process has it open.
    public init(directory: URL, wholeNodeRows: Int = SQLiteSnapshotReader.defaultWholeNodeRows) throws {
        self.directory = directory
        self.wholeNodeRows = wholeNodeRows
        let fm = FileManager.default
        do {
            // A new data directory is the server's user's alone: it holds the admin secret's hash, the
            // token signing key and every database (docs/deploy.md). An existing one keeps its mode.
            if !fm.fileExists(atPath: directory.path) {
                try fm.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            try fm.createDirectory(
                at: directory.appendingPathComponent("databases"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw DatabaseStorageError(.unavailable, "Cannot create the data directory \(directory.path): \(error.localizedDescription)")
        }
        let lockPath = directory.appendingPathComponent("hearth.lock").path
        let fd = Glibc.open(lockPath, O_RDWR | O_CREAT, 0o644)
        guard fd >= 0 else {
            throw DatabaseStorageError(.unavailable, "Cannot write to the data directory \(directory.path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(fd)
            throw DatabaseStorageError(
                .locked,
                "The data directory \(directory.path) is in use by another Hearth process; stop it first or use another --data directory"
            )
        }
        lockDescriptor = Mutex(fd)
    }

    deinit {
        releaseLock()
    }

    /// Lets another process (or a new `SQLiteStorage` in this one) open the directory, without waiting
    /// for this object to be freed, which an async caller may still hold for a while.
    public func releaseLock() {
        lockDescriptor.withLock { fd in
            guard fd >= 0 else { return }
            Glibc.close(fd)
            fd = -1
        }
    }

    public func namespaces() async throws -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("databases").path)) ?? []
        return files.filter { $0.hasSuffix(".sqlite") }.map { String($0.dropLast(7)) }.filter(NamespaceName.isValid).sorted()
    }

    public func contains(namespace: String) async throws -> Bool {
        guard NamespaceName.isValid(namespace) else { return false }
        if opened.withLock({ $0[namespace] }) != nil { return true }
        let file = directory.appendingPathComponent("databases").appendingPathComponent("\(namespace).sqlite")
        return FileManager.default.fileExists(atPath: file.path)
    }

    public func open(namespace: String) async throws -> any NamespaceStorage {
        try openNamespace(namespace)
    }

    /// Opens one namespace's SQLite database.
    public func openNamespace(_ namespace: String) throws -> SQLiteNamespaceStorage {
        guard NamespaceName.isValid(namespace) else {
            throw DatabaseStorageError(.invalidNamespace, "Invalid namespace name")
        }
        return try opened.withLock { opened in
            if let existing = opened[namespace] { return existing }
            let storage = try SQLiteNamespaceStorage(url: file(of: namespace), wholeNodeRows: wholeNodeRows)
            opened[namespace] = storage
            return storage
        }
    }

    func file(of namespace: String) -> URL {
        directory.appendingPathComponent("databases").appendingPathComponent("\(namespace).sqlite")
    }

    /// Imports a JSON document at `path` of a namespace, as `hearth import` does on a stopped server:
    /// all of it or (on any error) none of it.
    ///
    /// Replacing the whole namespace (the root, without `merge`) builds a new database file and renames
    /// it over the old one, keeping the rules and their history (see ``SQLiteBulkLoader``); other
    /// imports run as one transaction in the namespace's database
    /// (``SQLiteNamespaceStorage/importJSON(_:at:merge:progress:)``).
    ///
    /// For example:
    /// ```swift
    /// let rows = try data.withUnsafeBytes { try storage.importJSON($0, namespace: "default", at: .root, merge: false) }
    /// ```
    /// - Returns: the number of rows written.
    public func importJSON(
        _ bytes: UnsafeRawBufferPointer,
        namespace: String,
        at path: DatabasePath,
        merge: Bool,
        progress: ((Int) -> Void)? = nil
    ) throws -> Int {
        guard NamespaceName.isValid(namespace) else {
            throw DatabaseStorageError(.invalidNamespace, "Invalid namespace name")
        }
        if path.isRoot, !merge {
            // Holding the map of open namespaces keeps this process from opening the file meanwhile; the
            // directory lock keeps other processes out.
            let rows = try opened.withLock { opened -> Int? in
                guard opened[namespace] == nil else { return nil }
                return try SQLiteBulkLoader(databaseFile: file(of: namespace)).load(bytes, progress: progress)
            }
            if let rows { return rows }
        }
        return try openNamespace(namespace).importJSON(bytes, at: path, merge: merge, progress: progress)
    }
}

/// One namespace in one SQLite file.
/// `SQLITE_TRANSIENT`: SQLite copies bound bytes (the C macro does not import into Swift).
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

public final class SQLiteNamespaceStorage: NamespaceStorage {
    let queue: DatabaseQueue
    let url: URL
    let wholeNodeRows: Int

    init(url: URL, wholeNodeRows: Int = SQLiteSnapshotReader.defaultWholeNodeRows) throws {
        self.url = url
        self.wholeNodeRows = wholeNodeRows
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // WAL keeps readers off the writer's back; FULL syncs the WAL on every commit, so an
            // acknowledged write survives power loss, not only a process crash.
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        configuration.label = "hearth"
        do {
            queue = try DatabaseQueue(path: url.path, configuration: configuration)
            try queue.write { db in try SQLiteNamespaceStorage.createSchema(db) }
        } catch {
            throw DatabaseStorageError(.unavailable, "Cannot open \(url.path): \(error)")
        }
    }

    /// The tables of a namespace file, created when missing (also by the bulk load for its new file).
    static func createSchema(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS nodes (path TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
                """
        )
        try RulesHistoryTable.create(db, table: "rules_history", seedFrom: "SELECT value FROM meta WHERE key = 'rules'")
    }

    public func load() async throws -> StoredDatabase {
        let rules = try await storedRules()
        guard fileBytes > SQLiteNamespaceStorage.parallelLoadThreshold,
            let split = try await queue.read({ db in try SQLiteNamespaceStorage.splitKey(db) })
        else {
            let root = try await queue.read { db in try SQLiteNamespaceStorage.build(db, from: nil, to: nil) }
            return StoredDatabase(root: root, rulesSource: rules)
        }
        // Two connections (WAL allows concurrent readers) build the two halves of the key space on two
        // threads; the trees overlap only along the path to the split key, where they are merged.
        var configuration = Configuration()
        configuration.readonly = true
        let second = try DatabaseQueue(path: url.path, configuration: configuration)
        async let lower = queue.read { db in try SQLiteNamespaceStorage.build(db, from: nil, to: split) }
        async let upper = second.read { db in try SQLiteNamespaceStorage.build(db, from: split, to: nil) }
        let root = TreeBuilder.finalize(TreeBuilder.merge(try await lower, try await upper))
        try second.close()
        return StoredDatabase(root: root, rulesSource: rules)
    }

    /// Reads the file on demand (``SQLiteSnapshotReader``) while the server loads it.
    public func warmStart(minimumBytes: Int) async throws -> StoredDatabase? {
        guard fileBytes >= minimumBytes else { return nil }
        let rules = try await storedRules()
        let reader = try SQLiteSnapshotReader(file: url, wholeNodeRows: wholeNodeRows)
        return StoredDatabase(root: reader.node(at: .root), rulesSource: rules)
    }

    /// The database file's size plus its WAL's.
    var fileBytes: Int {
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        let walSize = (try? FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? Int) ?? 0
        return size + walSize
    }

    func storedRules() async throws -> String? {
        try await queue.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'rules'") }
    }

    /// Databases larger than this (data file plus WAL) load on two threads.
    static let parallelLoadThreshold = 8 * 1024 * 1024

    /// Builds the tree of the rows in `[from, to)` with the raw C API: column bytes go straight into the
    /// tree builder, with no String per row.
    static func build(_ db: Database, from lower: [UInt8]?, to upper: [UInt8]?) throws -> Node {
        var sql = "SELECT path, value FROM nodes"
        switch (lower, upper) {
        case (nil, nil): break
        case (_?, nil): sql += " WHERE path >= ?1"
        case (nil, _?): sql += " WHERE path < ?2"
        case (_?, _?): sql += " WHERE path >= ?1 AND path < ?2"
        }
        let statement = try db.makeStatement(sql: sql + " ORDER BY path")
        let handle = statement.sqliteStatement
        if let lower { bind(handle, 1, lower) }
        if let upper { bind(handle, 2, upper) }
        var builder = TreeBuilder(partial: lower != nil || upper != nil)
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
            try builder.add(key: column(handle, 0), value: column(handle, 1))
        }
        sqlite3_reset(handle)
        return builder.finish()
    }

    /// A row key near the middle of the key space, or nil when there are too few rows to split. A split
    /// may separate a node's priority row from the rest of it; partial builds keep such priorities.
    static func splitKey(_ db: Database) throws -> [UInt8]? {
        guard let first = try rowKey(db, "SELECT path FROM nodes ORDER BY path LIMIT 1", nil),
            let last = try rowKey(db, "SELECT path FROM nodes ORDER BY path DESC LIMIT 1", nil)
        else { return nil }
        var common = 0
        while common < first.count, common < last.count, first[common] == last[common] { common += 1 }
        guard common < last.count else { return nil }
        let low = common < first.count ? Int(first[common]) : 0
        let middle = Array(last[..<common]) + [UInt8((low + Int(last[common]) + 1) / 2)]
        return try split(db, at: middle)
    }

    /// The first row key at or after `candidate`.
    static func split(_ db: Database, at candidate: [UInt8]) throws -> [UInt8]? {
        try rowKey(db, "SELECT path FROM nodes WHERE path >= ?1 ORDER BY path LIMIT 1", candidate)
    }

    static func rowKey(_ db: Database, _ sql: String, _ argument: [UInt8]?) throws -> [UInt8]? {
        let statement = try db.makeStatement(sql: sql)
        let handle = statement.sqliteStatement
        if let argument { bind(handle, 1, argument) }
        defer { sqlite3_reset(handle) }
        guard sqlite3_step(handle) == SQLITE_ROW else { return nil }
        return Array(column(handle, 0))
    }

    static func bind(_ handle: SQLiteStatement, _ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { bind(handle, index, $0) }
    }

    /// Binds UTF-8 text (copied by SQLite). Empty text (the root's key) binds as empty text, not as
    /// the NULL a nil pointer means.
    static func bind(_ handle: SQLiteStatement, _ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            _ = sqlite3_bind_text(handle, index, "", 0, SQLITE_TRANSIENT)
            return
        }
        _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(bytes.count), SQLITE_TRANSIENT)
    }

    static func column(_ handle: SQLiteStatement, _ index: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let text = sqlite3_column_text(handle, index) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, index)))
    }

    public func commit(_ mutations: [StorageMutation]) async throws {
        try await queue.write { db in
            try SQLiteNamespaceStorage.apply(mutations, in: db)
        }
    }

    static func apply(_ mutations: [StorageMutation], in db: Database) throws {
        // The raw C API on GRDB's cached statements: GRDB's `execute(arguments:)` cost more than SQLite's
        // own work for these one-row statements (docs/benchmarks.md, "what bounds a durable REST write").
        let deleteOne = try db.cachedStatement(sql: "DELETE FROM nodes WHERE path = ?").sqliteStatement
        let deleteRange = try db.cachedStatement(sql: "DELETE FROM nodes WHERE path >= ? AND path < ?").sqliteStatement
        let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO nodes (path, value) VALUES (?, ?)").sqliteStatement
        for mutation in mutations {
            switch mutation {
            case .replace(let path, let node):
                try run(deleteOne, NodeRows.key(path))
                let range = NodeRows.descendantRange(path)
                try run(deleteRange, range.lower, range.upper)
                try NodeRows.forEachRow(of: node, at: path) { key, value in
                    try run(insert, key, value)
                }
            case .removeLeafValue(let path):
                try run(deleteOne, NodeRows.key(path))
            case .setPriority(let path, let priority):
                if let priority {
                    try run(insert, NodeRows.priorityKey(path), NodeRows.encode(priority.primitive))
                } else {
                    try run(deleteOne, NodeRows.priorityKey(path))
                }
            }
        }
    }

    /// Binds `texts` to the statement's parameters in order, runs it to completion and resets it.
    static func run(_ handle: SQLiteStatement, _ texts: String...) throws {
        for (index, text) in texts.enumerated() {
            var text = text
            text.withUTF8 { bind(handle, Int32(index + 1), $0) }
        }
        let code = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard code == SQLITE_DONE else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
    }

    public func saveRules(_ source: String, time: Int64) async throws {
        try await queue.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('rules', ?)", arguments: [source])
            try db.execute(sql: "INSERT INTO rules_history (source, time) VALUES (?, ?)", arguments: [source, time])
            try RulesHistoryTable.trim(db, table: "rules_history")
        }
    }

    public func rulesHistory(limit: Int) async throws -> [RulesVersion] {
        try await queue.read { db in try RulesHistoryTable.fetch(db, table: "rules_history", limit: limit) }
    }

    /// The database file and its write-ahead log.
    public func storedBytes() async throws -> Int64? {
        let files = [url.path, url.path + "-wal"]
        return files.reduce(Int64(0)) { total, path in
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
            return total + size
        }
    }

    public func close() async throws {
        try queue.close()
    }

    /// Imports a JSON document at `path`, replacing what is there (or, with `merge`, only the top-level
    /// children the document names), in one transaction. Used by `hearth import` on a stopped server.
    ///
    /// - Returns: the number of rows written.
    public func importJSON(
        _ bytes: UnsafeRawBufferPointer,
        at path: DatabasePath,
        merge: Bool,
        progress: ((Int) -> Void)? = nil
    ) throws -> Int {
        try queue.write { db in
            // Ancestors that hold a leaf become inner nodes.
            var ancestor = DatabasePath.root
            for key in path.keys {
                try db.execute(sql: "DELETE FROM nodes WHERE path = ?", arguments: [NodeRows.key(ancestor)])
                ancestor = ancestor.child(key)
            }
            if merge {
                // Only the named top-level children are replaced: find them first.
                let document = try JSONValue(parsing: bytes)
                guard case .object(let members) = document else {
                    throw DataError(.invalidValue, "Invalid data; --merge needs a JSON object at the top level")
                }
                for member in members where !member.key.hasPrefix(".") {
                    try SQLiteNamespaceStorage.apply([.replace(path.child(Key(member.key)), .empty)], in: db)
                }
            } else {
                try SQLiteNamespaceStorage.apply([.replace(path, .empty)], in: db)
            }
            // A large page cache keeps the B-tree's interior pages in memory during a bulk load.
            try db.execute(sql: "PRAGMA cache_size = -262144")
            defer { try? db.execute(sql: "PRAGMA cache_size = -2000") }
            let insert = try db.makeStatement(sql: "INSERT OR REPLACE INTO nodes (path, value) VALUES (?, ?)")
            let handle = insert.sqliteStatement
            var importer = RowImporter(base: path)
            importer.progress = progress
            // The raw C API: bind the importer's buffers directly, no Swift values per row.
            try importer.run(bytes) { key, value in
                sqlite3_bind_text(handle, 1, UnsafeRawPointer(key.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }, Int32(key.count), SQLITE_TRANSIENT)
                sqlite3_bind_text(handle, 2, UnsafeRawPointer(value.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }, Int32(value.count), SQLITE_TRANSIENT)
                let code = sqlite3_step(handle)
                sqlite3_reset(handle)
                guard code == SQLITE_DONE else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
            }
            return importer.rowCount
        }
    }
}

extension SQLiteNamespaceStorage {
    /// The number of stored rows (values and priorities); for tests and diagnostics.
    public func rowCount() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM nodes") ?? 0 }
    }

    /// Runs `body` and returns how many rows SQLite changed meanwhile; for tests of write economy.
    public func changedRows(during body: () async throws -> Void) async throws -> Int {
        let before = try await queue.read { db in db.totalChangesCount }
        try await body()
        return try await queue.read { db in db.totalChangesCount } - before
    }
}
