import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization
import HearthCore
public import HearthStorage

/// Shared storage on one PostgreSQL database, for the nodes of a cluster (docs/decisions/0010-scale-out.md):
/// rows as in SQLite (``NodeRows``), a lease with an epoch per namespace, a gapless change log, and
/// liveness through heartbeats plus an open session.
///
/// It keeps a connection pool for queries and one dedicated session for `LISTEN hearth_commits` and the
/// heartbeats; the session's backend pid is stored with this node's membership, so that when the
/// process dies (even `kill -9`) the other nodes see it dead at once (its pid leaves
/// `pg_stat_activity`), and a hung node after the lease time. Call ``shutdown()`` when done with it.
///
/// For example:
/// ```swift
/// let storage = try await PostgresStorage.connect(url: "postgres://hearth@127.0.0.1:5432/hearth", nodeName: "a")
/// try await storage.join(address: "http://10.0.0.5:9000")
/// let db = try await storage.openShared(namespace: "demo")
/// if let lease = try await db.claim() {
///     let sequence = try await db.commit([.replace(.root, .leaf(.number(1)))], entry: "{}", epoch: lease.epoch)
///     try await db.notify(sequence: sequence)
/// }
/// await storage.shutdown()
/// ```
public final class PostgresStorage: SharedDatabaseStorage {
    public let nodeName: String
    /// This run of the node (a restarted node is a new run): onDisconnect rows of earlier runs of this
    /// name belong to connections that are gone.
    let runID = UUID().uuidString
    /// A node is alive while its last heartbeat is younger than this (and its session is open).
    public let leaseTime: Duration
    /// How long an operation waits for a pooled connection before it fails with `.unavailable`.
    public let connectionWait: Duration
    public let endpoint: PostgresEndpoint

    let client: PostgresClient
    let logger: Logger
    private let clientTask: Task<Void, Never>
    private let state: Mutex<State>

    private struct State {
        var session: PostgresConnection?
        var sessionPID: Int32 = 0
        var supervisor: Task<Void, Never>?
        /// Set by `join`; heartbeats run while it is set.
        var address: String?
        /// When the last successful heartbeat started.
        var lastHeartbeat: ContinuousClock.Instant?
        /// How many times the run of heartbeats broke (a session ended, or a gap longer than the
        /// freshness): after each, other nodes may have taken this node's leases.
        var generation = 0
        var subscribers: [Int: AsyncStream<CommitNotification>.Continuation] = [:]
        var nextSubscriber = 0
        var isShutDown = false
        /// Tests: a node that hangs (its session stays open, its heartbeats stop).
        var heartbeatsPaused = false
    }

    /// The lease time in seconds, as bound into SQL.
    var leaseSeconds: Double {
        Double(leaseTime.components.seconds) + Double(leaseTime.components.attoseconds) / 1e18
    }

    private init(
        nodeName: String,
        leaseTime: Duration,
        connectionWait: Duration,
        endpoint: PostgresEndpoint,
        client: PostgresClient,
        logger: Logger
    ) {
        self.nodeName = nodeName
        self.leaseTime = leaseTime
        self.connectionWait = connectionWait
        self.endpoint = endpoint
        self.client = client
        self.logger = logger
        clientTask = Task { await client.run() }
        state = Mutex(State())
    }

