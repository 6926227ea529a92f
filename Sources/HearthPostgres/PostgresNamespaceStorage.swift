import Logging
import NIOCore
import PostgresNIO
import Synchronization
import HearthCore
public import HearthStorage

/// One namespace's rows, lease and change log in a ``PostgresStorage``.
///
/// Every write appends a log entry: a fenced ``commit(_:entry:epoch:)`` the entry given; plain
/// ``commit(_:)`` (imports, tools) ``LogEntry/reloadPayload``; ``saveRules(_:time:)`` `{"rules":true}`,
/// so that the other nodes, which apply the log, reload the rules.
///
/// For example:
/// ```swift
/// let db = try storage.openNamespace("demo")
/// try await db.commit([.replace(try DatabasePath("/a"), .leaf(.number(1)))])
/// let (loaded, sequence) = try await db.loadWithSequence()
/// ```
public final class PostgresNamespaceStorage: SharedNamespaceStorage {
    public let namespace: String
    let storage: PostgresStorage
    private let isClosed = Mutex(false)

    init(namespace: String, storage: PostgresStorage) {
        self.namespace = namespace
        self.storage = storage
    }

    private var logger: Logger { storage.logger }

    /// Runs `body` with the pool unless this namespace storage is closed.
    private func run<Result: Sendable>(
        _ action: String,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        if isClosed.withLock({ $0 }) {
            throw DatabaseStorageError(.unavailable, "The storage of \(namespace) is closed")
        }
        return try await storage.run(action, body)
    }

    // MARK: Loading

    public func load() async throws -> StoredDatabase {
        try await loadWithSequence().database
    }

