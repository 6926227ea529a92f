import DequeModule
import Foundation
import HearthAccess
import HearthCluster
import HearthCore
import HearthEngine
import HearthProtocol
import HearthRules
import HearthStorage
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// One client connection speaking the Realtime Database protocol (v5), over a WebSocket or long polling
/// (its ``RealtimeTransport``).
///
/// Requests are processed strictly in arrival order by a task that exists only while there is work: an
/// idle connection holds no task. Consecutive writes are pipelined: each is queued to the database as
/// soon as it arrives (the database applies them in that order) and their replies go out in order as
/// they become durable, so one connection's writes share group commits. Any other request first waits
/// for the writes before it, so it sees them. Everything sent goes through one bounded outbound
/// queue, drained on the channel's event loop; messages queued together leave in one write. A client
/// whose queue passes ``ServerConfiguration/realtimeOutboundLimit`` bytes (it does not read fast enough)
/// is disconnected; its SDK reconnects and resynchronises.
final class RealtimeSession: RealtimeListener {
    /// A listen as the connection knows it: by path and tag (default listens have none).
    struct ListenID: Hashable {
        var path: DatabasePath
        var tag: Int?
    }

    struct Listen {
        var key: ListenKey
        /// The query object as the client sent it, echoed when the listen is revoked.
        var query: JSONValue?
    }

    enum Job {
        /// A request, and the size of its message (what holding it costs, for ``inboundByteLimit``).
        case request(WireRequest, bytes: Int)
        case authExpired(generation: Int)
    }

    /// Inbound backpressure: a WebSocket is not read while this many of its requests are queued or in
    /// flight (a client may pipeline faster than its database answers, or while it loads), and is read
    /// again once at most a quarter are. The writer's group commits need far fewer at once.
    static let inboundRequestLimit = 4096
    /// The same for the bytes of their messages.
    static let inboundByteLimit = 16 << 20

    /// A write queued for when the connection ends. The keys of one `om` share a group and are applied
    /// together, as one update.
    struct OnDisconnectWrite {
        var path: DatabasePath
        var operation: WriteRequest.Operation
        var group: Int?
    }

    struct State {
        /// The identity the connection's onDisconnect writes run as when it closes: its identity, unless
        /// a change of it is still queued (`auth`, `unauth`, an expiry: they take effect in order, after
        /// the requests before them) or its credential has expired or been revoked by `now` (wall
        /// seconds); then unauthenticated, never more than the connection may do.
        func identityAtClose(now: Double, isRevoked: (JSONValue?) -> Bool) -> Identity {
            let changePending = jobs.contains { job in
                switch job {
                case .authExpired(let generation): return generation == authGeneration
                case .request(let request, _):
                    if case .auth = request.action { return true }
                    if case .unauth = request.action { return true }
                    return false
                }
            }
            if changePending { return .anonymous }
            if let identityExpires, identityExpires <= now { return .anonymous }
            if case .user(let auth) = identity, isRevoked(auth["token"]) { return .anonymous }
            return identity
        }

        var identity: Identity = .anonymous
        /// When the identity's credential expires (wall seconds); nil for none.
        var identityExpires: Double?
        /// The console session the identity comes from, if any (it ends at sign-out).
        var consoleSession: Data?
        var authGeneration = 0
        var listens: [ListenID: Listen] = [:]
        var onDisconnect: [OnDisconnectWrite] = []
        var onDisconnectGroups = 0
        var jobs: Deque<Job> = []
        var processing = false
        var outbox: [ByteBuffer] = []
        var outboxBytes = 0
        /// The largest message in `outbox`: the slow-consumer limit is on what waits beyond it.
        var outboxLargest = 0
        var flushScheduled = false
        var closed = false
        /// Requests queued or in flight (see ``inboundRequestLimit``), their messages' bytes, and whether
        /// the transport was told to stop reading.
        var inboundRequests = 0
        var inboundBytes = 0
        var readingPaused = false
        /// Long polls holding their messages back until reading resumes (``whileReadingPaused()``).
        var readingWaiters: [CheckedContinuation<Void, Never>] = []
        var database: DatabaseInstance?
        /// Replies of writes in flight, in request order; each is sent once it and all before it are known.
        var writeReplies: Deque<(number: Int, message: [UInt8]?)> = []
        /// The request processor waiting for the writes in flight to finish.
        var settledWaiter: CheckedContinuation<Void, Never>?
        /// Sleeps until the current credential expires, then queues ``Job/authExpired(generation:)``.
        var expiryTimer: Task<Void, Never>?
    }

