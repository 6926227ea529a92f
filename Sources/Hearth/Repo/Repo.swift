import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// The engine behind one ``Database``: the sync trees (data and `.info`), the connection's state
/// machine and socket, pending operations and transactions. All its state lives in one `Mutex`, and
/// every user callback is queued, in order, on the callback queue while that lock is held, so events
/// come out in exactly the order the engine produced them.
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
        var callbackQueue = DispatchQueue.main
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
    let transport: any WebSocketTransport
    let clock: any HearthClock
    let pushIDs: PushIDGenerator
    /// Server time minus local time, for push ids (read outside the state lock).
    let serverTimeOffset = ServerTimeOffset()
    /// The database these references belong to (set once, right after creation).
    let owner = Mutex<Database?>(nil)
    /// Runs transaction update blocks, off the network threads.
    let transactionQueue = DispatchQueue(label: "hearth.transactions")

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

    // MARK: Connection loop

    /// Starts connecting (once), unless the app went offline first.
    func start() {
        state.withLock { state in
            guard !state.started else { return }
            state.started = true
            if state.persistenceEnabled { restorePersistedState(&state) }
            if state.wantsOnline { startLoop(&state) }
        }
    }

    private func startLoop(_ state: inout State) {
        guard state.loop == nil else { return }
        state.loop = Task { [self] in await runConnectionLoop() }
    }

    func goOnline() {
        state.withLock { state in
            state.wantsOnline = true
            state.backoff.reset()
            if state.started { startLoop(&state) }
        }
    }

    func goOffline() {
        let (loop, socket) = state.withLock { state -> (Task<Void, Never>?, (any WebSocketConnection)?) in
            state.wantsOnline = false
            let loop = state.loop
            let socket = state.socket
            state.loop = nil
            // The connection ends now, not when the socket's close is noticed: later operations queue.
            if state.machine.phase != .disconnected || socket != nil { connectionEnded(&state) }
            return (loop, socket)
        }
        loop?.cancel()
        socket?.close()
        // What the client knew until now is what a launch without a connection will show.
        flushCache()
    }

    private func runConnectionLoop() async {
        while !Task.isCancelled {
            let delay = state.withLock { $0.backoff.nextDelay() }
            do { try await clock.sleep(milliseconds: delay) } catch { return }
            let provider = state.withLock { $0.tokenProvider }
            let token = await provider?()
            // A cancelled loop (goOffline, perhaps followed by goOnline and a new loop) must not touch
            // the connection state any more: the check and the update happen under one lock.
            guard let (generation, info, query, authorities) = state.withLock({ state -> (Int, RepoInfo, String, [URL])? in
                guard !Task.isCancelled else { return nil }
                state.generation += 1
                state.machine.authToken = token
                state.machine.connecting()
                state.assembler = WireFrameAssembler()
                state.earlyFrames = []
                return (state.generation, state.info, state.machine.connectionQuery(namespace: state.info.namespace), state.certificateAuthorityFiles)
            }) else { return }
            let attempt = ConnectAttempt()
            let timer = startConnectTimeout(generation: generation, attempt: attempt)
            defer { timer.cancel() }
            let socket: any WebSocketConnection
            do {
                let transport = authorities.isEmpty ? self.transport : self.transport.trusting(certificateAuthorityFiles: authorities)
                socket = try await attempt.run { [self] in
                    try await transport.connect(
                        host: info.host, port: info.port, secure: info.secure, path: "/.ws?" + query,
                        onFrame: { [self] text in received(text, generation: generation) },
                        onClose: { [self] in closed(generation: generation) }
                    )
                }
            } catch {
                state.withLock { state in if state.generation == generation { _ = state.machine.disconnected() } }
                continue
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let keep = state.withLock { state -> Bool in
                    guard state.generation == generation, state.wantsOnline, !Task.isCancelled else { return false }
                    state.socket = socket
                    state.connectedAt = clock.milliseconds()
                    state.lastTraffic = state.connectedAt
                    state.closeWaiter = continuation
                    let early = state.earlyFrames
                    state.earlyFrames = []
                    var handshake = false
                    for text in early where state.generation == generation { handshake = process(&state, text) || handshake }
                    if handshake { startKeepAlive(generation: generation) }
                    return true
                }
                if !keep {
                    socket.close()
                    continuation.resume()
                }
            }
            if !state.withLock({ $0.wantsOnline }) { return }
        }
    }

    /// How long an attempt may take from opening the TCP connection to the server's handshake before
    /// it is abandoned and retried with backoff: 30 s, the official SDKs' value (the JS SDK's WebSocket
    /// `healthyTimeout`). A socket that opens but stays silent would otherwise wait forever.
    static let connectTimeout: Double = 30_000

    /// Abandons attempt `generation` if it has not completed the handshake after ``connectTimeout``:
    /// a connect still pending fails (the loop retries after a backoff delay), an open socket without a
    /// handshake is closed and the connection ends as any lost connection does.
    private func startConnectTimeout(generation: Int, attempt: ConnectAttempt) -> Task<Void, Never> {
        Task { [self] in
            let timeout = state.withLock { $0.connectTimeout }
            do { try await clock.sleep(milliseconds: timeout) } catch { return }
            let silent = state.withLock { state -> (any WebSocketConnection)? in
                guard state.generation == generation, state.machine.phase == .connecting else { return nil }
                guard let socket = state.socket else {
                    // Still connecting (or connected but not yet stored): this attempt is over either way.
                    state.generation += 1
                    _ = state.machine.disconnected()
                    return nil
                }
                connectionEnded(&state)
                return socket
            }
            silent?.close()
            attempt.fail(WebSocketTransportError.timedOut)
        }
    }

    private func closed(generation: Int) {
        state.withLock { state in
            guard state.generation == generation else { return }
            connectionEnded(&state)
        }
    }

    /// The current connection is over: operations queue again, `.info/connected` turns false, this
    /// client's onDisconnect writes show locally, sent transactions rerun, and the loop may retry.
    private func connectionEnded(_ state: inout State) {
        state.generation += 1
        let wasConnected = state.machine.phase == .connected
        state.socket = nil
        // Only a connection that got as far as the handshake counts as up (a silent one must not reset
        // the backoff however long it stayed open).
        if state.machine.phase != .connecting { state.backoff.connectionEnded(after: clock.milliseconds() - state.connectedAt) }
        let failed = state.machine.disconnected()
        var events: [RaisedEvent] = []
        let infoEvents = state.infoTree.applyServerOverwrite(path: DatabasePath(keys: [Key("connected")]), node: .leaf(.bool(false)), tag: nil)
        if wasConnected { events += applyOnDisconnectLocally(&state) }
        var after: [@Sendable () -> Void] = []
        for token in failed {
            if case .transaction(let id)? = state.operations.removeValue(forKey: token) {
                after += transactionFailed(&state, id: id, status: "disconnect", reason: "", rerun: true, events: &events)
            }
        }
        deliver(&state, events: events, infoEvents: infoEvents, after: after)
        let waiter = state.closeWaiter
        state.closeWaiter = nil
        waiter?.resume()
        keepAliveTask.withLock { $0?.cancel(); $0 = nil }
    }

    private let keepAliveTask = Mutex<Task<Void, Never>?>(nil)

    private func startKeepAlive(generation: Int) {
        let task = Task { [self] in
            while !Task.isCancelled {
                // nil once this connection is over: the task ends.
                let wait = state.withLock { state -> Double? in
                    guard state.generation == generation else { return nil }
                    let wait = Repo.keepAliveInterval - (clock.milliseconds() - state.lastTraffic)
                    if wait <= 0 { send(&state, [ClientWire.keepAlive]) }
                    return max(wait, 0)
                }
                guard let wait else { return }
                if wait > 0 {
                    do { try await clock.sleep(milliseconds: wait) } catch { return }
                }
            }
        }
        keepAliveTask.withLock { $0?.cancel(); $0 = task }
    }

    private func send(_ state: inout State, _ frames: [String]) {
        guard let socket = state.socket, !frames.isEmpty else { return }
        state.lastTraffic = clock.milliseconds()
        for frame in frames {
            for chunk in WireFrameAssembler.frames(for: Array(frame.utf8)) {
                socket.send(String(decoding: chunk, as: UTF8.self))
            }
        }
    }

    private func send(_ state: inout State, _ frame: String?) {
        if let frame { send(&state, [frame]) }
    }

    // MARK: Incoming

    private func received(_ text: String, generation: Int) {
        let handshake = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            // The handshake can arrive before the connect call has returned the socket: keep it.
            guard state.socket != nil else {
                state.earlyFrames.append(text)
                return false
            }
            return process(&state, text)
        }
        if handshake { startKeepAlive(generation: generation) }
    }

    /// Reassembles and handles one frame; returns true when it completed the handshake.
    private func process(_ state: inout State, _ text: String) -> Bool {
        state.lastTraffic = clock.milliseconds()
        let message: String
        do {
            guard case .message(let whole) = try state.assembler.receive(text) else { return false }
            message = whole
        } catch {
            state.socket?.close()
            return false
        }
        guard let frame = try? ServerFrame(parsing: message) else { return false }
        return handle(&state, frame)
    }

    /// Handles one server message; returns true when the handshake completed.
    private func handle(_ state: inout State, _ frame: ServerFrame) -> Bool {
        switch frame {
        case .handshake(let timestamp, let sessionID, _):
            for (listen, token) in state.listenTokens { state.machine.updateListenBody(token: token, body: listenBody(state, listen)) }
            let frames = state.machine.receivedHandshake(timestamp: timestamp, sessionID: sessionID, localTime: clock.milliseconds())
            serverTimeOffset.value = state.machine.serverTimeOffset
            send(&state, frames)
            var infoEvents = state.infoTree.applyServerOverwrite(
                path: DatabasePath(keys: [Key("serverTimeOffset")]), node: .leaf(.number(state.machine.serverTimeOffset)), tag: nil
            )
            if state.machine.phase == .connected {
                infoEvents += state.infoTree.applyServerOverwrite(path: DatabasePath(keys: [Key("connected")]), node: .leaf(.bool(true)), tag: nil)
            }
            deliver(&state, events: [], infoEvents: infoEvents)
            return true
        case .reset:
            state.socket?.close()
        case .authRevoked:
            // The server dropped the credential (expired or revoked): ask for a fresh one at once, as
            // the official SDKs do. An Auth's provider refreshes a token that is about to expire.
            if let provider = state.tokenProvider {
                Task { [self] in updateAuthToken(await provider()) }
            }
        case .shutdown:
            state.wantsOnline = false
            state.loop?.cancel()
            state.loop = nil
            state.socket?.close()
        case .pong, .ignored:
            break
        case .response(let number, let status, let data):
            handle(&state, state.machine.receivedResponse(number: number, status: status, data: data))
        case .overwrite(let path, let data, let tag):
            guard let node = try? Node(json: data) else { return false }
            deliver(&state, events: state.tree.applyServerOverwrite(path: path, node: node, tag: tag))
            if let tag { markWindowDirty(&state, tag: tag) } else { markCacheDirty(&state, [path]) }
        case .merge(let path, let items, let tag):
            var nodes: [(path: DatabasePath, node: Node)] = []
            for item in items { if let node = try? Node(json: item.value) { nodes.append((item.path, node)) } }
            deliver(&state, events: state.tree.applyServerMerge(path: path, items: nodes, tag: tag))
            if let tag { markWindowDirty(&state, tag: tag) } else { markCacheDirty(&state, nodes.map { path.appending($0.path) }) }
        case .listenRevoked(let path):
            for (listen, token) in state.listenTokens where listen.path == path {
                handle(&state, .listen(token: token, status: "permission_denied", data: .string("Permission denied")))
            }
        }
        return false
    }

    private func handle(_ state: inout State, _ outcome: ConnectionStateMachine.Outcome) {
        switch outcome {
        case .none:
            break
        case .authenticated(let restore):
            send(&state, restore)
            if !restore.isEmpty || state.machine.phase == .connected {
                let infoEvents = state.infoTree.applyServerOverwrite(path: DatabasePath(keys: [Key("connected")]), node: .leaf(.bool(true)), tag: nil)
                deliver(&state, events: [], infoEvents: infoEvents)
            }
        case .authenticationFailed:
            state.socket?.close()
        case .listen(let token, let status, let data):
            guard let listen = state.listenByToken[token] else { return }
            if status == "ok" {
                deliver(&state, events: state.tree.listenCompleted(listen))
                if let query = listen.query {
                    state.windowsDirty.insert(QuerySpec(path: listen.path, query: query))
                    scheduleCacheFlush(&state)
                } else {
                    markCacheDirty(&state, [listen.path])
                }
                return
            }
            state.listenByToken[token] = nil
            state.listenTokens[listen] = nil
            let cancelled = state.tree.listenFailed(listen)
            var reason = ""
            if case .string(let text) = data { reason = text }
            let error = DatabaseError(status: status, reason: reason)
            var after: [@Sendable () -> Void] = []
            for handle in cancelled {
                if let observer = state.observers.removeValue(forKey: handle), let cancel = observer.cancel {
                    after.append { cancel(error) }
                }
            }
            syncListens(&state)
            deliver(&state, events: [], after: after)
        case .completed(let token, let status, let data):
            guard let operation = state.operations.removeValue(forKey: token) else { return }
            var reason = ""
            if case .string(let text) = data { reason = text }
            let error: DatabaseError? = status == "ok" ? nil : DatabaseError(status: status, reason: reason)
            switch operation {
            case .write(let writeID, let completion):
                state.store?.confirm(id: writeID)
                let events = state.tree.ackWrite(writeID: writeID, revert: error != nil)
                deliver(&state, events: events, after: completion.map { completion in [{ completion(error) }] } ?? [])
            case .onDisconnect(let completion):
                deliver(&state, events: [], after: completion.map { completion in [{ completion(error) }] } ?? [])
            case .get(_, _, let completion):
                if let error {
                    deliver(&state, events: [], after: [{ completion(.failure(error)) }])
                } else {
                    let node = (try? Node(json: data)) ?? .empty
                    deliver(&state, events: [], after: [{ completion(.success(node)) }])
                }
            case .transaction(let id):
                var events: [RaisedEvent] = []
                let after: [@Sendable () -> Void]
                if status == "ok" {
                    after = transactionCommitted(&state, id: id, events: &events)
                } else {
                    after = transactionFailed(&state, id: id, status: status, reason: reason, rerun: status == "datastale", events: &events)
                }
                deliver(&state, events: events, after: after)
            }
        }
    }

    // MARK: Delivering events

    private func deliver(_ state: inout State, events: [RaisedEvent], infoEvents: [RaisedEvent] = [], after: [@Sendable () -> Void] = []) {
        var calls: [@Sendable () -> Void] = []
        let database = self.database
        for (event, isInfo) in infoEvents.map({ ($0, true) }) + events.map({ ($0, false) }) {
            guard let observer = state.observers[event.registration] else { continue }
            var path = event.path
            if isInfo { path = DatabasePath(keys: [Key(".info")] + path.keys) }
            let snapshot = DataSnapshot(reference: DatabaseReference(database: database, path: path), node: event.node, index: event.index)
            let previous = event.previousKey
            let callback = observer.callback
            calls.append { callback(snapshot, previous) }
        }
        calls += after
        guard !calls.isEmpty else { return }
        let batch = calls
        state.callbackQueue.async { for call in batch { call() } }
    }

    // MARK: Listens

    private func listenBody(_ state: State, _ listen: ServerListen) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("p", ClientWire.path(listen.path))]
        if let query = listen.query, let object = ClientWire.queryObject(query) {
            members.append(("q", object))
            if let tag = state.tree.tag(for: listen) { members.append(("t", .number(Double(tag)))) }
        }
        members.append(("h", .string(state.tree.hash(for: listen))))
        return .object(members)
    }

    /// Sends the listens the sync tree now wants and stops the ones it no longer does.
    private func syncListens(_ state: inout State) {
        let changes = state.tree.takeListenChanges()
        for listen in changes.added.filter({ state.listenTokens[$0] == nil }).sorted(by: { $0.path.count < $1.path.count }) {
            let token = state.machine.makeToken()
            state.listenTokens[listen] = token
            state.listenByToken[token] = listen
            state.tree.listenStarted(listen)
            let body = listenBody(state, listen)
            send(&state, state.machine.listen(token: token, body: body))
        }
        for listen in changes.removed {
            guard let token = state.listenTokens.removeValue(forKey: listen) else { continue }
            state.listenByToken[token] = nil
            var members: [(key: String, value: JSONValue)] = [("p", ClientWire.path(listen.path))]
            if let query = listen.query, let object = ClientWire.queryObject(query) {
                members.append(("q", object))
                if let tag = state.tree.tag(for: listen) { members.append(("t", .number(Double(tag)))) }
            }
            send(&state, state.machine.unlisten(token: token, body: .object(members)))
            deliver(&state, events: state.tree.listenStopped(listen))
        }
    }

    // MARK: Observers

    static func isInfo(_ path: DatabasePath) -> Bool { path.keys.first?.string == ".info" }

    func addObserver(spec: QuerySpec, type: DataEventType, callback: @escaping EventCallback, cancel: CancelCallback?) -> UInt {
        start()
        return state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            let isInfo = Repo.isInfo(spec.path)
            state.observers[handle] = Observer(spec: spec, type: type, isInfo: isInfo, callback: callback, cancel: cancel)
            if isInfo {
                var infoSpec = spec
                infoSpec.path = DatabasePath(keys: Array(spec.path.keys.dropFirst()))
                deliver(&state, events: [], infoEvents: state.infoTree.addRegistration(id: handle, type: type, spec: infoSpec))
            } else {
                let events = state.tree.addRegistration(id: handle, type: type, spec: spec)
                syncListens(&state)
                deliver(&state, events: events)
            }
            return handle
        }
    }

    func removeObserver(_ handle: UInt) {
        state.withLock { state in
            guard let observer = state.observers.removeValue(forKey: handle) else { return }
            if observer.isInfo {
                state.infoTree.removeRegistration(id: handle)
            } else {
                state.tree.removeRegistration(id: handle)
                syncListens(&state)
            }
        }
    }

    func removeAllObservers(at path: DatabasePath) {
        state.withLock { state in
            let handles = state.observers.filter { $0.value.spec.path == path && !$0.value.isInternal }.map(\.key)
            for handle in handles {
                let observer = state.observers.removeValue(forKey: handle)!
                if observer.isInfo { state.infoTree.removeRegistration(id: handle) } else { state.tree.removeRegistration(id: handle) }
            }
            syncListens(&state)
        }
    }

    // MARK: Writes

    /// What a write's increments add to: the local value, computed only when the data holds a server
    /// value (it layers every pending write, which a stream of plain writes must not pay for).
    private static func existing(_ state: State, at path: DatabasePath, for json: JSONValue) -> Node {
        json.containsServerValue ? state.tree.localValue(at: path) : .empty
    }

    /// The estimated server time in ms, for `ServerValue.timestamp()`.
    private func serverNow(_ state: State) -> Double {
        (clock.milliseconds() + state.machine.serverTimeOffset).rounded()
    }

    func set(path: DatabasePath, json: JSONValue, completion: WriteCompletion?) {
        start()
        state.withLock { state in performSet(&state, path: path, json: json, completion: completion) }
    }

    private func performSet(_ state: inout State, path: DatabasePath, json: JSONValue, completion: WriteCompletion?) {
        let node: Node
        do {
            node = try Node(json: json, depth: path.count, context: ServerValueContext(now: serverNow(state), existing: Self.existing(state, at: path, for: json)))
        } catch {
            deliver(&state, events: [], after: completion.map { c in [{ c(DatabaseError(.invalidData, "\(error)")) }] } ?? [])
            return
        }
        var events: [RaisedEvent] = []
        let after = abortTransactions(&state, at: path, events: &events)
        let writeID = state.nextWriteID
        state.nextWriteID += 1
        let body = JSONValue.object([("p", ClientWire.path(path)), ("d", json)])
        state.store?.append(.init(id: writeID, action: "p", body: body))
        events += state.tree.applyUserOverwrite(writeID: writeID, path: path, node: node)
        let token = state.machine.makeToken()
        state.operations[token] = .write(writeID: writeID, completion: completion)
        send(&state, state.machine.enqueue(token: token, action: "p", body: body))
        deliver(&state, events: events, after: after)
    }

    func update(path: DatabasePath, children: [(path: DatabasePath, json: JSONValue)], completion: WriteCompletion?) {
        start()
        state.withLock { state in performUpdate(&state, path: path, children: children, completion: completion) }
    }

    private func performUpdate(_ state: inout State, path: DatabasePath, children: [(path: DatabasePath, json: JSONValue)], completion: WriteCompletion?) {
        var nodes: [(path: DatabasePath, node: Node)] = []
        do {
            for child in children {
                let absolute = path.appending(child.path)
                let context = ServerValueContext(now: serverNow(state), existing: Self.existing(state, at: absolute, for: child.json))
                nodes.append((child.path, try Node(json: child.json, depth: absolute.count, context: context)))
            }
        } catch {
            deliver(&state, events: [], after: completion.map { c in [{ c(DatabaseError(.invalidData, "\(error)")) }] } ?? [])
            return
        }
        let writeID = state.nextWriteID
        state.nextWriteID += 1
        let data = JSONValue.object(children.map { (key: $0.path.keys.map(\.string).joined(separator: "/"), value: $0.json) })
        let body = JSONValue.object([("p", ClientWire.path(path)), ("d", data)])
        state.store?.append(.init(id: writeID, action: "m", body: body))
        let events = state.tree.applyUserMerge(writeID: writeID, path: path, children: nodes)
        let token = state.machine.makeToken()
        state.operations[token] = .write(writeID: writeID, completion: completion)
        send(&state, state.machine.enqueue(token: token, action: "m", body: body))
        deliver(&state, events: events)
    }

    /// `setPriority`: a `p` to `path/.priority`; locally the node keeps its data with the new priority.
    func setPriority(path: DatabasePath, priority: JSONValue, completion: WriteCompletion?) {
        start()
        state.withLock { state in performSetPriority(&state, path: path, priority: priority, completion: completion) }
    }

    private func performSetPriority(_ state: inout State, path: DatabasePath, priority: JSONValue, completion: WriteCompletion?) {
        let priorityValue = try? Node.convertPriority(priority, context: nil)
        let node = state.tree.localValue(at: path).withPriority(priorityValue)
        let writeID = state.nextWriteID
        state.nextWriteID += 1
        let events = state.tree.applyUserOverwrite(writeID: writeID, path: path, node: node)
        let token = state.machine.makeToken()
        state.operations[token] = .write(writeID: writeID, completion: completion)
        let wirePath = JSONValue.string(path.isRoot ? "/.priority" : path.description + "/.priority")
        let body = JSONValue.object([("p", wirePath), ("d", priority)])
        state.store?.append(.init(id: writeID, action: "p", body: body))
        send(&state, state.machine.enqueue(token: token, action: "p", body: body))
        deliver(&state, events: events)
    }

    // MARK: Persistence

    /// Where persistence keeps its files when the app names no folder: Application Support on Apple
    /// platforms, `$XDG_DATA_HOME` (or `~/.local/share`) elsewhere, each in a `Hearth` folder.
    static var defaultPersistenceRoot: URL {
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("Hearth", isDirectory: true)
        #else
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        return base.appendingPathComponent("hearth", isDirectory: true)
        #endif
    }

    /// Loads the cached data, then queues the unconfirmed writes again, in order. They take the first
    /// write ids of this process, which are the ids the reopened store gives them.
    private func restorePersistedState(_ state: inout State) {
        let directory = state.persistenceRoot.appendingPathComponent(state.info.storageName, isDirectory: true)
        // Without a usable folder the database still works; only what it would have kept is lost.
        guard let log = try? PersistentStore(directory: directory) else { return }
        state.tree.restoreCache(log.recoveredCache)
        state.tree.restoreWindows(log.recoveredWindows)
        for write in log.recoveredWrites {
            state.nextWriteID = write.id
            guard case .object(let members) = write.body,
                  case .string(let wirePath)? = members.first(where: { $0.key == "p" })?.value,
                  let data = members.first(where: { $0.key == "d" })?.value else {
                log.confirm(id: write.id)
                continue
            }
            if write.action == "m", case .object(let children) = data, let path = try? DatabasePath(wirePath) {
                let relative = children.compactMap { key, value in (try? DatabasePath(key)).map { (path: $0, json: value) } }
                performUpdate(&state, path: path, children: relative, completion: nil)
            } else if wirePath.hasSuffix("/.priority"), let path = try? DatabasePath(String(wirePath.dropLast("/.priority".count))) {
                performSetPriority(&state, path: path, priority: data, completion: nil)
            } else if let path = try? DatabasePath(wirePath) {
                performSet(&state, path: path, json: data, completion: nil)
            } else {
                log.confirm(id: write.id)
            }
        }
        state.nextWriteID = (log.recoveredWrites.last?.id ?? 0) + 1
        state.store = log
    }

    /// Server data changed at `paths`: the listened locations holding them are saved to the cache
    /// soon (changes within half a second are saved together).
    private func markCacheDirty(_ state: inout State, _ paths: [DatabasePath]) {
        guard state.store != nil else { return }
        state.cacheDirty.formUnion(state.tree.completeListenRoots(containing: paths))
        scheduleCacheFlush(&state)
    }

    /// The window of the filtered query with `tag` changed: it is saved to the cache soon.
    private func markWindowDirty(_ state: inout State, tag: Int) {
        guard state.store != nil, let spec = state.tree.spec(forTag: tag) else { return }
        state.windowsDirty.insert(spec)
        scheduleCacheFlush(&state)
    }

    private func scheduleCacheFlush(_ state: inout State) {
        guard state.store != nil, !state.cacheDirty.isEmpty || !state.windowsDirty.isEmpty, !state.cacheFlushScheduled else { return }
        state.cacheFlushScheduled = true
        Task { [self] in
            try? await clock.sleep(milliseconds: 500)
            flushCache()
        }
    }

    /// Saves the changed listened locations to the persisted cache now.
    func flushCache() {
        typealias Work = (PersistentStore, [(path: DatabasePath, node: Node)], [(spec: QuerySpec, node: Node)], Set<DatabasePath>, Int)
        let work = state.withLock { state -> Work? in
            state.cacheFlushScheduled = false
            guard let store = state.store, !state.cacheDirty.isEmpty || !state.windowsDirty.isEmpty else { return nil }
            let roots = state.cacheDirty.filter { state.tree.isComplete($0) }
            state.cacheDirty = []
            let locations = roots.map { (path: $0, node: state.tree.serverValue(at: $0)) }
            let windows = state.windowsDirty.compactMap { spec in state.tree.completeWindow(of: spec).map { (spec: spec, node: $0) } }
            state.windowsDirty = []
            let active = state.tree.listenedPaths.union(state.tree.activeListens.map(\.path))
            return (store, locations, windows, active, state.cacheSizeBytes)
        }
        guard let (store, locations, windows, active, limit) = work else { return }
        store.saveCache(locations, windows: windows, savedAt: Int(clock.milliseconds()), limit: limit, active: active)
    }

    // MARK: onDisconnect

    func onDisconnect(action: String, path: DatabasePath, data: JSONValue?, completion: WriteCompletion?) {
        start()
        state.withLock { state in
            var body: [(key: String, value: JSONValue)] = [("p", ClientWire.path(path))]
            if let data { body.append(("d", data)) }
            switch action {
            case "oc":
                state.onDisconnect.removeAll { path.contains($0.path) }
            case "om":
                if case .object(let members)? = data {
                    for (key, value) in members {
                        if let relative = try? DatabasePath(key) { state.onDisconnect.append((path.appending(relative), value)) }
                    }
                }
            default:
                state.onDisconnect.removeAll { path.contains($0.path) }
                state.onDisconnect.append((path, data ?? .null))
            }
            let token = state.machine.makeToken()
            state.operations[token] = .onDisconnect(completion: completion)
            send(&state, state.machine.enqueue(token: token, action: action, body: .object(body)))
        }
    }

    /// The connection dropped: the server is running this client's onDisconnect writes, so show them.
    private func applyOnDisconnectLocally(_ state: inout State) -> [RaisedEvent] {
        var events: [RaisedEvent] = []
        let now = serverNow(state)
        for operation in state.onDisconnect {
            let context = ServerValueContext(now: now, existing: state.tree.serverValue(at: operation.path))
            guard let node = try? Node(json: operation.json, depth: operation.path.count, context: context) else { continue }
            events += state.tree.applyServerOverwrite(path: operation.path, node: node, tag: nil)
        }
        state.onDisconnect = []
        return events
    }

    // MARK: Reads

    func getValue(spec: QuerySpec, completion: @escaping @Sendable (Result<Node, DatabaseError>) -> Void) {
        start()
        state.withLock { state in
            if Repo.isInfo(spec.path) {
                let node = state.infoTree.localValue(at: DatabasePath(keys: Array(spec.path.keys.dropFirst())))
                deliver(&state, events: [], after: [{ completion(.success(node)) }])
                return
            }
            if spec.loadsAllData, let node = state.tree.completeValue(at: spec.path) {
                deliver(&state, events: [], after: [{ completion(.success(node)) }])
                return
            }
            if let node = state.tree.completeWindowShown(for: spec) {
                deliver(&state, events: [], after: [{ completion(.success(node)) }])
                return
            }
            var body: [(key: String, value: JSONValue)] = [("p", ClientWire.path(spec.path))]
            if !spec.loadsAllData, let object = ClientWire.queryObject(spec.query) { body.append(("q", object)) }
            let token = state.machine.makeToken()
            state.operations[token] = .get(path: spec.path, query: spec.query, completion: completion)
            send(&state, state.machine.enqueue(token: token, action: "g", body: .object(body)))
            if state.machine.phase != .connected { failGetIfStillOffline(token: token) }
        }
    }

    /// How long a read made while offline waits for a connection before failing (as iOS: 3 s).
    static let getConnectTimeout: Double = 3_000

    private func failGetIfStillOffline(token: Int) {
        Task { [self] in
            try? await clock.sleep(milliseconds: Repo.getConnectTimeout)
            state.withLock { state in
                guard state.machine.phase != .connected || state.socket == nil,
                      case .get(_, _, let completion)? = state.operations[token] else { return }
                state.operations[token] = nil
                state.machine.cancel(token: token)
                let error = DatabaseError(.disconnected, "The client is offline and has no complete cached data for this location")
                deliver(&state, events: [], after: [{ completion(.failure(error)) }])
            }
        }
    }

    // MARK: Transactions

    func startTransaction(
        path: DatabasePath,
        update: @escaping @Sendable (MutableData) -> TransactionResult,
        completion: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?,
        applyLocally: Bool
    ) {
        // A hidden value listener keeps the client's copy of the location fresh while it runs.
        let observer = addObserver(spec: QuerySpec(path: path), type: .value, callback: { _, _ in }, cancel: nil)
        let id = state.withLock { state in
            state.observers[observer]?.isInternal = true
            let id = state.nextTransactionID
            state.nextTransactionID += 1
            state.transactions[id] = Transaction(path: path, update: update, completion: completion, applyLocally: applyLocally, observer: observer)
            return id
        }
        runTransaction(id: id)
    }

    private func runTransaction(id: Int) {
        transactionQueue.async { [self] in
            guard let (transaction, input) = state.withLock({ state -> (Transaction, Node)? in
                guard let transaction = state.transactions[id] else { return nil }
                // One transaction per location at a time, as Firebase's clients run them: a second one
                // sent on top of the first's unconfirmed output fails with it whenever another client
                // wins, and both rerun, so that under contention they ran out of retries.
                let blocked = state.transactions.contains { other in
                    other.key < id && (other.value.path.contains(transaction.path) || transaction.path.contains(other.value.path))
                }
                if blocked {
                    state.transactions[id]!.isWaiting = true
                    return nil
                }
                return (transaction, state.tree.localValue(at: transaction.path))
            }) else { return }
            // The hash of exactly what the block saw (other pending writes included), as Firebase's
            // clients send: the server applies the output only if its value is that input, so an
            // output computed on top of a write that has not landed is refused (datastale) and rerun.
            let serverHash = input.hash
            let data = MutableData(node: input, key: transaction.path.last?.string, now: { [clock] in clock.milliseconds() })
            let result = transaction.update(data)
            state.withLock { state in
                guard state.transactions[id] != nil else { return }
                guard result.committed else {
                    state.transactions[id] = nil
                    resumeWaitingTransactions(&state)
                    removeInternalObserver(&state, transaction.observer)
                    let snapshot = DataSnapshot(reference: DatabaseReference(database: database, path: transaction.path), node: input, index: .key)
                    let completion = transaction.completion
                    deliver(&state, events: [], after: completion.map { c in [{ c(nil, false, snapshot) }] } ?? [])
                    return
                }
                let output = result.node ?? data.node
                let writeID = state.nextWriteID
                state.nextWriteID += 1
                state.transactions[id]!.writeID = writeID
                state.transactions[id]!.output = output
                let events = state.tree.applyUserOverwrite(writeID: writeID, path: transaction.path, node: output, visible: transaction.applyLocally)
                let token = state.machine.makeToken()
                state.operations[token] = .transaction(id: id)
                let body = JSONValue.object([
                    ("p", ClientWire.path(transaction.path)), ("d", output.exportJSON), ("h", .string(serverHash)),
                ])
                send(&state, state.machine.enqueue(token: token, action: "p", body: body, isTransaction: true))
                deliver(&state, events: events)
            }
        }
    }

    private func transactionCommitted(_ state: inout State, id: Int, events: inout [RaisedEvent]) -> [@Sendable () -> Void] {
        guard let transaction = state.transactions.removeValue(forKey: id) else { return [] }
        resumeWaitingTransactions(&state)
        if let writeID = transaction.writeID { events += state.tree.ackWrite(writeID: writeID, revert: false) }
        removeInternalObserver(&state, transaction.observer)
        let snapshot = DataSnapshot(reference: DatabaseReference(database: database, path: transaction.path), node: transaction.output, index: .key)
        guard let completion = transaction.completion else { return [] }
        return [{ completion(nil, true, snapshot) }]
    }

    static let maximumTransactionRetries = 25

    private func transactionFailed(
        _ state: inout State, id: Int, status: String, reason: String, rerun: Bool, events: inout [RaisedEvent]
    ) -> [@Sendable () -> Void] {
        guard var transaction = state.transactions[id] else { return [] }
        if let writeID = transaction.writeID { events += state.tree.ackWrite(writeID: writeID, revert: true) }
        transaction.writeID = nil
        if rerun {
            if status == "datastale" { transaction.retries += 1 }
            // The first run plus at most 25 retries, as the official SDKs allow.
            if transaction.retries <= Repo.maximumTransactionRetries {
                state.transactions[id] = transaction
                runTransaction(id: id)
                return []
            }
        }
        state.transactions[id] = nil
        resumeWaitingTransactions(&state)
        removeInternalObserver(&state, transaction.observer)
        let error = rerun ? DatabaseError(.maxRetries, "The transaction had too many retries") : DatabaseError(status: status, reason: reason)
        guard let completion = transaction.completion else { return [] }
        let snapshot = DataSnapshot(reference: DatabaseReference(database: database, path: transaction.path), node: state.tree.localValue(at: transaction.path), index: .key)
        return [{ completion(error, false, snapshot) }]
    }

    /// Runs again every waiting transaction: each one still behind an earlier one waits on.
    private func resumeWaitingTransactions(_ state: inout State) {
        for (id, transaction) in state.transactions.sorted(by: { $0.key < $1.key }) where transaction.isWaiting {
            state.transactions[id]!.isWaiting = false
            runTransaction(id: id)
        }
    }

    /// A `set` at or above a running transaction aborts it (Firebase's `set` reason).
    private func abortTransactions(_ state: inout State, at path: DatabasePath, events: inout [RaisedEvent]) -> [@Sendable () -> Void] {
        var after: [@Sendable () -> Void] = []
        for (id, transaction) in state.transactions where path.contains(transaction.path) {
            after += transactionFailed(&state, id: id, status: "set", reason: "overridden by a set", rerun: false, events: &events)
        }
        return after
    }

    private func removeInternalObserver(_ state: inout State, _ handle: UInt) {
        guard state.observers.removeValue(forKey: handle) != nil else { return }
        state.tree.removeRegistration(id: handle)
        syncListens(&state)
    }

    /// Drops every write the server has not confirmed: their local effects roll back (with events) and
    /// their completions fail with `write_canceled`. Writes already on the wire may still be applied.
    func purgeOutstandingWrites() {
        state.withLock { state in
            var events: [RaisedEvent] = []
            var after: [@Sendable () -> Void] = []
            let error = DatabaseError(.writeCanceled, "Write canceled by purgeOutstandingWrites")
            for (token, operation) in state.operations.sorted(by: { $0.key < $1.key }) {
                switch operation {
                case .write(let writeID, let completion):
                    state.store?.confirm(id: writeID)
                    state.operations[token] = nil
                    state.machine.cancel(token: token)
                    events += state.tree.ackWrite(writeID: writeID, revert: true)
                    if let completion { after.append { completion(error) } }
                case .transaction(let id):
                    state.operations[token] = nil
                    state.machine.cancel(token: token)
                    after += transactionFailed(&state, id: id, status: "write_canceled", reason: error.message, rerun: false, events: &events)
                case .onDisconnect, .get:
                    break
                }
            }
            deliver(&state, events: events, after: after)
        }
    }

    /// Reports a write that could not start (invalid data) on the callback queue.
    func fail(_ completion: WriteCompletion?, _ error: any Error) {
        guard let completion else { return }
        state.withLock { state in deliver(&state, events: [], after: [{ completion(error) }]) }
    }

    /// `keepSynced(true)` holds a hidden observer on the query; `false` releases it.
    func keepSynced(spec: QuerySpec, _ keep: Bool) {
        if keep {
            let handle = addObserver(spec: spec, type: .value, callback: { _, _ in }, cancel: nil)
            state.withLock { state in
                state.observers[handle]?.isInternal = true
                state.keptSynced[spec, default: []].append(handle)
            }
        } else {
            state.withLock { state in
                for handle in state.keptSynced.removeValue(forKey: spec) ?? [] { removeInternalObserver(&state, handle) }
            }
        }
    }

    // MARK: Settings

    func updateAuthToken(_ token: String?) {
        state.withLock { state in send(&state, state.machine.updateAuthToken(token)) }
    }
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