    /// Connects to the server, creates the schema when missing, and starts the session that listens for
    /// commits (and, after ``join(address:)``, sends heartbeats).
    ///
    /// - Parameters:
    ///   - url: `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`.
    ///   - nodeName: this node's name, unique in the cluster.
    ///   - leaseTime: how long a node stays alive without a heartbeat (heartbeats run every sixth of it).
    ///   - maximumConnections: the pool's size (plus the one session).
    ///   - connectionWait: how long an operation waits for a pooled connection (the server is down, or
    ///     every connection is busy) before it fails with `.unavailable`.
    /// - Throws: ``DatabaseStorageError`` `.unavailable` when the server cannot be reached or refuses the login,
    ///   with a message that says what to check (never the password).
    public static func connect(
        url: String,
        nodeName: String,
        leaseTime: Duration = .seconds(2),
        maximumConnections: Int = 10,
        connectionWait: Duration = .seconds(5),
        logger: Logger? = nil
    ) async throws -> PostgresStorage {
        let endpoint = try PostgresEndpoint(url: url)
        guard !nodeName.isEmpty, nodeName.utf8.count <= 200 else {
            throw DatabaseStorageError(.unavailable, "The node name must be 1 to 200 bytes long")
        }
        let logger = logger ?? Logger(label: "hearth.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        let session = try await openSession(endpoint, logger: logger)
        let pid: Int32
        do {
            try await createSchema(on: session, logger: logger)
            pid = try await backendPID(of: session, logger: logger)
        } catch {
            try? await session.close()
            throw storageError(error, "create Hearth's tables in \(endpoint.description)")
        }
        var configuration = PostgresClient.Configuration(
            host: endpoint.host,
            port: endpoint.port,
            username: endpoint.username,
            password: endpoint.password,
            database: endpoint.database,
            tls: clientTLS(endpoint.tls)
        )
        configuration.options.maximumConnections = max(1, maximumConnections)
        // A request waits at most this long for a connection while the server is unreachable.
        configuration.options.connectTimeout = .seconds(5)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let storage = PostgresStorage(
            nodeName: nodeName,
            leaseTime: leaseTime,
            connectionWait: connectionWait,
            endpoint: endpoint,
            client: client,
            logger: logger
        )
        storage.startSession(session, pid: pid)
        return storage
    }

    // MARK: The session: LISTEN and heartbeats

    static func openSession(_ endpoint: PostgresEndpoint, logger: Logger) async throws -> PostgresConnection {
        do {
            let configuration = PostgresConnection.Configuration(
                host: endpoint.host,
                port: endpoint.port,
                username: endpoint.username,
                password: endpoint.password,
                database: endpoint.database,
                tls: try connectionTLS(endpoint.tls)
            )
            return try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        } catch {
            throw DatabaseStorageError(
                .unavailable,
                "Cannot connect to PostgreSQL at \(endpoint.description) (\(reason(error))). Check that the server is running "
                    + "and that the PostgreSQL URL names the right host, port, user, password and database."
            )
        }
    }

    static func createSchema(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.lockKey))", logger: logger)
            for statement in PostgresSchema.statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    static func backendPID(of connection: PostgresConnection, logger: Logger) async throws -> Int32 {
        guard let pid = try await connection.query("SELECT pg_backend_pid()", logger: logger).decode(Int32.self).all().first else {
            throw DatabaseStorageError(.unavailable, "PostgreSQL did not tell its backend pid")
        }
        return pid
    }

    private func startSession(_ session: PostgresConnection, pid: Int32) {
        // The session is usable at once (join() right after connect() uses it).
        state.withLock { state in
            state.session = session
            state.sessionPID = pid
        }
        let supervisor = Task { await self.superviseSession(first: session, pid: pid) }
        state.withLock { $0.supervisor = supervisor }
    }

    /// Keeps a session open: LISTEN and heartbeats on it; when it breaks, a new one (new pid) after a pause.
    private func superviseSession(first: PostgresConnection, pid firstPID: Int32) async {
        var next: (PostgresConnection, Int32)? = (first, firstPID)
        while !Task.isCancelled {
            if next == nil {
                do {
                    let connection = try await Self.openSession(endpoint, logger: logger)
                    do {
                        next = (connection, try await Self.backendPID(of: connection, logger: logger))
                    } catch {
                        try? await connection.close()
                        throw error
                    }
                } catch {
                    logger.warning("PostgreSQL session lost; retrying", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: .milliseconds(250))
                    continue
                }
            }
            guard let (connection, pid) = next else { continue }
            next = nil
            let current = state.withLock { state -> Bool in
                guard !state.isShutDown else { return false }
                state.session = connection
                state.sessionPID = pid
                return true
            }
            guard current else {
                try? await connection.close()
                return
            }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.listen(on: connection) }
                group.addTask { await self.sendHeartbeats(on: connection, pid: pid) }
                _ = await group.next()
                // Closing fails whatever still waits on the connection, so the other task ends too.
                try? await connection.close()
                group.cancelAll()
            }
            state.withLock { state in
                // Other nodes see this node dead as soon as its session is gone: its leases are no longer sure.
                state.session = nil
                state.lastHeartbeat = nil
                state.generation += 1
            }
            if Task.isCancelled { break }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    private func listen(on connection: PostgresConnection) async {
        do {
            try await connection.listen(on: PostgresSchema.channel) { notifications in
                for try await notification in notifications {
                    deliver(notification.payload)
                }
            }
        } catch {
            logger.debug("LISTEN ended", metadata: ["error": "\(error)"])
        }
    }