    let id: String
    let transport: any RealtimeTransport
    let namespace: String
    let host: String
    let services: RealtimeServices
    private let state = Mutex(State())
    /// When the client last sent a frame (``ServerClock/elapsed``, in nanoseconds): the idle reaper
    /// closes connections silent for longer than the idle timeout.
    private let lastActivity: Atomic<Int64>
    /// Set once the idle reaper has closed this connection, so later sweeps leave it alone.
    private let closedForIdleness = Atomic<Bool>(false)

    /// The client's address (for the admin-secret guard), as its connection or first poll gave it.
    let clientAddress: String?
    /// With `--access-log`, a WebSocket connection's line, logged when it closes with the bytes sent.
    let accessLogEntry: AccessLogEntry?
    private let sentBytes = Atomic<Int>(0)

    init(
        transport: any RealtimeTransport, id: String = RealtimeSession.makeID(), namespace: String, host: String, clientAddress: String? = nil,
        accessLogEntry: AccessLogEntry? = nil, services: RealtimeServices
    ) {
        self.id = id
        self.accessLogEntry = accessLogEntry
        self.clientAddress = clientAddress
        self.transport = transport
        self.namespace = namespace
        self.host = host
        self.services = services
        self.lastActivity = Atomic(services.configuration.clock.elapsedNanoseconds)
    }

    /// When the client last sent a frame, in elapsed nanoseconds of the server's clock.
    var lastActivityNanoseconds: Int64 { lastActivity.load(ordering: .relaxed) }

    /// Records that the client sent something (any frame: keep-alives, and pongs to ``pingIfQuiet(since:)``).
    func touch() {
        lastActivity.store(services.configuration.clock.elapsedNanoseconds, ordering: .relaxed)
    }

    /// Asks the client for a sign of life (a WebSocket ping) if it has sent nothing since `cutoff`. The
    /// SDKs send their keep-alive `0` only after 45 s without a frame either way, so a client that keeps
    /// receiving never sends one; its WebSocket answers the ping with a pong, which counts, and a dead
    /// one does not.
    func pingIfQuiet(since cutoff: Int64) {
        guard lastActivity.load(ordering: .relaxed) <= cutoff, !state.withLock({ $0.closed || $0.readingPaused }) else { return }
        transport.ping()
    }

    /// Closes the connection if the client has sent nothing since `cutoff` (elapsed nanoseconds).
    /// A connection that is not being read (backpressure) is not silent: its keep-alives wait unread.
    func closeIfSilent(since cutoff: Int64) {
        guard lastActivity.load(ordering: .relaxed) <= cutoff, !state.withLock({ $0.readingPaused }) else { return }
        guard !closedForIdleness.exchange(true, ordering: .relaxed) else { return }
        services.logger.debug("Closing a silent WebSocket", metadata: ["hearth.session": "\(id)"])
        close(code: .goingAway)
    }

