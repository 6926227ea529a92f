import HearthCore
import Synchronization

/// A cluster's shared storage kept in memory, standing in for PostgreSQL in tests of the cluster's
/// logic: the cluster plays the database server, and each node talks to it through its own
/// ``InMemorySharedStorage``. Tests kill a node's session (``kill(_:)``) or make its lease look stale
/// (``pause(_:)``) to drive failovers and fencing deterministically.
///
/// For example:
/// ```swift
/// let cluster = InMemorySharedCluster()
/// let a = cluster.node("a"), b = cluster.node("b")
/// ```
public final class InMemorySharedCluster: Sendable {
    struct DatabaseState {
        var root: Node = .empty
        var rules: String?
        var history: [RulesVersion] = []
        var owner: String?
        var epoch: Int64 = 0
        var lastSequence: Int64 = 0
        var log: [LogEntry] = []
    }

    struct Member {
        var address: String
        /// The node's session is open (false after `kill`, or `leave`).
        var connected: Bool
        /// The node's heartbeat is fresh (false after `pause`).
        var beating: Bool
        /// The node's session is open again, but its membership still names the old one until its next
        /// heartbeat (``InMemorySharedCluster/reconnect(_:)``): dead to the others meanwhile.
        var awaitingHeartbeat = false
        /// How many times the node's run of heartbeats broke (``SharedDatabaseStorage/freshGeneration``).
        var generation = 0
    }

    struct OnDisconnectRow {
        var node: String
        var run: Int
        var namespace: String
        var connection: String
        var payload: String
    }

    struct State {
        var onDisconnect: [OnDisconnectRow] = []
        var runs: [String: Int] = [:]
        var databases: [String: DatabaseState] = [:]
        var members: [String: Member] = [:]
        var listeners: [AsyncStream<CommitNotification>.Continuation] = []
        /// Wake-ups are dropped, as when they are lost (tests of the paths that do without them).
        var wakeUpsSilenced = false
        /// Nodes whose reads of the rules history fail (``InMemorySharedCluster/failRulesReads(of:_:)``).
        var failingRulesReads: Set<String> = []
        /// How many times each node read the change log.
        var logReads: [String: Int] = [:]
    }

    let state = Mutex(State())

    public init() {}

    /// A node's view of the cluster.
    public func node(_ name: String) -> InMemorySharedStorage {
        InMemorySharedStorage(cluster: self, nodeName: name)
    }

    /// The node's session ends, as when its process is killed: it is dead at once, and every call it
    /// makes fails.
    public func kill(_ name: String) {
        state.withLock { state in
            guard state.members[name]?.connected == true else { return }
            state.members[name]?.connected = false
            state.members[name]?.generation += 1
        }
    }

    /// A killed node's session opens again, as after the storage server restarted: its calls work, but
    /// it stays dead to the others, and its own leases unsure, until ``heartbeat(_:)``.
    public func reconnect(_ name: String) {
        state.withLock { state in
            state.members[name]?.connected = true
            state.members[name]?.awaitingHeartbeat = true
        }
    }

    /// The first heartbeat of a reconnected node's new session: it is alive again.
    public func heartbeat(_ name: String) {
        state.withLock { $0.members[name]?.awaitingHeartbeat = false }
    }

    /// The node stops heartbeating, as when its process hangs: dead to the others, and its own lease no
    /// longer fresh, but its calls still reach the storage (as a process resumed after SIGSTOP).
    public func pause(_ name: String) {
        state.withLock { $0.members[name]?.beating = false }
    }

    /// A paused node heartbeats again, after a gap in which the others may have taken its leases.
    public func resume(_ name: String) {
        state.withLock { state in
            guard state.members[name]?.beating == false else { return }
            state.members[name]?.beating = true
            state.members[name]?.generation += 1
        }
    }

    /// Drops every wake-up from now on (or again delivers them): they are best effort.
    public func silenceWakeUps(_ silenced: Bool = true) {
        state.withLock { $0.wakeUpsSilenced = silenced }
    }

    /// Makes `node`'s reads of the rules history fail (or succeed again), as a storage error would.
    public func failRulesReads(of node: String, _ failing: Bool = true) {
        state.withLock { state in
            if failing { state.failingRulesReads.insert(node) } else { state.failingRulesReads.remove(node) }
        }
    }

    /// How many times `node` has read the change log (``SharedNamespaceStorage/changes(after:limit:)``).
    public func logReads(by node: String) -> Int {
        state.withLock { $0.logReads[node] ?? 0 }
    }

    /// The database's current owner, for assertions.
    public func owner(of namespace: String) -> String? {
        state.withLock { $0.databases[namespace]?.owner }
    }