    private func deliver(_ payload: String) {
        guard let colon = payload.lastIndex(of: ":"), let sequence = Int64(payload[payload.index(after: colon)...]) else { return }
        let notification = CommitNotification(namespace: String(payload[..<colon]), sequence: sequence)
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(notification) }
    }

    private func sendHeartbeats(on connection: PostgresConnection, pid: Int32) async {
        while !Task.isCancelled {
            if let address = state.withLock({ $0.heartbeatsPaused ? nil : $0.address }) {
                do {
                    try await heartbeat(on: connection, pid: pid, address: address, registering: false)
                } catch {
                    logger.warning("Heartbeat failed", metadata: ["error": "\(error)"])
                    return
                }
            }
            do { try await Task.sleep(for: leaseTime / 6) } catch { return }
        }
    }

    /// Registers this node (`registering`) or refreshes its heartbeat, on the session whose pid the
    /// membership row names. A refresh only updates an existing row, so one still in flight when
    /// ``leave()`` deletes the row cannot bring the node back; a row that vanished while joined (deleted
    /// by hand) is registered again.
    private func heartbeat(on connection: PostgresConnection, pid: Int32, address: String, registering: Bool) async throws {
        let started = ContinuousClock.now
        var updated = false
        if !registering {
            let rows = try await connection.query(
                "UPDATE hearth_members SET heartbeat_at = now(), session_pid = \(pid) WHERE name = \(nodeName) RETURNING 1",
                logger: logger
            )
            updated = try await !rows.all().isEmpty
        }
        if !updated {
            guard state.withLock({ $0.address != nil }) else { return }
            try await connection.query(
                """
                INSERT INTO hearth_members (name, address, session_pid, heartbeat_at, started_at)
                VALUES (\(nodeName), \(address), \(pid), now(), now())
                ON CONFLICT (name) DO UPDATE SET address = EXCLUDED.address, session_pid = EXCLUDED.session_pid,
                    heartbeat_at = now(), started_at = now()
                """,
                logger: logger
            ).consume()
        }
        let leaseTime = self.leaseTime
        state.withLock { state in
            // Only while still joined: a heartbeat that finishes after leave() does not make the lease fresh.
            guard state.address != nil, state.lastHeartbeat.map({ $0 < started }) ?? true else { return }
            // After a gap (the process was stopped or starved, or the storage was slow to commit) other
            // nodes may have taken this node's leases although its session lived on: a new generation
            // makes owners check theirs again before their trees answer alone.
            if Self.heartbeatsBroke(previous: state.lastHeartbeat, finished: .now, leaseTime: leaseTime) { state.generation += 1 }
            state.lastHeartbeat = started
        }
    }

    // MARK: SharedDatabaseStorage

    public func join(address: String) async throws {
        let (session, pid) = try state.withLock { state -> (PostgresConnection?, Int32) in
            guard !state.isShutDown else { throw DatabaseStorageError(.unavailable, "The PostgreSQL storage is shut down") }
            state.address = address
            return (state.session, state.sessionPID)
        }
        guard let session else {
            throw DatabaseStorageError(.unavailable, "The PostgreSQL session is not open (the server may be down); try again")
        }
        do {
            try await heartbeat(on: session, pid: pid, address: address, registering: true)
        } catch {
            throw Self.storageError(error, "join the cluster")
        }
    }

    public func leave() async throws {
        state.withLock { state in
            state.address = nil
            state.lastHeartbeat = nil
        }
        let nodeName = nodeName
        let logger = logger
        try await run("leave the cluster") { connection in
            try await connection.query("UPDATE hearth_databases SET owner = NULL WHERE owner = \(nodeName)", logger: logger).consume()
            try await connection.query("DELETE FROM hearth_members WHERE name = \(nodeName)", logger: logger).consume()
        }
    }

    public func members() async throws -> [ClusterMember] {
        let logger = logger
        let leaseSeconds = leaseSeconds
        return try await run("list the cluster's members") { connection in
            var members: [ClusterMember] = []
            let rows = try await connection.query(
                """
                SELECT m.name, coalesce(m.address, ''),
                       (m.heartbeat_at > now() - make_interval(secs => \(leaseSeconds))
                        AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.session_pid)),
                       coalesce(extract(epoch FROM now() - m.heartbeat_at)::float8, 1e9)
                FROM hearth_members m ORDER BY m.name
                """,
                logger: logger
            )
            for try await (name, address, alive, age) in rows.decode((String, String, Bool, Double).self) {
                members.append(ClusterMember(name: name, address: address, alive: alive, heartbeatAge: age))
            }
            return members
        }
    }

    /// A value every node shares (such as the token signing key): the stored one, or `initial` stored
    /// now if there is none yet — the first node to ask decides it for all.
    public func sharedSetting(_ name: String, initial: String) async throws -> String {
        try await run("read a shared setting") { client in
            try await client.query(
                "INSERT INTO hearth_settings (name, value) VALUES (\(name), \(initial)) ON CONFLICT (name) DO NOTHING",
                logger: self.logger
            ).consume()
            for try await value in try await client.query("SELECT value FROM hearth_settings WHERE name = \(name)", logger: self.logger)
                .decode(String.self)
            {
                return value
            }
            throw DatabaseStorageError(.unavailable, "A shared setting vanished; try again")
        }
    }

    public func saveOnDisconnect(namespace: String, connection: String, payload: String?) async throws {
        let key = "\(runID)/\(connection)"
        try await run("store onDisconnect writes") { client in
            if let payload {
                try await client.query(
                    """
                    INSERT INTO hearth_on_disconnect (node, connection, db, id, request)
                    VALUES (\(self.nodeName), \(key), \(namespace), 0, \(payload))
                    ON CONFLICT (node, connection, db, id) DO UPDATE SET request = excluded.request
                    """,
                    logger: self.logger
                ).consume()
            } else {
                try await client.query(
                    "DELETE FROM hearth_on_disconnect WHERE node = \(self.nodeName) AND connection = \(key) AND db = \(namespace)",
                    logger: self.logger
                ).consume()
            }
        }
    }

    /// Rows of other nodes that are dead, and of earlier runs of this node's name, deleted and returned in
    /// one statement: whichever node runs it first gets each row. (This node's own run counts as alive
    /// even while its new session, after a storage restart, has not sent its first heartbeat.)
    public func takeOrphanedOnDisconnects() async throws -> [OrphanedOnDisconnect] {
        let prefix = "\(runID)/%"
        return try await run("take the onDisconnect writes of dead nodes") { client in
            let rows = try await client.query(
                """
                DELETE FROM hearth_on_disconnect o
                WHERE (o.node = \(self.nodeName) AND o.connection NOT LIKE \(prefix))
                   OR (o.node <> \(self.nodeName) AND NOT EXISTS (
                       SELECT 1 FROM hearth_members m
                       WHERE m.name = o.node
                         AND m.heartbeat_at > now() - make_interval(secs => \(self.leaseSeconds))
                         AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.session_pid)))
                RETURNING o.db, o.request
                """,
                logger: self.logger
            )
            var taken: [OrphanedOnDisconnect] = []
            for try await (namespace, payload) in rows.decode((String, String).self) {
                taken.append(OrphanedOnDisconnect(namespace: namespace, payload: payload))
            }
            return taken
        }
    }

    public var freshGeneration: Int? {
        let freshness = Self.freshness(leaseTime)
        return state.withLock { state in
            guard let last = state.lastHeartbeat, ContinuousClock.now - last < freshness else { return nil }
            return state.generation
        }
    }

    /// True while the last successful heartbeat started less than the lease time minus half a second
    /// ago (a monotonic clock): until then no other node can have taken this node's leases.
    public var isLeaseFresh: Bool {
        let leaseTime = self.leaseTime
        return state.withLock { state in
            guard let last = state.lastHeartbeat else { return false }
            return ContinuousClock.now - last < Self.freshness(leaseTime)
        }
    }

    /// How long after a heartbeat started this node trusts that it still holds its leases.
    static func freshness(_ leaseTime: Duration) -> Duration {
        leaseTime - min(Duration.milliseconds(500), leaseTime / 4)
    }

    /// Whether a heartbeat that returned at `finished` follows one that started at `previous` by so long
    /// that other nodes may have seen this node dead in between, so the chain is broken.
    ///
    /// The others judge by the last heartbeat they can see, which is the last one committed: until the
    /// next one commits (at the latest when it returns), they see `previous`'s time. So the gap is
    /// measured to the moment the next heartbeat returned, not to when it started: one that starts on
    /// time but takes long to commit leaves the same gap as one that starts late.
    static func heartbeatsBroke(previous: ContinuousClock.Instant?, finished: ContinuousClock.Instant, leaseTime: Duration) -> Bool {
        guard let previous else { return false }
        return finished - previous >= freshness(leaseTime)
    }

    public func openShared(namespace: String) async throws -> any SharedNamespaceStorage {
        try openNamespace(namespace)
    }

    public func commitNotifications() -> AsyncStream<CommitNotification> {
        AsyncStream(bufferingPolicy: .unbounded) { continuation in
            let id = state.withLock { state -> Int? in
                guard !state.isShutDown else { return nil }
                let id = state.nextSubscriber
                state.nextSubscriber += 1
                state.subscribers[id] = continuation
                return id
            }
            guard let id else {
                continuation.finish()
                return
            }
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
            }
        }
    }

    // MARK: DatabaseStorage

    /// The namespaces that have a row in `hearth_databases`: every commit, rules save or claim makes one.
    public func namespaces() async throws -> [String] {
        let logger = logger
        return try await run("list the databases") { connection in
            var names: [String] = []
            for try await name in try await connection.query("SELECT db FROM hearth_databases ORDER BY db COLLATE \"C\"", logger: logger)
                .decode(String.self)
            where NamespaceName.isValid(name) {
                names.append(name)
            }
            return names
        }
    }

    public func contains(namespace: String) async throws -> Bool {
        guard NamespaceName.isValid(namespace) else { return false }
        let logger = logger
        return try await run("look up a database") { connection in
            let rows = try await connection.query("SELECT EXISTS (SELECT 1 FROM hearth_databases WHERE db = \(namespace))", logger: logger)
            return try await rows.decode(Bool.self).all().first ?? false
        }
    }

    public func open(namespace: String) async throws -> any NamespaceStorage {
        try openNamespace(namespace)
    }

    /// Opens one namespace (nothing is created until its first commit, rules save or claim).
    /// - Throws: ``DatabaseStorageError`` `.invalidNamespace` for an invalid name.
    public func openNamespace(_ namespace: String) throws -> PostgresNamespaceStorage {
        guard NamespaceName.isValid(namespace) else {
            throw DatabaseStorageError(.invalidNamespace, "Invalid namespace name")
        }
        try state.withLock { state in
            if state.isShutDown { throw DatabaseStorageError(.unavailable, "The PostgreSQL storage is shut down") }
        }
        return PostgresNamespaceStorage(namespace: namespace, storage: self)
    }

    /// Tests: runs one SQL statement as is (to age log entries, for example).
    func execute(unsafeSQL sql: String) async throws {
        let logger = logger
        try await run("run a test statement") { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).consume()
        }
    }

    /// Tests: stops (or resumes) the heartbeats while the session stays open, as in a hung process.
    func pauseHeartbeats(_ paused: Bool = true) {
        state.withLock { $0.heartbeatsPaused = paused }
    }

    /// The address this node joined with, if it did.
    var address: String? { state.withLock { $0.address } }

    /// Stops the heartbeats, closes the session (to the other nodes this node is dead from now on, and its
    /// leases can be claimed) and the pool, and ends the notification streams. Idempotent.
    public func shutdown() async {
        let (supervisor, session, subscribers) = state.withLock { state in
            state.isShutDown = true
            state.address = nil
            state.lastHeartbeat = nil
            let subscribers = Array(state.subscribers.values)
            state.subscribers = [:]
            return (state.supervisor, state.session, subscribers)
        }
        supervisor?.cancel()
        try? await session?.close()
        await supervisor?.value
        for subscriber in subscribers { subscriber.finish() }
        clientTask.cancel()
        await clientTask.value
    }

    // MARK: Databases (tests, tools)

    /// Creates a database on the server `url` points at, and returns the URL of the new database.
    /// For tests and tools that want a database of their own.
    ///
    /// - Parameter name: letters, digits and `_` only.
    public static func createDatabase(named name: String, onServerOf url: String) async throws -> String {
        let endpoint = try PostgresEndpoint(url: url)
        try await withAdminSession(endpoint, action: "create the database \(name)") { connection, logger in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(try quotedIdentifier(name))"), logger: logger).consume()
        }
        return endpoint.with(database: name).url
    }

    /// Drops a database made by ``createDatabase(named:onServerOf:)``, closing its sessions first.
    public static func dropDatabase(named name: String, onServerOf url: String) async throws {
        let endpoint = try PostgresEndpoint(url: url)
        try await withAdminSession(endpoint, action: "drop the database \(name)") { connection, logger in
            try await connection.query(
                PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(try quotedIdentifier(name)) WITH (FORCE)"),
                logger: logger
            ).consume()
        }
    }

    private static func withAdminSession(
        _ endpoint: PostgresEndpoint,
        action: String,
        _ body: (PostgresConnection, Logger) async throws -> Void
    ) async throws {
        let logger = Logger(label: "hearth.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        let connection = try await openSession(endpoint, logger: logger)
        do {
            try await body(connection, logger)
            try? await connection.close()
        } catch {
            try? await connection.close()
            throw storageError(error, action)
        }
    }

    private static func quotedIdentifier(_ name: String) throws -> String {
        guard !name.isEmpty, name.utf8.count <= 63,
            name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || $0 == 0x5F })
        else {
            throw DatabaseStorageError(.unavailable, "A database name must be 1 to 63 letters, digits or _")
        }
        return "\"\(name)\""
    }

    // MARK: Helpers

    /// Runs `body` on a pooled connection, turning failures into ``DatabaseStorageError``s that say what failed.
    ///
    /// Waiting for a connection is limited to ``connectionWait`` (the pool itself keeps retrying an
    /// unreachable server for a minute or more); the query, once it runs, is not (a large load may take
    /// long). A commit that fails after it was sent may or may not have been applied.
    func run<Result: Sendable>(
        _ action: String,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let started = Flag()
        let client = client
        do {
            // Not a task group: it would wait for a lease it gave up on to answer its cancellation, which
            // a pool that cannot serve never does.
            return try await Deadline.run(connectionWait, unless: { started.isSet }) {
                try await client.withConnection { connection in
                    started.set()
                    return try await body(connection)
                }
            }
        } catch is Deadline.Exceeded {
            throw DatabaseStorageError(
                .unavailable,
                "Cannot \(action): no connection to PostgreSQL within \(connectionWait); check that the server is running"
            )
        } catch {
            throw Self.storageError(error, action)
        }
    }

    /// Set once: whether an operation got its connection.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    /// A ``DatabaseStorageError`` for a failure while doing `action`: `.fenced` and `.behind` for `hearth_commit`'s fences, else
    /// `.unavailable` with PostgreSQL's own message (which carries no passwords and, for these queries,
    /// no user values).
    static func storageError(_ error: any Error, _ action: String) -> DatabaseStorageError {
        if let error = error as? DatabaseStorageError { return error }
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let state = info[.sqlState] ?? ""
                if state == PostgresSchema.fencedState {
                    return DatabaseStorageError(.fenced, "Cannot \(action): the lease of this database moved to another node")
                }
                if state == PostgresSchema.behindState {
                    return DatabaseStorageError(.behind, "Cannot \(action): the log has entries this node has not applied")
                }
                return DatabaseStorageError(.unavailable, "PostgreSQL failed to \(action): \(info[.message] ?? "error") (SQLSTATE \(state))")
            }
            return DatabaseStorageError(.unavailable, "PostgreSQL failed to \(action) (\(reason(error))); check that the server is running")
        }
        if error is CancellationError { return DatabaseStorageError(.unavailable, "Cancelled while trying to \(action)") }
        return DatabaseStorageError(.unavailable, "PostgreSQL failed to \(action): \(reason(error))")
    }

    /// What went wrong, in words that carry no password: the server's message, or the network error.
    static func reason(_ error: any Error) -> String {
        if let error = error as? DatabaseStorageError { return error.message }
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo { return info[.message] ?? "\(error.code)" }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    static func clientTLS(_ mode: PostgresEndpoint.TLSMode) -> PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

    static func connectionTLS(_ mode: PostgresEndpoint.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(try sharedTLSContext())
        case .require: .require(try sharedTLSContext())
        }
    }

    /// One client TLS context for every session: building one reads the system's trust roots (slow).
    private static let tlsContext = Mutex<NIOSSLContext?>(nil)

    static func sharedTLSContext() throws -> NIOSSLContext {
        try tlsContext.withLock { context in
            if let context { return context }
            let made = try NIOSSLContext(configuration: .makeClientConfiguration())
            context = made
            return made
        }
    }
}

extension AsyncSequence {
    /// Every element, reading to the end (which returns a pooled connection).
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}

extension PostgresRowSequence {
    /// Reads the rows to the end (which returns a pooled connection), ignoring them.
    func consume() async throws {
        for try await _ in self {}
    }
}