    /// 32 random alphanumerics, like Firebase's session ids.
    static func makeID() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<32).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] }, as: UTF8.self)
    }

    var identity: Identity { state.withLock { $0.identity } }

    /// Sends the handshake: the first message on every connection.
    func start() {
        send(ByteBuffer(bytes: ServerMessage.handshake(timestamp: Int64(services.configuration.clock.wallMilliseconds), host: host, session: id)))
    }

    // MARK: Inbound

    func enqueue(_ job: Job) {
        enqueue([job])
    }

    /// Queues requests that arrived together: one lock, and at most one task started to drain them.
    func enqueue(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        let (start, pause) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (false, false) }
            state.jobs.append(contentsOf: jobs)
            for case .request(_, let bytes) in jobs {
                state.inboundRequests += 1
                state.inboundBytes += bytes
            }
            var pause = false
            if !state.readingPaused,
                state.inboundRequests >= RealtimeSession.inboundRequestLimit || state.inboundBytes >= RealtimeSession.inboundByteLimit
            {
                state.readingPaused = true
                pause = true
            }
            if state.processing { return (false, pause) }
            state.processing = true
            return (true, pause)
        }
        if pause { refreshReading() }
        if start { Task { await self.drain() } }
    }

    /// A request is answered: once few enough are left, the transport reads again.
    private func released(bytes: Int) {
        let (resume, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            state.inboundRequests -= 1
            state.inboundBytes -= bytes
            guard state.readingPaused, state.inboundRequests <= RealtimeSession.inboundRequestLimit / 4,
                state.inboundBytes <= RealtimeSession.inboundByteLimit / 4
            else { return (false, []) }
            state.readingPaused = false
            defer { state.readingWaiters = [] }
            return (true, state.readingWaiters)
        }
        for waiter in waiters { waiter.resume() }
        if resume {
            // The keep-alives that waited unread count from now.
            touch()
            refreshReading()
        }
    }

    /// Tells the transport to read or not, as the state is when it gets to it (pauses and resumes
    /// decided on different threads may reach it out of order).
    private func refreshReading() {
        transport.refreshReading { [weak self] in self?.state.withLock { $0.readingPaused } ?? false }
    }

    /// Returns once the connection is read again (at once unless paused, or once it closed): for a
    /// transport that cannot stop reading, so a long poll holds its messages (and the client's request)
    /// back instead.
    func whileReadingPaused() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state -> Bool in
                guard state.readingPaused, !state.closed else { return false }
                state.readingWaiters.append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
    }

    /// Requests queued or in flight, and whether the transport is paused (for tests).
    var inboundLoad: (requests: Int, paused: Bool) { state.withLock { ($0.inboundRequests, $0.readingPaused) } }

    private func drain() async {
        while let job = state.withLock({ state -> Job? in
            if state.closed || state.jobs.isEmpty {
                state.processing = false
                return nil
            }
            return state.jobs.removeFirst()
        }) {
            switch job {
            case .request(let request, let bytes):
                if case .put = request.action, await submitWrite(request, bytes: bytes) { continue }
                if case .merge = request.action, await submitWrite(request, bytes: bytes) { continue }
                await writesSettled()
                await handle(request)
                released(bytes: bytes)
            case .authExpired(let generation):
                await writesSettled()
                await authExpired(generation)
            }
        }
    }

    /// Queues a put or merge to the database without waiting for it; false if it must be handled the
    /// ordinary way (the database cannot be opened).
    private func submitWrite(_ request: WireRequest, bytes: Int) async -> Bool {
        guard let database = try? await database() else { return false }
        let write: WriteRequest
        let path: DatabasePath
        switch request.action {
        case .put(let target, let priority, let data, let hash):
            write = WriteRequest(priority ? .setPriority(target, data) : .set(target, data), expectedHash: hash, identity: identity)
            path = target
        case .merge(let target, let items):
            write = WriteRequest(.update(target, items), identity: identity)
            path = target
        default:
            return false
        }
        let number = request.number
        state.withLock { $0.writeReplies.append((number, nil)) }
        let started = ContinuousClock.now
        database.submit(write) { result in
            let reply: [UInt8]
            let status: String
            switch result {
            case .success(.written):
                reply = ServerMessage.response(number)
                status = "ok"
            case .success(.preconditionFailed):
                // Make sure the client retries from the current value: resend it to a listen that covers it.
                // Only an unfiltered listen (a query's rules may allow its window alone, and an untagged
                // `q` may carry a filter), and only while the writer may still read the location. The value
                // as the batch left it, not as the check saw it: a later write of the same batch has been
                // pushed already, and the resend must not take the client back to before it.
                let covered = self.state.withLock {
                    $0.listens.values.contains { $0.key.query.isDefault && $0.key.path.contains(path) }
                }
                let root = database.snapshot()
                if covered, database.canRead(path, write.identity, query: nil, root: root) {
                    self.send(ServerMessage.Push.overwrite(path: path, data: root.child(at: path)).encoded(tag: nil))
                }
                reply = ServerMessage.response(number, status: "datastale", .text("Transaction hash does not match"))
                status = "datastale"
            case .failure(let error):
                let failure = (error as? WriteError).map(Failure.init) ?? Failure(status: "failure", message: "Internal error")
                reply = ServerMessage.response(number, status: failure.status, .text(failure.message))
                status = failure.status
            }
            self.recordActivity(request.action, status: status, started: started)
            self.completeWrite(number, reply)
            self.released(bytes: bytes)
        }
        return true
    }

    /// Records a write's reply and sends every reply that is now next in order.
    private func completeWrite(_ number: Int, _ reply: [UInt8]) {
        let (ready, waiter) = state.withLock { state -> ([[UInt8]], CheckedContinuation<Void, Never>?) in
            if let index = state.writeReplies.firstIndex(where: { $0.number == number && $0.message == nil }) {
                state.writeReplies[index].message = reply
            }
            var ready: [[UInt8]] = []
            while let first = state.writeReplies.first, let message = first.message {
                ready.append(message)
                state.writeReplies.removeFirst()
            }
            var waiter: CheckedContinuation<Void, Never>?
            if state.writeReplies.isEmpty {
                waiter = state.settledWaiter
                state.settledWaiter = nil
            }
            return (ready, waiter)
        }
        for message in ready { send(message) }
        waiter?.resume()
    }

    /// Waits until every write submitted so far has its reply sent.
    private func writesSettled() async {
        await withCheckedContinuation { continuation in
            let settled = state.withLock { state -> Bool in
                if state.writeReplies.isEmpty { return true }
                state.settledWaiter = continuation
                return false
            }
            if settled { continuation.resume() }
        }
    }

    private func handle(_ request: WireRequest) async {
        let number = request.number
        let started = ContinuousClock.now
        let reply: [UInt8]
        let status: String
        do {
            reply = ServerMessage.response(number, try await perform(request.action))
            status = "ok"
        } catch let failure as Failure {
            (reply, status) = (ServerMessage.response(number, status: failure.status, .text(failure.message)), failure.status)
        } catch let error as WriteError {
            let failure = Failure(error)
            (reply, status) = (ServerMessage.response(number, status: failure.status, .text(failure.message)), failure.status)
        } catch {
            services.logger.error("Realtime request failed", metadata: ["hearth.error": "\(error)"])
            (reply, status) = (ServerMessage.response(number, status: "failure", .text("Internal error")), "failure")
        }
        // Recorded before the reply goes out, so a client that saw the reply sees it in the activity.
        recordActivity(request.action, status: status, started: started)
        send(reply)
    }

    /// Adds a data request (listen, get, write, onDisconnect) to the server's activity; connection
    /// housekeeping (auth, stats, unlisten) is not logged.
    private func recordActivity(_ action: WireAction, status: String, started: ContinuousClock.Instant) {
        let method: String
        let path: DatabasePath
        var kind: RequestRecord.Kind
        switch action {
        case .listen(let target, _, _, _): (method, path, kind) = ("listen", target, .read)
        case .get(let target, _): (method, path, kind) = ("get", target, .read)
        case .put(let target, _, _, _): (method, path, kind) = ("put", target, .write)
        case .merge(let target, _): (method, path, kind) = ("merge", target, .write)
        case .onDisconnectPut(let target, _, _): (method, path, kind) = ("onDisconnect put", target, .other)
        case .onDisconnectMerge(let target, _): (method, path, kind) = ("onDisconnect merge", target, .other)
        case .onDisconnectCancel(let target): (method, path, kind) = ("onDisconnect cancel", target, .other)
        case .stats, .auth, .unauth, .appCheck, .unlisten, .invalid: return
        }
        if status == "permission_denied" {
            kind = .denied
        } else if status != "ok" {
            kind = .other
        }
        // Only a database that opened gets counters: a made-up `ns=` must not add metrics series.
        let opened = state.withLock { $0.database } != nil
        services.activity.record(RequestRecord(
            transport: .websocket, method: method, location: .database(path), namespace: opened ? namespace : nil, status: status,
            duration: ContinuousClock.now - started, kind: kind
        ))
    }

    /// A request's failure status and text, as the SDKs expect them.
    struct Failure: Error {
        var status: String
        var message: String

        static let permissionDenied = Failure(status: "permission_denied", message: "Permission denied")
        /// The connection closed while the request waited (no client reads the answer).
        static let closed = Failure(status: "unavailable", message: "The connection closed")

        init(status: String, message: String) {
            self.status = status
            self.message = message
        }

        init(_ error: WriteError) {
            switch error.code {
            case .permissionDenied: self = .permissionDenied
            case .invalidData: self.init(status: "invalid_data", message: error.message)
            case .tooLarge: self.init(status: "too_big", message: error.message)
            case .unavailable: self.init(status: "unavailable", message: error.message)
            }
        }
    }

    private func database() async throws -> DatabaseInstance {
        if let database = state.withLock({ $0.database }) { return database }
        do {
            // As over REST: only the admin (or anyone, in emulator mode) creates a database by using it;
            // anyone else meets a new database's locked rules.
            let database: DatabaseInstance
            if identity.isAdmin || services.configuration.emulatorMode {
                database = try await services.registry.database(namespace)
            } else {
                guard let existing = try await services.registry.existingDatabase(namespace) else { throw Failure.permissionDenied }
                database = existing
            }
            state.withLock { $0.database = database }
            return database
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(status: "unavailable", message: "The database \(namespace) could not be opened")
        }
    }

    private func perform(_ action: WireAction) async throws -> ServerMessage.Payload {
        switch action {
        case .stats, .appCheck:
            return .empty
        case .invalid(let status, let message):
            throw Failure(status: status, message: message)
        case .auth(let credential, let override):
            let answer = try authenticate(credential, override: override)
            await storeOnDisconnectAgain()
            return answer
        case .unauth:
            state.withLock { state in
                state.identity = .anonymous
                state.identityExpires = nil
                state.consoleSession = nil
                state.authGeneration += 1
                state.expiryTimer?.cancel()
                state.expiryTimer = nil
            }
            if let database = state.withLock({ $0.database }) { recheckListens(database) }
            await storeOnDisconnectAgain()
            return .text("unauthenticated")
        case .listen(let path, let query, let tag, let hash):
            return try await listen(path, query, tag: tag, hash: hash)
        case .unlisten(let path, let tag):
            let removed = state.withLock { $0.listens.removeValue(forKey: ListenID(path: path, tag: tag)) }
            if let removed, let database = state.withLock({ $0.database }) {
                database.realtime.unlisten(removed.key, session: self, tag: tag)
            }
            return .empty
        case .get(let path, let query):
            let database = try await database()
            // In a cluster: every write committed before this read is in this node's tree first.
            do {
                try await database.readBarrier()
            } catch {
                throw Failure(status: "unavailable", message: "The database is unavailable; try again")
            }
            // One tree for the rules and the answer.
            let root = database.snapshot()
            try authorizeRead(path, query?.query, database, in: root)
            // A read that filters or limits by a child or by value needs its `.indexOn`, as over REST and as
            // Firebase answers the SDKs' `get()` (a listen of it is only warned, `no_index`); ordering alone
            // reads the whole location and needs none.
            if services.configuration.enforceIndexes, let query = query?.query, !query.isDefault,
                let missing = RESTController.missingIndex(query, at: path, database)
            {
                throw Failure(status: "failure", message: missing)
            }
            let node = root.child(at: path)
            return .data(query.map { $0.query.evaluate(on: node).withPriority(nil) } ?? node)
        case .put, .merge:
            // Only reached when the database could not be opened: the write fails with that error, even
            // if a second try would open it (it was not submitted, and an `ok` would say it was).
            _ = try await database()
            throw Failure(status: "unavailable", message: "The database is unavailable; try again")
        case .onDisconnectPut(let path, let priority, let data):
            let database = try await database()
            let operation: WriteRequest.Operation = priority ? .setPriority(path, data) : .set(path, data)
            await database.waitUntilWarm()
            try database.check(WriteRequest(operation, identity: identity))
            let writes = state.withLock { state -> [OnDisconnectWrite]? in
                // Closed while this waited: nothing would run or remove the write.
                guard !state.closed else { return nil }
                state.onDisconnect.removeAll { path.contains($0.path) }
                state.onDisconnect.append(OnDisconnectWrite(path: path, operation: operation, group: nil))
                return state.onDisconnect
            }
            guard let writes else { throw Failure.closed }
            try await persistOnDisconnect(writes, database)
            return .empty
        case .onDisconnectMerge(let path, let items):
            let database = try await database()
            await database.waitUntilWarm()
            try database.check(WriteRequest(.update(path, items), identity: identity))
            let writes = state.withLock { state -> [OnDisconnectWrite]? in
                guard !state.closed else { return nil }
                state.onDisconnectGroups += 1
                for item in items {
                    let target = path.appending(item.path)
                    state.onDisconnect.removeAll { target.contains($0.path) }
                    state.onDisconnect.append(
                        OnDisconnectWrite(path: target, operation: .set(target, item.value), group: state.onDisconnectGroups)
                    )
                }
                return state.onDisconnect
            }
            guard let writes else { throw Failure.closed }
            try await persistOnDisconnect(writes, database)
            return .empty
        case .onDisconnectCancel(let path):
            let (writes, database) = state.withLock { state in
                state.onDisconnect.removeAll { path.contains($0.path) }
                return (state.onDisconnect, state.database)
            }
            if let database { try await persistOnDisconnect(writes, database) }
            return .empty
        }
    }

    // MARK: Auth

    private func authenticate(_ credential: String, override: WireAction.AuthOverride) throws -> ServerMessage.Payload {
        let overrideValue: JSONValue? = switch override {
        case .none: nil
        case .unauthenticated: .null
        case .auth(let auth): auth
        }
        let authentication: Authentication
        // A wrong admin secret counts against the client's address here as on HTTP.
        let client = RequestClient(address: clientAddress, adminSecretGuard: services.adminSecretGuard)
        let result = RequestClient.$current.withValue(client) {
            Result { () throws(TokenError) in try services.authenticator.authenticate(credential, override: overrideValue) }
        }
        switch result {
        case .success(let value):
            authentication = value
        case .failure(.expired):
            throw Failure(status: "expired_token", message: "Auth token is expired.")
        case .failure(.tooManyGuesses):
            throw Failure(status: "invalid_token", message: Authenticator.tooManyGuessesMessage)
        case .failure:
            throw Failure(status: "invalid_token", message: "Could not parse auth token.")
        }
        let generation = state.withLock { state in
            state.identity = authentication.identity
            state.identityExpires = authentication.expires
            state.consoleSession = authentication.consoleSession
            state.authGeneration += 1
            return state.authGeneration
        }
        // A revocation that landed between the credential's check and the identity's change found the
        // old identity and told nobody: look again now that the new one is in place.
        if case .user(let auth) = authentication.identity, services.authenticator.tokens?.revocations?.isRevoked(auth["token"]) == true {
            enqueue(.authExpired(generation: generation))
        }
        // The same for a console session signed out in between.
        if let session = authentication.consoleSession, services.authenticator.consoleSessions?.isLive(hash: session) != true {
            enqueue(.authExpired(generation: generation))
        }
        if let database = state.withLock({ $0.database }) { recheckListens(database) }
        // Expiry is timed on the server's clock (tests advance it); a new credential replaces the timer.
        let timer = authentication.expires.map { expires in
            let clock = services.configuration.clock
            let deadline = clock.elapsed + clock.duration(untilWallSeconds: expires)
            return Task { [weak self] in
                do { try await clock.sleep(untilElapsed: deadline) } catch { return }
                self?.enqueue(.authExpired(generation: generation))
            }
        }
        state.withLock { state in
            state.expiryTimer?.cancel()
            state.expiryTimer = state.closed ? nil : timer
            if state.closed { timer?.cancel() }
        }
        var auth: JSONValue = .null
        if case .user(let value) = authentication.identity { auth = value }
        return .json(.object([(key: "auth", value: auth), (key: "expires", value: authentication.expires.map(JSONValue.number) ?? .null)]))
    }

    /// The credential expired: the connection is unauthenticated from now on, and is told so with `ac`.
    private func authExpired(_ generation: Int) async {
        let current = state.withLock { state -> Bool in
            guard state.authGeneration == generation else { return false }
            state.identity = .anonymous
            state.identityExpires = nil
            state.consoleSession = nil
            state.authGeneration += 1
            return true
        }
        guard current else { return }
        send(ServerMessage.authRevoked(status: "expired_token", reason: "Auth token is expired."))
        if let database = state.withLock({ $0.database }) { recheckListens(database) }
        await storeOnDisconnectAgain()
    }

    // MARK: Listens

    /// Refuses a read the rules do not allow, evaluated on `root` (the current tree when not given).
    private func authorizeRead(_ path: DatabasePath, _ query: Query?, _ database: DatabaseInstance, in root: Node? = nil) throws {
        guard database.canRead(path, identity, query: query, root: root ?? database.snapshot()) else { throw Failure.permissionDenied }
    }

    private func listen(_ path: DatabasePath, _ query: WireQuery?, tag: Int?, hash: String) async throws -> ServerMessage.Payload {
        let database = try await database()
        // A listen holds its data for long: it starts from the loaded tree, not from the file.
        await database.waitUntilWarm()
        try authorizeRead(path, query?.query, database)
        let id = ListenID(path: path, tag: tag)
        let key = ListenKey(path: path, query: query?.query ?? .all, format: .export)
        // Closed while this waited: the close unlistened what it found, and would not find this one.
        guard let previous = state.withLock({ state -> Listen?? in
            guard !state.closed else { return nil }
            defer { state.listens[id] = Listen(key: key, query: query?.json) }
            return .some(state.listens[id])
        }) else { throw Failure.closed }
        if let previous { database.realtime.unlisten(previous.key, session: self, tag: tag) }
        database.realtime.listen(key, session: self, tag: tag, snapshot: database.snapshot) { view in
            // The client's cache already holds exactly this data: only the `ok` is needed.
            if !hash.isEmpty, view.hash == hash { return }
            if hash.isEmpty, view.isEmpty { return }
            send(ByteBuffer(bytes: ServerMessage.Push.overwrite(path: path, data: view).encoded(tag: tag)))
        }
        // Closed between the two: the close found the listen in the session, but before the hub had it.
        if state.withLock({ $0.closed }) { database.realtime.unlisten(key, session: self, tag: tag) }
        let needsIndex = query?.query.index.indexOnName.map { !database.rules.hasIndex($0, at: path) } ?? false
        return .listenAcknowledged(noIndexWarning: needsIndex)
    }

    /// Revokes this connection's listens that its identity may no longer read (after auth changes).
    private func recheckListens(_ database: DatabaseInstance) {
        let (listens, identity) = state.withLock { ($0.listens, $0.identity) }
        let rules = database.rules
        let root = database.snapshot()
        let now = services.configuration.clock.wallMilliseconds
        for (id, listen) in listens
        where !rules.canRead(id.path, identity.ruleSubject, root: root, query: RuleQuery(listen.key.query), now: now) {
            revoke(listen.key, tag: id.tag)
        }
    }

    /// Ends one listen with a `c` push (read permission lost).
    func revoke(_ key: ListenKey, tag: Int?) {
        let id = ListenID(path: key.path, tag: tag)
        // Only the listen that was checked: one that replaced it meanwhile (another query at the same
        // path and tag) stays, and is checked on its own.
        guard let listen = state.withLock({ state -> Listen? in
            guard state.listens[id]?.key == key else { return nil }
            return state.listens.removeValue(forKey: id)
        }) else { return }
        state.withLock { $0.database }?.realtime.unlisten(listen.key, session: self, tag: tag)
        send(ServerMessage.listenRevoked(path: key.path, query: listen.query))
    }

    // MARK: Outbound

    func send(_ bytes: [UInt8]) {
        send(ByteBuffer(bytes: bytes))
    }

    /// Queues a message; the event loop writes everything queued at once.
    func send(_ buffer: ByteBuffer) {
        let schedule = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.outbox.append(buffer)
            state.outboxBytes += buffer.readableBytes
            state.outboxLargest = max(state.outboxLargest, buffer.readableBytes)
            if state.flushScheduled { return false }
            state.flushScheduled = true
            return true
        }
        if schedule { transport.execute { self.flush() } }
    }

    /// Writes the queued messages (on the event loop). While the socket is not writable they stay queued,
    /// up to the limit.
    func flush() {
        let limit = services.configuration.realtimeOutboundLimit
        let (messages, tooSlow) = state.withLock { state -> ([ByteBuffer], Bool) in
            state.flushScheduled = false
            // Too slow: more than the limit waits beyond the largest message (one message, a `g` of a
            // large location, may be larger than the limit on its own).
            if state.outboxBytes - state.outboxLargest > limit { return ([], true) }
            guard transport.isWritable, !state.outbox.isEmpty else { return ([], false) }
            let messages = state.outbox
            state.outbox = []
            state.outboxBytes = 0
            state.outboxLargest = 0
            return (messages, false)
        }
        if tooSlow {
            // Its socket is backed up: a close frame would wait behind the data. Drop the connection.
            services.logger.info("Disconnecting a client that does not keep up", metadata: ["hearth.session": "\(id)"])
            transport.abort()
            return
        }
        guard !messages.isEmpty else { return }
        if accessLogEntry != nil {
            sentBytes.add(messages.reduce(0) { $0 + $1.readableBytes }, ordering: .relaxed)
        }
        transport.write(messages)
    }

    /// Ends the connection the transport's polite way (a WebSocket close frame, within two seconds).
    func close(code: WebSocketErrorCode = .goingAway) {
        transport.close(code: code)
    }

    // MARK: Closing

    /// The client reconnected (`ls=` this session's id): this connection is dead to it. It ends now, and
    /// its onDisconnect writes are queued before anything the new connection asks for (a polite close
    /// would wait for a backed-up socket, and its writes could then undo the new connection's presence).
    func replaced() {
        closed()
        transport.abort()
    }

    /// The connection ended: its listens stop and its onDisconnect writes are applied, in order. Runs
    /// once (``replaced()`` runs it before the transport reports the close).
    func closed() {
        let now = services.configuration.clock.wallMilliseconds / 1000
        let revocations = services.authenticator.tokens?.revocations
        let ending = state.withLock { state -> (listens: [ListenID: Listen], writes: [OnDisconnectWrite], identity: Identity, database: DatabaseInstance?, readingWaiters: [CheckedContinuation<Void, Never>])? in
            guard !state.closed else { return nil }
            let identity = state.identityAtClose(now: now) { revocations?.isRevoked($0) == true }
            let readingWaiters = state.readingWaiters
            state.readingWaiters = []
            state.closed = true
            state.expiryTimer?.cancel()
            state.expiryTimer = nil
            state.jobs.removeAll()
            state.outbox = []
            defer {
                state.listens = [:]
                state.onDisconnect = []
            }
            return (state.listens, state.onDisconnect, identity, state.database, readingWaiters)
        }
        guard let (listens, writes, identity, database, readingWaiters) = ending else { return }
        // Leaves the directory only once its onDisconnect writes are queued: a shutdown waits for the
        // directory to empty before it stops the writers, and a write queued after that is refused.
        defer { services.sessions.remove(self) }
        for waiter in readingWaiters { waiter.resume() }
        accessLogEntry?.log(status: 101, bytes: sentBytes.load(ordering: .relaxed), to: services.accessLogger)
        guard let database else { return }
        for (id, listen) in listens { database.realtime.unlisten(listen.key, session: self, tag: id.tag) }
        guard !writes.isEmpty else { return }
        let requests = RealtimeSession.requests(of: writes, identity: identity)
        // Queued now, in order (not from a task that might start after a shutdown has stopped the writer).
        let logger = services.logger
        let remaining = Mutex(requests.count)
        let connection = id
        for request in requests {
            database.submit(request) { result in
                if case .failure(let error) = result {
                    logger.info("An onDisconnect write failed", metadata: ["hearth.error": "\(error)"])
                }
                // In a cluster, the stored copy goes once they are done (if this node dies first, another
                // node runs them: at least once).
                let done = remaining.withLock { count in
                    count -= 1
                    return count == 0
                }
                if done, let shared = database.replica?.cluster.storage {
                    Task { try? await shared.saveOnDisconnect(namespace: database.namespace, connection: connection, payload: nil) }
                }
            }
        }
    }

    /// In a cluster, the connection's onDisconnect writes are stored with the cluster too, so they run
    /// even if this node dies with the connection. The client's `ok` waits for it.
    private func persistOnDisconnect(_ writes: [OnDisconnectWrite], _ database: DatabaseInstance) async throws {
        guard let shared = database.replica?.cluster.storage else { return }
        let identity = state.withLock { $0.identity }
        let payload = writes.isEmpty ? nil : ForwardedWrites.encode(RealtimeSession.requests(of: writes, identity: identity))
        // The connection closed while this was stored: its close already ran the writes and may have
        // removed the stored copy before this put it back, which would run them again at the next start.
        // Also when the save failed: it may have been stored all the same (a timeout).
        var stored = true
        do {
            try await shared.saveOnDisconnect(namespace: database.namespace, connection: id, payload: payload)
        } catch {
            stored = false
        }
        if state.withLock({ $0.closed }) {
            try? await shared.saveOnDisconnect(namespace: database.namespace, connection: id, payload: nil)
        }
        if !stored { throw Failure(status: "unavailable", message: "The onDisconnect write could not be stored; try again") }
    }

    /// The connection's identity changed: in a cluster, the stored copy of its onDisconnect writes (run
    /// by another node if this one dies) carries the identity they run as, so it is stored again.
    private func storeOnDisconnectAgain() async {
        let (writes, database) = state.withLock { ($0.onDisconnect, $0.database) }
        guard !writes.isEmpty, let database, database.replica != nil else { return }
        do {
            try await persistOnDisconnect(writes, database)
        } catch {
            // The stored copy may still say the earlier identity, which another node would run the writes
            // as: the connection ends instead, so this node runs them now (and removes the copy).
            services.logger.info("The onDisconnect writes could not be stored again; closing the connection", metadata: ["hearth.error": "\(error)"])
            close(code: .goingAway)
        }
    }

    /// The writes to run when the connection ends, as `identity` (the connection's then), with `.sv`
    /// resolved then. They were checked against the rules when they were queued, and the writer checks
    /// them again, as Firebase does ("the server checks security a second time"): a write-once location
    /// written meanwhile, or a write queued before `unauth`, is refused then. The keys of one `om` go
    /// together as one update, refused as a whole.
    static func requests(of writes: [OnDisconnectWrite], identity: Identity) -> [WriteRequest] {
        var requests: [WriteRequest] = []
        var index = 0
        while index < writes.count {
            let write = writes[index]
            guard let group = write.group else {
                requests.append(WriteRequest(write.operation, identity: identity))
                index += 1
                continue
            }
            var items: [(path: DatabasePath, value: JSONValue)] = []
            while index < writes.count, writes[index].group == group, case .set(let target, let value) = writes[index].operation {
                items.append((target, value))
                index += 1
            }
            requests.append(WriteRequest(.update(.root, items), identity: identity))
        }
        return requests
    }
}

