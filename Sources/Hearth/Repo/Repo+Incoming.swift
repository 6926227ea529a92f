import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// Frames from the server: reassembly, the handshake, responses and pushes, and delivering the events they raise.
extension Repo {
    // MARK: Incoming

    func received(_ text: String, generation: Int) {
        received([text], generation: generation)
    }

    /// Handles frames that arrived together, in order, and then runs their callbacks with one hop to
    /// the callback queue.
    func received(_ texts: [String], generation: Int) {
        if texts.count > 1 { callbacks.withLock { $0.holding = true } }
        let handshake = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            // The handshake can arrive before the connect call has returned the socket: keep it.
            guard state.socket != nil else {
                state.earlyFrames += texts
                return false
            }
            var handshake = false
            for text in texts where state.generation == generation { handshake = process(&state, text) || handshake }
            return handshake
        }
        if texts.count > 1 { releaseCallbacks() }
        if handshake { startKeepAlive(generation: generation) }
    }

    /// Ends ``PendingCallbacks/holding``: queues the run of the callbacks kept meanwhile.
    private func releaseCallbacks() {
        let drain = callbacks.withLock { pending -> (DispatchQueue, generation: Int)? in
            pending.holding = false
            guard !pending.calls.isEmpty, !pending.drainQueued else { return nil }
            pending.drainQueued = true
            return (pending.queue, pending.queueGeneration)
        }
        if let (queue, generation) = drain {
            queue.async { [self] in runPendingCallbacks(generation: generation) }
        }
    }

    /// Reassembles and handles one frame; returns true when it completed the handshake.
    func process(_ state: inout State, _ text: String) -> Bool {
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
    func handle(_ state: inout State, _ frame: ServerFrame) -> Bool {
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

    func handle(_ state: inout State, _ outcome: ConnectionStateMachine.Outcome) {
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

    func deliver(_ state: inout State, events: [RaisedEvent], infoEvents: [RaisedEvent] = [], after: [@Sendable () -> Void] = []) {
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
        let drain = callbacks.withLock { pending -> (DispatchQueue, generation: Int)? in
            // Moved rather than appended when nothing waits: a write of many children makes one call each.
            if pending.calls.isEmpty { pending.calls = calls } else { pending.calls += calls }
            guard !pending.drainQueued, !pending.holding else { return nil }
            pending.drainQueued = true
            return (pending.queue, pending.queueGeneration)
        }
        // Queued outside the lock: waking the queue's thread is a system call.
        if let (queue, generation) = drain {
            queue.async { [self] in runPendingCallbacks(generation: generation) }
        }
    }

    /// On the callback queue: runs every callback made so far, in the order made.
    private func runPendingCallbacks(generation: Int) {
        let batch = callbacks.withLock { pending -> [@Sendable () -> Void] in
            guard pending.queueGeneration == generation else { return [] }
            pending.drainQueued = false
            let batch = pending.calls
            pending.calls = []
            return batch
        }
        for call in batch { call() }
    }

    /// Changes the callback queue: callbacks already made still run on the old one, in order; later
    /// ones on the new one.
    func setCallbackQueue(_ queue: DispatchQueue) {
        callbacks.withLock { pending in
            if pending.drainQueued {
                let batch = pending.calls
                pending.calls = []
                pending.drainQueued = false
                pending.queueGeneration += 1
                pending.queue.async { for call in batch { call() } }
            }
            pending.queue = queue
        }
    }
}
