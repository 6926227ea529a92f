import HearthCore
import HearthRules
public import HearthStorage
public import Logging
public import ServiceLifecycle
import Synchronization

/// Opens namespaces lazily on first use and runs their writers. A `Service`: the writers run inside it.
///
/// For example:
/// ```swift
/// let registry = DatabaseRegistry(storage: InMemoryStorage(), logger: logger)
/// let database = try await registry.database("demo")
/// ```
public final class DatabaseRegistry: Service, Sendable {
    enum Entry {
        case loading([CheckedContinuation<DatabaseInstance, any Error>])
        case ready(DatabaseInstance)
    }

    let storage: any DatabaseStorage
    let configuration: EngineConfiguration
    let logger: Logger
    /// In a cluster: what the databases share; nil on a single node.
    package let cluster: (any ClusterLink)?
    private let entries = Mutex<[String: Entry]>([:])
    // Unbounded, but it carries one element per namespace ever opened.
    private let opened: AsyncStream<DatabaseInstance>
    private let announce: AsyncStream<DatabaseInstance>.Continuation

    public convenience init(storage: any DatabaseStorage, configuration: EngineConfiguration = EngineConfiguration(), logger: Logger) {
        self.init(storage: storage, configuration: configuration, logger: logger, cluster: nil)
    }

    package init(storage: any DatabaseStorage, configuration: EngineConfiguration, logger: Logger, cluster: (any ClusterLink)?) {
        self.storage = storage
        self.configuration = configuration
        self.logger = logger
        self.cluster = cluster
        (opened, announce) = AsyncStream.makeStream(of: DatabaseInstance.self)
    }

    /// The database of a namespace, loading it from storage the first time.
    public func database(_ namespace: String) async throws -> DatabaseInstance {
        enum Step {
            case ready(DatabaseInstance)
            case wait
            case load
        }
        let step: Step = entries.withLock { entries in
            switch entries[namespace] {
            case .ready(let database)?: return .ready(database)
            case .loading?: return .wait
            case nil:
                entries[namespace] = .loading([])
                return .load
            }
        }
        switch step {
        case .ready(let database):
            return database
        case .load:
            return try await load(namespace).get()
        case .wait:
            return try await withCheckedThrowingContinuation { continuation in
                let ready: DatabaseInstance?? = entries.withLock { entries in
                    switch entries[namespace] {
                    case .ready(let database)?: return .some(database)
                    case .loading(var waiters)?:
                        waiters.append(continuation)
                        entries[namespace] = .loading(waiters)
                        return .none
                    case nil: return .some(nil)
                    }
                }
                switch ready {
                case .some(let database?): continuation.resume(returning: database)
                case .some(nil): continuation.resume(throwing: DatabaseStorageError(.unavailable, "The database could not be opened; try again"))
                case .none: break
                }
            }
        }
    }

