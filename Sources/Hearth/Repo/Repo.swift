import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// The engine behind one ``Database``: the sync trees (data and `.info`), the connection's state
/// machine and socket, pending operations and transactions. Its state lives in one `Mutex`, and
/// every user callback is queued, in order, while that lock is held, so events come out in exactly
/// the order the engine produced them (the queued callbacks have a small lock of their own).
final class Repo: Sendable {
    typealias EventCallback = @Sendable (DataSnapshot, String?) -> Void
    typealias CancelCallback = @Sendable (any Error) -> Void
    typealias WriteCompletion = @Sendable ((any Error)?) -> Void

    struct Observer: Sendable {
        var spec: QuerySpec
        var type: DataEventType
        var isInfo: Bool
        var callback: EventCallback
        var cancel: CancelCallback?
        /// Observers the SDK adds for itself (transactions), left alone by `removeAllObservers`.
        var isInternal = false
    }

    enum PendingOperation: Sendable {
        case write(writeID: Int, completion: WriteCompletion?)
        case onDisconnect(completion: WriteCompletion?)
        case get(path: DatabasePath, query: Query, completion: @Sendable (Result<Node, DatabaseError>) -> Void)
        case transaction(id: Int)
    }

    /// User callbacks made but not yet run, in order, and whether a block that runs them is queued on
    /// the callback queue: a burst of frames (a stream of acknowledgements, of child events) costs
    /// one queue hop rather than one per frame.
    struct PendingCallbacks {
        var queue = DispatchQueue.main
        var calls: [@Sendable () -> Void] = []
        var drainQueued = false
        /// While frames that arrived together are handled, callbacks are kept and the queue woken once
        /// at the end (``Repo/received(_:generation:)``): waking it is a system call and a thread switch.
        var holding = false
        /// Counts callback queue changes: a block queued on the previous queue finds nothing to run.
        var queueGeneration = 0
    }

    struct Transaction: Sendable {
        var path: DatabasePath
        var update: @Sendable (MutableData) -> TransactionResult
        var completion: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?
        var applyLocally: Bool
        var retries = 0
        var observer: UInt
        var writeID: Int?
        var output: Node = .empty
        /// Set while an earlier transaction at an overlapping location is still running: this one runs
        /// when that one ends, on the value it left.
        var isWaiting = false
    }

    struct State: Sendable {
        var machine = ConnectionStateMachine()
        var tree = SyncTree()
        var infoTree = SyncTree()
        var socket: (any WebSocketConnection)?
        var assembler = WireFrameAssembler()
        /// Frames that arrived before the socket was stored.
        var earlyFrames: [String] = []
        var generation = 0
        var wantsOnline = true
        var started = false
        var backoff = Backoff()
        var connectedAt: Double = 0
        /// ``Repo/connectTimeout`` unless a test that runs a fast clock against a real socket lengthens it.
        var connectTimeout = Repo.connectTimeout
        var lastTraffic: Double = 0
        var loop: Task<Void, Never>?
        var closeWaiter: CheckedContinuation<Void, Never>?
        var listenTokens: [ServerListen: Int] = [:]
        var listenByToken: [Int: ServerListen] = [:]
        var operations: [Int: PendingOperation] = [:]
        var observers: [UInt: Observer] = [:]
        var nextHandle: UInt = 1
        var nextWriteID = 1
        var transactions: [Int: Transaction] = [:]
        var nextTransactionID = 1
        /// This client's onDisconnect operations, applied locally when the connection drops.
        var onDisconnect: [(path: DatabasePath, json: JSONValue)] = []
        var keptSynced: [QuerySpec: [UInt]] = [:]
        var tokenProvider: (@Sendable () async -> String?)?
        var info: RepoInfo
        /// Persistence (set before the first use): unconfirmed writes are kept across launches in a
        /// folder of `persistenceRoot` named for the database.
        var persistenceEnabled = false
        var persistenceRoot = Repo.defaultPersistenceRoot
        var cacheSizeBytes = 10 * 1024 * 1024
        var store: PersistentStore?
        /// Listened locations whose data changed since the cache was last saved.
        var cacheDirty: Set<DatabasePath> = []
        /// Filtered queries whose window changed since the cache was last saved.
        var windowsDirty: Set<QuerySpec> = []
        var cacheFlushScheduled = false
        /// PEM files of certificate authorities trusted for `wss` besides the system's roots.
        var certificateAuthorityFiles: [URL] = []
    }

    let state: Mutex<State>
    /// Callbacks made but not yet run, behind a lock of their own: the callback queue takes them
    /// without waiting for the engine, which holds `state` while it applies a burst of frames.
    /// Calls are added while `state` is held (so in the engine's order); `state` is never taken
    /// while this is.
    let callbacks = Mutex(PendingCallbacks())
    let transport: any WebSocketTransport
    let clock: any HearthClock
    let pushIDs: PushIDGenerator
    /// Server time minus local time, for push ids (read outside the state lock).
    let serverTimeOffset = ServerTimeOffset()
    /// The database these references belong to (set once, right after creation).
    let owner = Mutex<Database?>(nil)
    /// Runs transaction update blocks, off the network threads.
    let transactionQueue = DispatchQueue(label: "hearth.transactions")
    /// The keep-alive loop of the current connection (Repo+Connection.swift).
    let keepAliveTask = Mutex<Task<Void, Never>?>(nil)

    static let keepAliveInterval: Double = 45_000

    init(info: RepoInfo, transport: any WebSocketTransport, clock: any HearthClock) {
        self.transport = transport
        self.clock = clock
        self.state = Mutex(State(info: info))
        let offset = self.serverTimeOffset
        self.pushIDs = PushIDGenerator(clock: { UInt64(clock.milliseconds() + offset.value) })
        state.withLock { state in
            state.infoTree.listenStarted(ServerListen(path: .root, query: nil))
            _ = state.infoTree.listenCompleted(ServerListen(path: .root, query: nil))
            _ = state.infoTree.applyServerOverwrite(path: DatabasePath(keys: [Key("connected")]), node: .leaf(.bool(false)), tag: nil)
            _ = state.infoTree.applyServerOverwrite(path: DatabasePath(keys: [Key("serverTimeOffset")]), node: .leaf(.number(0)), tag: nil)
        }
    }

    var database: Database { owner.withLock { $0! } }
}

/// The latest server time offset in milliseconds, readable from any thread.
final class ServerTimeOffset: Sendable {
    private let storage = Mutex<Double>(0)

    var value: Double {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

extension JSONValue {
    /// Whether a `{".sv": …}` placeholder occurs anywhere in the value.
    var containsServerValue: Bool {
        switch self {
        case .object(let members): members.contains { $0.key == ".sv" || $0.value.containsServerValue }
        case .array(let items): items.contains { $0.containsServerValue }
        default: false
        }
    }
}