extension RealtimeSession {
    /// A console session was signed out: if this connection signed in with its token, it becomes
    /// unauthenticated and is told with `ac`, as when a token expires.
    func consoleSessionClosed(_ hash: Data) {
        let generation = state.withLock { $0.consoleSession == hash ? $0.authGeneration : nil }
        if let generation { enqueue(.authExpired(generation: generation)) }
    }

    /// The identity service revoked tokens of `change.uid`: if this session is signed in with one of them,
    /// it becomes unauthenticated and is told with `ac`, as when its token expires.
    func credentialsRevoked(_ change: TokenRevocations.Change, _ revocations: TokenRevocations) {
        let generation = state.withLock { state -> Int? in
            guard case .user(let auth) = state.identity, auth["uid"] == .string(change.uid), revocations.isRevoked(auth["token"]) else {
                return nil
            }
            return state.authGeneration
        }
        guard let generation else { return }
        if change.ended || change.immediately {
            enqueue(.authExpired(generation: generation))
            return
        }
        // A new validSince: the session may sign in again with a newer token first (its generation then
        // moves on, and this expiry is dropped).
        let clock = services.configuration.clock
        let deadline = clock.elapsed + services.configuration.reauthenticationGrace
        Task { [weak self] in
            do { try await clock.sleep(untilElapsed: deadline) } catch { return }
            self?.enqueue(.authExpired(generation: generation))
        }
    }
}