    func isAlive(_ name: String, in state: State) -> Bool {
        guard let member = state.members[name] else { return false }
        return member.connected && member.beating && !member.awaitingHeartbeat
    }
}

/// One node's view of an ``InMemorySharedCluster``.
public final class InMemorySharedStorage: SharedDatabaseStorage {
    let cluster: InMemorySharedCluster
    public let nodeName: String

    init(cluster: InMemorySharedCluster, nodeName: String) {
        self.cluster = cluster
        self.nodeName = nodeName
    }

    /// Fails every call of a killed node, as a closed connection would.
    func checkConnected() throws {
        let connected = cluster.state.withLock { $0.members[nodeName]?.connected ?? true }
        if !connected { throw DatabaseStorageError(.unavailable, "The node's session with the shared storage is closed") }
    }

    /// Which run of its name this node is (a restarted node is a new run).
    let run = Mutex(0)

    public func join(address: String) async throws {
        cluster.state.withLock { state in
            let previous = state.members[nodeName]
            state.members[nodeName] = .init(
                address: address, connected: true, beating: true, generation: previous.map { $0.generation + 1 } ?? 0
            )
            state.runs[nodeName, default: 0] += 1
            run.withLock { $0 = state.runs[nodeName]! }
        }
    }

    public func saveOnDisconnect(namespace: String, connection: String, payload: String?) async throws {
        try checkConnected()
        let run = run.withLock { $0 }
        cluster.state.withLock { state in
            state.onDisconnect.removeAll { $0.node == nodeName && $0.run == run && $0.namespace == namespace && $0.connection == connection }
            if let payload {
                state.onDisconnect.append(.init(node: nodeName, run: run, namespace: namespace, connection: connection, payload: payload))
            }
        }
    }

    public func takeOrphanedOnDisconnects() async throws -> [OrphanedOnDisconnect] {
        try checkConnected()
        return cluster.state.withLock { state in
            let snapshot = state
            let orphaned = { (row: InMemorySharedCluster.OnDisconnectRow) in
                if row.node == self.nodeName { return snapshot.runs[row.node] != row.run }
                return !self.cluster.isAlive(row.node, in: snapshot) || snapshot.runs[row.node] != row.run
            }
            let taken = snapshot.onDisconnect.filter(orphaned)
            state.onDisconnect.removeAll(where: orphaned)
            return taken.map { OrphanedOnDisconnect(namespace: $0.namespace, payload: $0.payload) }
        }
    }

    public func leave() async throws {
        cluster.state.withLock { state in
            state.members[nodeName]?.connected = false
            for (name, database) in state.databases where database.owner == nodeName {
                state.databases[name]?.owner = nil
            }
        }
    }

    public func members() async throws -> [ClusterMember] {
        try checkConnected()
        return cluster.state.withLock { state in
            state.members.map { name, member in
                ClusterMember(name: name, address: member.address, alive: cluster.isAlive(name, in: state), heartbeatAge: 0)
            }.sorted { $0.name < $1.name }
        }
    }

    public var freshGeneration: Int? {
        cluster.state.withLock { state in
            cluster.isAlive(nodeName, in: state) ? state.members[nodeName]?.generation : nil
        }
    }

    public var isLeaseFresh: Bool {
        cluster.state.withLock { cluster.isAlive(nodeName, in: $0) }
    }

    public func openShared(namespace: String) async throws -> any SharedNamespaceStorage {
        guard NamespaceName.isValid(namespace) else { throw DatabaseStorageError(.invalidNamespace, "Invalid namespace name") }
        try checkConnected()
        cluster.state.withLock { state in
            if state.databases[namespace] == nil { state.databases[namespace] = .init() }
        }
        return InMemorySharedNamespaceStorage(node: self, namespace: namespace)
    }

    public func commitNotifications() -> AsyncStream<CommitNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: CommitNotification.self)
        cluster.state.withLock { $0.listeners.append(continuation) }
        return stream
    }

    public func namespaces() async throws -> [String] {
        try checkConnected()
        return cluster.state.withLock { Array($0.databases.keys).sorted() }
    }

    public func contains(namespace: String) async throws -> Bool {
        try checkConnected()
        return cluster.state.withLock { $0.databases[namespace] != nil }
    }

    public func open(namespace: String) async throws -> any NamespaceStorage {
        try await openShared(namespace: namespace)
    }
}

/// One namespace as one node sees it.
final class InMemorySharedNamespaceStorage: SharedNamespaceStorage {
    let node: InMemorySharedStorage
    let namespace: String
    var cluster: InMemorySharedCluster { node.cluster }

