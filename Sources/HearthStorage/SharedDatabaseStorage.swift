public import HearthCore

/// Storage that several Hearth nodes share (PostgreSQL): each database has one owner node at a time,
/// holding a lease whose epoch fences every commit, and every commit appends one entry to the
/// database's ordered change log, which every node applies (docs/decisions/0010-scale-out.md).
///
/// For example:
/// ```swift
/// let storage: any SharedDatabaseStorage = try await PostgresStorage.connect(url, node: "a")
/// try await storage.join(address: "http://10.0.0.5:9000")
/// let db = try await storage.openShared(namespace: "demo")
/// if let lease = try await db.claim() {
///     let seq = try await db.commit(mutations, entry: entryJSON, epoch: lease.epoch)
/// }
/// ```
public protocol SharedDatabaseStorage: DatabaseStorage {
    /// This node's name (`--node-name`), unique in the cluster.
    var nodeName: String { get }
    /// Registers this node as a live member reachable at `address` (its base URL for other nodes), and
    /// keeps it alive (heartbeats) until ``leave()``. A node is alive while its heartbeat is fresh and
    /// its session with the shared storage is open (so a killed node is seen dead at once).
    func join(address: String) async throws
    /// Marks this node gone and releases its leases (graceful shutdown).
    func leave() async throws
    /// The members, alive or recently seen.
    func members() async throws -> [ClusterMember]
    /// Whether this node's own heartbeat succeeded within the lease time: an owner that is not sure of
    /// this must not answer from its tree (another node may own the database by now).
    var isLeaseFresh: Bool { get }
    /// While this node's heartbeat is fresh, the generation of its unbroken run of heartbeats (it changes
    /// whenever the liveness session ends or the heartbeats lapse: the others may have taken its leases
    /// meanwhile); nil while it is not fresh. A lease this node reads as its own after seeing generation
    /// `g` stays its own for as long as this is still `g`: nobody can take it in between. One seen while
    /// this was nil proves nothing (after a reconnect, the others see the node dead until its first
    /// heartbeat).
    var freshGeneration: Int? { get }
    /// Opens one namespace's shared storage.
    func openShared(namespace: String) async throws -> any SharedNamespaceStorage
    /// Stores the onDisconnect writes of one of this node's connections to a database, replacing what was
    /// stored for that connection; nil deletes them (the connection ran or cancelled them). Rows are
    /// kept under this node's name and this run of it (a restarted node is another run).
    func saveOnDisconnect(namespace: String, connection: String, payload: String?) async throws
    /// Takes (removes and returns) the stored onDisconnect writes of connections whose node is gone —
    /// other members that are dead, and earlier runs of a name — so a live node runs them. Each is
    /// returned once; the rows of this node's own run are never taken.
    func takeOrphanedOnDisconnects() async throws -> [OrphanedOnDisconnect]
    /// Wake-ups: a namespace and a sequence number committed in it, sent once per commit. Best effort:
    /// a lost one costs latency only, since nodes also poll. Unbounded buffer: consumers drain it at once.
    func commitNotifications() -> AsyncStream<CommitNotification>
}