    /// The rows, rules and last sequence from one REPEATABLE READ snapshot. Rows stream in key order
    /// straight from the wire buffers into the tree builder, with no String per row.
    public func loadWithSequence() async throws -> (database: StoredDatabase, sequence: Int64) {
        let namespace = namespace
        let logger = logger
        let (root, rules, sequence) = try await run("load \(namespace)") { connection -> (Node, String?, Int64) in
                try await connection.query("START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                do {
                    var sequence: Int64 = 0
                    var rules: String?
                    for try await (last, source) in try await connection.query(
                        "SELECT last_seq, rules FROM hearth_databases WHERE db = \(namespace)",
                        logger: logger
                    ).decode((Int64, String?).self) {
                        sequence = last
                        rules = source
                    }
                    var builder = TreeBuilder()
                    let rows = try await connection.query(
                        "SELECT path, value FROM hearth_rows WHERE db = \(namespace) ORDER BY path",
                        logger: logger
                    )
                    for try await row in rows {
                        try PostgresNamespaceStorage.add(row, to: &builder)
                    }
                    try await connection.query("COMMIT", logger: logger)
                    return (builder.finish(), rules, sequence)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
        }
        return (StoredDatabase(root: root, rulesSource: rules), sequence)
    }

    /// Feeds one (path, value) row's bytes to the builder (text columns arrive as UTF-8 in either format).
    static func add(_ row: PostgresRow, to builder: inout TreeBuilder) throws {
        var cells = row.makeIterator()
        guard let keyCell = cells.next(), let valueCell = cells.next(), let key = keyCell.bytes, let value = valueCell.bytes else {
            throw DatabaseStorageError(.corrupt, "A stored row is incomplete")
        }
        try key.withUnsafeReadableBytes { keyBytes in
            try value.withUnsafeReadableBytes { valueBytes in
                try builder.add(key: keyBytes.assumingMemoryBound(to: UInt8.self), value: valueBytes.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    // MARK: Writing

    /// Applies the mutations unfenced (whoever owns the database), in log order, and appends
    /// ``LogEntry/reloadPayload``: for imports and tools.
    public func commit(_ mutations: [StorageMutation]) async throws {
        _ = try await hearthCommit(RowOperations(mutations), entry: LogEntry.reloadPayload, owner: nil, epoch: nil, after: nil)
    }

    public func commit(_ mutations: [StorageMutation], entry: String, epoch: Int64, after: Int64?) async throws -> Int64 {
        try await hearthCommit(RowOperations(mutations), entry: entry, owner: storage.nodeName, epoch: epoch, after: after)
    }

    public func append(entry: String) async throws -> Int64 {
        try await hearthCommit(RowOperations(), entry: entry, owner: nil, epoch: nil, after: nil)
    }

    /// One round trip: `SELECT hearth_commit(…)` (see ``PostgresSchema``).
    func hearthCommit(_ operations: RowOperations, entry: String, owner: String?, epoch: Int64?, after: Int64?) async throws -> Int64 {
        let namespace = namespace
        let logger = logger
        return try await run("commit to \(namespace)") { connection in
            let rows = try await connection.query(
                """
                SELECT hearth_commit(\(namespace), \(owner), \(epoch), \(after), \(operations.kinds)::text[], \(operations.keys)::text[], \
                \(operations.values)::text[], \(entry))
                """,
                logger: logger
            )
            guard let sequence = try await rows.decode(Int64.self).all().first else {
                throw DatabaseStorageError(.unavailable, "hearth_commit returned nothing")
            }
            return sequence
        }
    }

    /// Stores the rules, a new history version (the last ``RulesVersion/kept`` are kept) and appends the
    /// log entry `{"rules":true}`, in one transaction, so that the other nodes reload the rules.
    public func saveRules(_ source: String, time: Int64) async throws {
        let namespace = namespace
        let logger = logger
        try await run("save the rules of \(namespace)") { connection in
            try await connection.query("SELECT hearth_save_rules(\(namespace), \(source), \(time))", logger: logger).consume()
        }
    }

    public func rulesHistory(limit: Int) async throws -> [RulesVersion] {
        let namespace = namespace
        let logger = logger
        return try await run("read the rules history of \(namespace)") { connection in
            var versions: [RulesVersion] = []
            let rows = try await connection.query(
                "SELECT version, source, time FROM hearth_rules_history WHERE db = \(namespace) ORDER BY version DESC LIMIT \(Int64(max(0, limit)))",
                logger: logger
            )
            for try await (version, source, time) in rows.decode((Int64, String, Int64).self) {
                versions.append(RulesVersion(version: version, source: source, time: time))
            }
            return versions
        }
    }

    /// The bytes of the namespace's row keys and values and of its log entries (not PostgreSQL's
    /// per-row and index overhead).
    public func storedBytes() async throws -> Int64? {
        let namespace = namespace
        let logger = logger
        return try await run("measure \(namespace)") { connection in
            let rows = try await connection.query(
                """
                SELECT ((SELECT coalesce(sum(octet_length(path) + octet_length(value)), 0) FROM hearth_rows WHERE db = \(namespace))
                      + (SELECT coalesce(sum(octet_length(payload)), 0) FROM hearth_log WHERE db = \(namespace)))::bigint
                """,
                logger: logger
            )
            return try await rows.decode(Int64.self).all().first ?? 0
        }
    }

    /// Further calls fail; the shared pool stays open (``PostgresStorage/shutdown()`` closes it).
    public func close() async throws {
        isClosed.withLock { $0 = true }
    }

    // MARK: Lease and log

    public func lease() async throws -> DatabaseLease? {
        let namespace = namespace
        let logger = logger
        return try await run("read the lease of \(namespace)") { connection in
            let rows = try await connection.query(
                """
                SELECT d.owner, d.epoch, d.last_seq, m.address
                FROM hearth_databases d LEFT JOIN hearth_members m ON m.name = d.owner
                WHERE d.db = \(namespace) AND d.owner IS NOT NULL
                """,
                logger: logger
            )
            var lease: DatabaseLease?
            for try await (owner, epoch, last, address) in rows.decode((String, Int64, Int64, String?).self) {
                lease = DatabaseLease(owner: owner, epoch: epoch, lastSequence: last, ownerAddress: address)
            }
            return lease
        }
    }

    /// Takes the lease if it is free, already this node's, or held by a node that is not alive (stale
    /// heartbeat or closed session). It waits behind the old owner's commit in flight, if any, after
    /// which that owner can no longer commit.
    ///
    /// One transaction of three statements. The lease row is locked first, behind a commit in flight.
    /// The owner's membership row is then locked too, so the owner's next heartbeat waits until this
    /// claim ends: an owner that comes back alive cannot read its lease as its own while a claim that
    /// found it dead is still to commit. Only then is the owner's liveness judged, by a statement of its
    /// own: under READ COMMITTED a statement that waited for a lock still judges other tables by the
    /// snapshot it started with, which could be from before the owner's latest heartbeat.
    public func claim() async throws -> DatabaseLease? {
        let namespace = namespace
        let logger = logger
        let node = storage.nodeName
        let lease = storage.leaseSeconds
        let address = storage.address
        return try await run("claim \(namespace)") { connection in
            try await connection.query("INSERT INTO hearth_databases (db) VALUES (\(namespace)) ON CONFLICT (db) DO NOTHING", logger: logger).consume()
            try await connection.query("BEGIN", logger: logger).consume()
            do {
                var owner: String?
                let current = try await connection.query("SELECT owner FROM hearth_databases WHERE db = \(namespace) FOR UPDATE", logger: logger)
                for try await name in current.decode(String?.self) { owner = name }
                if let owner, owner != node {
                    try await connection.query("SELECT 1 FROM hearth_members WHERE name = \(owner) FOR SHARE", logger: logger).consume()
                }
                let rows = try await connection.query(
                    """
                    UPDATE hearth_databases d SET owner = \(node), epoch = d.epoch + 1
                    WHERE d.db = \(namespace) AND (d.owner IS NULL OR d.owner = \(node) OR NOT EXISTS (
                        SELECT 1 FROM hearth_members m
                        WHERE m.name = d.owner AND m.heartbeat_at > now() - make_interval(secs => \(lease))
                          AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.session_pid)))
                    RETURNING d.epoch, d.last_seq
                    """,
                    logger: logger
                )
                var claimed: DatabaseLease?
                for try await (epoch, last) in rows.decode((Int64, Int64).self) {
                    claimed = DatabaseLease(owner: node, epoch: epoch, lastSequence: last, ownerAddress: address)
                }
                try await connection.query("COMMIT", logger: logger).consume()
                return claimed
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    public func release(epoch: Int64) async throws {
        let namespace = namespace
        let logger = logger
        let node = storage.nodeName
        try await run("release \(namespace)") { connection in
            try await connection.query(
                "UPDATE hearth_databases SET owner = NULL WHERE db = \(namespace) AND owner = \(node) AND epoch = \(epoch)",
                logger: logger
            ).consume()
        }
    }

    public func changes(after sequence: Int64, limit: Int) async throws -> [LogEntry] {
        let namespace = namespace
        let logger = logger
        return try await run("read the log of \(namespace)") { connection in
            var entries: [LogEntry] = []
            let rows = try await connection.query(
                "SELECT seq, payload FROM hearth_log WHERE db = \(namespace) AND seq > \(sequence) ORDER BY seq LIMIT \(Int64(max(0, limit)))",
                logger: logger
            )
            for try await (seq, payload) in rows.decode((Int64, String).self) {
                entries.append(LogEntry(sequence: seq, payload: payload))
            }
            return entries
        }
    }

    public func committedSequence() async throws -> Int64 {
        let namespace = namespace
        let logger = logger
        return try await run("read the committed sequence of \(namespace)") { connection in
            let rows = try await connection.query("SELECT last_seq FROM hearth_databases WHERE db = \(namespace)", logger: logger)
            return try await rows.decode(Int64.self).all().first ?? 0
        }
    }

    /// `pg_notify('hearth_commits', 'db:seq')` in its own (autocommit) statement, never inside a commit.
    public func notify(sequence: Int64) async throws {
        let namespace = namespace
        let logger = logger
        try await run("notify a commit to \(namespace)") { connection in
            try await connection.query("SELECT pg_notify(\(PostgresSchema.channel), \("\(namespace):\(sequence)"))", logger: logger).consume()
        }
    }
}
