import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// The connection: the reconnect loop with backoff, the connect timeout, keep-alive, sending frames, and the credential.
extension Repo {
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
                        onFrames: { [self] texts in received(texts, generation: generation) },
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

    func startKeepAlive(generation: Int) {
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

    func send(_ state: inout State, _ frames: [String]) {
        guard let socket = state.socket, !frames.isEmpty else { return }
        state.lastTraffic = clock.milliseconds()
        for frame in frames {
            // Nearly every request fits one frame (UTF-16 length never exceeds UTF-8 length): sent as
            // it is, without the copies that splitting needs.
            if frame.utf8.count <= WireFrameAssembler.maximumFrameLength {
                socket.send(frame)
                continue
            }
            for chunk in WireFrameAssembler.frames(for: Array(frame.utf8)) {
                socket.send(String(decoding: chunk, as: UTF8.self))
            }
        }
    }

    func send(_ state: inout State, _ frame: String?) {
        if let frame { send(&state, [frame]) }
    }


    // MARK: Settings

    func updateAuthToken(_ token: String?) {
        state.withLock { state in send(&state, state.machine.updateAuthToken(token)) }
    }
}