/// One namespace's storage, shared by the nodes of a cluster.
///
/// Every durable change appends one log entry, so that the nodes applying the log see it: a fenced
/// ``commit(_:entry:epoch:)`` the entry given; plain ``NamespaceStorage/commit(_:)`` (imports, tools)
/// ``LogEntry/reloadPayload``; ``NamespaceStorage/saveRules(_:time:)`` ``LogEntry/rulesPayload``
/// (`{"rules":true}`: reload the rules from storage).
public protocol SharedNamespaceStorage: NamespaceStorage {
    /// Loads the tree, the rules and the sequence number of the last log entry they include, from one
    /// consistent snapshot.
    func loadWithSequence() async throws -> (database: StoredDatabase, sequence: Int64)
    /// The current lease: who owns the database, with which epoch, and its last committed sequence
    /// number. nil when no node holds it (never claimed, released, or its owner left).
    func lease() async throws -> DatabaseLease?
    /// Takes the lease when it is free, held by this node already (a restarted node takes a new epoch),
    /// or held by a node that is no longer alive. Returns the new lease (with a higher epoch), or nil
    /// when a live node holds it.
    func claim() async throws -> DatabaseLease?
    /// Gives the lease up, if this node holds it with `epoch`.
    func release(epoch: Int64) async throws
    /// Applies the mutations and appends `entry` to the change log, atomically and durably, if this node
    /// still holds the lease with `epoch` and, unless `after` is nil, the log's last entry is `after`.
    /// Returns the entry's sequence number.
    /// - Throws: ``DatabaseStorageError`` with code `.fenced` when the lease has moved on, `.behind` when
    ///   the log has entries after `after` (nothing is applied in either case).
    func commit(_ mutations: [StorageMutation], entry: String, epoch: Int64, after: Int64?) async throws -> Int64
    /// Appends an entry that changes no data (a rules change), whoever owns the database, in log order.
    func append(entry: String) async throws -> Int64
    /// Log entries after `sequence`, in order, at most `limit`. Entries older than the retention may be
    /// gone: then the first returned entry's sequence is not `sequence + 1`, and the caller reloads.
    func changes(after sequence: Int64, limit: Int) async throws -> [LogEntry]
    /// The sequence number of the last committed log entry: a read barrier.
    func committedSequence() async throws -> Int64
    /// Sends the wake-up for a commit (after it, outside its transaction).
    func notify(sequence: Int64) async throws
}

/// A database's lease.
public struct DatabaseLease: Sendable, Equatable {
    public var owner: String
    public var epoch: Int64
    public var lastSequence: Int64
    /// The owner's address (base URL), for forwarding writes to it.
    public var ownerAddress: String?

    public init(owner: String, epoch: Int64, lastSequence: Int64, ownerAddress: String?) {
        self.owner = owner
        self.epoch = epoch
        self.lastSequence = lastSequence
        self.ownerAddress = ownerAddress
    }
}

/// One entry of a database's change log.
public struct LogEntry: Sendable, Equatable {
    public var sequence: Int64
    /// Opaque to the storage: the engine's encoding of the change (JSON text).
    public var payload: String

    public init(sequence: Int64, payload: String) {
        self.sequence = sequence
        self.payload = payload
    }

    /// The payload that plain ``NamespaceStorage/commit(_:)`` (imports, tools) appends: nodes reload the
    /// database from storage when they reach it.
    public static let reloadPayload = #"{"reload":true}"#

    /// The payload that ``NamespaceStorage/saveRules(_:time:)`` appends on shared storage: nodes reload the
    /// database's rules from storage when they reach it.
    public static let rulesPayload = #"{"rules":true}"#
}

/// A member of the cluster.
public struct ClusterMember: Sendable, Equatable {
    public var name: String
    public var address: String
    public var alive: Bool
    /// Seconds since its last heartbeat.
    public var heartbeatAge: Double

    public init(name: String, address: String, alive: Bool, heartbeatAge: Double) {
        self.name = name
        self.address = address
        self.alive = alive
        self.heartbeatAge = heartbeatAge
    }
}

/// The onDisconnect writes of a connection whose node died.
public struct OrphanedOnDisconnect: Sendable, Equatable {
    public var namespace: String
    /// The engine's encoding of the writes, as given to `saveOnDisconnect`.
    public var payload: String

    public init(namespace: String, payload: String) {
        self.namespace = namespace
        self.payload = payload
    }
}

/// A commit's wake-up.
public struct CommitNotification: Sendable, Equatable {
    public var namespace: String
    public var sequence: Int64

    public init(namespace: String, sequence: Int64) {
        self.namespace = namespace
        self.sequence = sequence
    }
}

extension SharedNamespaceStorage {
    /// ``commit(_:entry:epoch:after:)`` fenced by the lease alone, whatever the log's last entry.
    public func commit(_ mutations: [StorageMutation], entry: String, epoch: Int64) async throws -> Int64 {
        try await commit(mutations, entry: entry, epoch: epoch, after: nil)
    }
}