    private func load(_ namespace: String) async -> Result<DatabaseInstance, any Error> {
        let result: Result<DatabaseInstance, any Error>
        do {
            let started = ContinuousClock.now
            let namespaceStorage: any NamespaceStorage
            let stored: StoredDatabase
            var replica: DatabaseReplica?
            var warming = false
            var memoryLimit: MemoryLimit?
            if let cluster {
                let shared = try await cluster.storage.openShared(namespace: namespace)
                let (loaded, sequence) = try await shared.loadWithSequence()
                namespaceStorage = shared
                stored = loaded
                replica = DatabaseReplica(shared: shared, cluster: cluster, applied: sequence)
            } else {
                namespaceStorage = try await storage.open(namespace: namespace)
                if let limit = configuration.memoryLimit, let fromFile = try await namespaceStorage.warmStart(minimumBytes: 0) {
                    // Read from the file for good, never loaded whole.
                    stored = fromFile
                    memoryLimit = limit
                } else if let warm = try await namespaceStorage.warmStart(minimumBytes: configuration.warmStartBytes) {
                    stored = warm
                    warming = true
                } else {
                    stored = try await namespaceStorage.load()
                }
            }
            logger.info(
                memoryLimit != nil ? "Serving the database from its file, within the memory limit"
                    : warming ? "Answering reads from the database's file while it loads" : "Loaded database",
                metadata: ["hearth.namespace": "\(namespace)", "hearth.load.duration": "\(ContinuousClock.now - started)"]
            )
            var rules = RulesDocument.defaults(open: configuration.emulatorMode)
            if let source = stored.rulesSource {
                do {
                    rules = try RulesDocument(source: source)
                } catch {
                    logger.warning("Stored rules do not parse; using the defaults", metadata: ["hearth.namespace": "\(namespace)"])
                }
            }
            var databaseLogger = logger
            databaseLogger[metadataKey: "hearth.namespace"] = "\(namespace)"
            let database = DatabaseInstance(
                namespace: namespace,
                storage: namespaceStorage,
                loaded: stored,
                rules: rules,
                configuration: configuration,
                logger: databaseLogger,
                replica: replica,
                warming: warming,
                memoryLimit: memoryLimit
            )
            announce.yield(database)
            if warming { warm(database, from: namespaceStorage, started: started) }
            if let replica {
                // A database nobody ever owned (just created) is taken by the node that opened it, so its
                // first write does not wait for the next ownership round.
                if try await replica.shared.lease() == nil, let lease = try await replica.shared.claim() {
                    replica.noteLease(lease)
                    replica.setClaimPending(true)
                    database.changeRole(.becomeOwner(lease))
                }
            }
            result = .success(database)
        } catch {
            result = .failure(error)
        }
        let waiters: [CheckedContinuation<DatabaseInstance, any Error>] = entries.withLock { entries in
            guard case .loading(let waiters)? = entries[namespace] else { return [] }
            switch result {
            case .success(let database): entries[namespace] = .ready(database)
            case .failure: entries.removeValue(forKey: namespace)
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
        return result
    }

    /// Loads a warming database's whole tree in the background, then hands it over; a failed load is
    /// retried (reads go on from the file meanwhile).
    private func warm(_ database: DatabaseInstance, from storage: any NamespaceStorage, started: ContinuousClock.Instant) {
        let logger = self.logger
        Task.detached(priority: .userInitiated) {
            var delay = Duration.milliseconds(100)
            while database.isWarming {
                do {
                    let loaded = try await storage.load()
                    database.finishWarming(loaded.root)
                    // The load's scaffolding (row buffers, the two halves before their merge) is garbage now.
                    HeapRelease.releaseFreeMemory()
                    logger.info(
                        "Loaded database",
                        metadata: ["hearth.namespace": "\(database.namespace)", "hearth.load.duration": "\(ContinuousClock.now - started)"]
                    )
                    return
                } catch {
                    logger.error(
                        "Cannot load the database; reads go on from its file, writes wait",
                        metadata: ["hearth.namespace": "\(database.namespace)", "hearth.error": "\(error)"]
                    )
                    try? await Task.sleep(for: delay)
                    delay = min(delay * 2, .seconds(30))
                }
            }
        }
    }

    /// Loads every namespace that has stored data, so they are ready before the first request.
    public func preload() async throws {
        for namespace in try await storage.namespaces() {
            _ = try await database(namespace)
        }
    }

    /// The namespace's database if it exists (open, or stored), without creating one: what requests
    /// that may not create databases get (a client that is not the admin, outside emulator mode).
    public func existingDatabase(_ namespace: String) async throws -> DatabaseInstance? {
        let known = entries.withLock { $0[namespace] != nil }
        if !known {
            guard try await storage.contains(namespace: namespace) else { return nil }
        }
        return try await database(namespace)
    }

    /// Whether the namespace's database is open (loaded and serving).
    package func isOpen(_ namespace: String) -> Bool {
        entries.withLock { entries in
            if case .ready? = entries[namespace] { return true }
            return false
        }
    }

    /// The namespace's database if it is open (loaded), without loading it.
    package func openDatabase(_ namespace: String) -> DatabaseInstance? {
        entries.withLock { entries in
            if case .ready(let database)? = entries[namespace] { return database }
            return nil
        }
    }

    /// The names of every database, stored or open (one opened but not yet written may have no file),
    /// sorted.
    public func namespaces() async throws -> [String] {
        let stored = try await storage.namespaces()
        return Set(stored).union(openDatabases.map(\.namespace)).sorted()
    }

    /// Every database opened so far.
    public var openDatabases: [DatabaseInstance] {
        entries.withLock { entries in
            entries.values.compactMap { entry in
                if case .ready(let database) = entry { return database }
                return nil
            }
        }
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for await database in opened.cancelOnGracefulShutdown() {
                group.addTask { await database.runWriter() }
            }
            // Shutting down (after the HTTP server, which closed every connection): end every stream, and
            // let each writer finish what is queued, then stop.
            for database in openDatabases {
                database.hub.finishAll()
                database.finishWrites()
            }
        }
    }
}