    init(node: InMemorySharedStorage, namespace: String) {
        self.node = node
        self.namespace = namespace
    }

    private func withDatabase<T>(_ body: (inout InMemorySharedCluster.DatabaseState, InMemorySharedCluster.State) throws -> T) throws -> T {
        try node.checkConnected()
        return try cluster.state.withLock { state in
            var database = state.databases[namespace] ?? .init()
            defer { state.databases[namespace] = database }
            return try body(&database, state)
        }
    }

    private static func append(_ payload: String, to database: inout InMemorySharedCluster.DatabaseState) -> Int64 {
        database.lastSequence += 1
        database.log.append(LogEntry(sequence: database.lastSequence, payload: payload))
        return database.lastSequence
    }

    func load() async throws -> StoredDatabase {
        try withDatabase { database, _ in StoredDatabase(root: database.root, rulesSource: database.rules) }
    }

    func loadWithSequence() async throws -> (database: StoredDatabase, sequence: Int64) {
        try withDatabase { database, _ in (StoredDatabase(root: database.root, rulesSource: database.rules), database.lastSequence) }
    }

    func commit(_ mutations: [StorageMutation]) async throws {
        _ = try withDatabase { database, _ in
            database.root = InMemoryNamespaceStorage.apply(mutations, to: database.root)
            return InMemorySharedNamespaceStorage.append(LogEntry.reloadPayload, to: &database)
        }
    }

    func commit(_ mutations: [StorageMutation], entry: String, epoch: Int64, after: Int64?) async throws -> Int64 {
        let name = node.nodeName
        return try withDatabase { database, _ in
            guard database.owner == name, database.epoch == epoch else {
                throw DatabaseStorageError(.fenced, "Another node owns the database now")
            }
            if let after, database.lastSequence != after {
                throw DatabaseStorageError(.behind, "The log has entries after \(after)")
            }
            database.root = InMemoryNamespaceStorage.apply(mutations, to: database.root)
            return InMemorySharedNamespaceStorage.append(entry, to: &database)
        }
    }

    func append(entry: String) async throws -> Int64 {
        try withDatabase { database, _ in InMemorySharedNamespaceStorage.append(entry, to: &database) }
    }

    func lease() async throws -> DatabaseLease? {
        try withDatabase { database, state in
            guard let owner = database.owner else { return nil }
            return DatabaseLease(owner: owner, epoch: database.epoch, lastSequence: database.lastSequence, ownerAddress: state.members[owner]?.address)
        }
    }

    func claim() async throws -> DatabaseLease? {
        let name = node.nodeName
        return try withDatabase { database, state in
            if let owner = database.owner, owner != name, cluster.isAlive(owner, in: state) { return nil }
            database.owner = name
            database.epoch += 1
            return DatabaseLease(owner: name, epoch: database.epoch, lastSequence: database.lastSequence, ownerAddress: state.members[name]?.address)
        }
    }

    func release(epoch: Int64) async throws {
        let name = node.nodeName
        try withDatabase { database, _ in
            if database.owner == name && database.epoch == epoch { database.owner = nil }
        }
    }

    func changes(after sequence: Int64, limit: Int) async throws -> [LogEntry] {
        let entries = try withDatabase { database, _ in Array(database.log.lazy.filter { $0.sequence > sequence }.prefix(limit)) }
        cluster.state.withLock { $0.logReads[node.nodeName, default: 0] += 1 }
        return entries
    }

    func committedSequence() async throws -> Int64 {
        try withDatabase { database, _ in database.lastSequence }
    }

    func notify(sequence: Int64) async throws {
        let listeners = try withDatabase { _, state in state.wakeUpsSilenced ? [] : state.listeners }
        for listener in listeners { listener.yield(CommitNotification(namespace: namespace, sequence: sequence)) }
    }

    func saveRules(_ source: String, time: Int64) async throws {
        _ = try withDatabase { database, _ in
            database.rules = source
            database.history.append(RulesVersion(version: (database.history.last?.version ?? 0) + 1, source: source, time: time))
            if database.history.count > RulesVersion.kept { database.history.removeFirst(database.history.count - RulesVersion.kept) }
            return InMemorySharedNamespaceStorage.append(#"{"rules":true}"#, to: &database)
        }
    }

    func rulesHistory(limit: Int) async throws -> [RulesVersion] {
        if cluster.state.withLock({ $0.failingRulesReads.contains(node.nodeName) }) {
            throw DatabaseStorageError(.unavailable, "The rules cannot be read now")
        }
        return try withDatabase { database, _ in Array(database.history.suffix(limit).reversed()) }
    }

    func storedBytes() async throws -> Int64? { nil }

    func close() async throws {}
}
