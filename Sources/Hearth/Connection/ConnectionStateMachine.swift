import DequeModule
import HearthCore

/// The protocol logic of one persistent connection, without any I/O: request numbers, the listens and
/// writes to restore after a reconnect, authentication, and what each response means.
///
/// The owner feeds it events (the socket opened, a frame arrived, the socket closed) and sends the
/// frames it returns, in order. Operations requested while offline are kept and sent on the next
/// connection, after authentication: listens first, then writes in their original order, then
/// onDisconnect operations, then one-shot reads.
///
/// For example:
/// ```swift
/// var machine = ConnectionStateMachine()
/// machine.connecting()
/// let frames = machine.receivedHandshake(timestamp: 1_000, sessionID: "s1", localTime: 900)
/// #expect(machine.phase == .connected && machine.serverTimeOffset == 100)
/// ```
struct ConnectionStateMachine: Sendable {
    enum Phase: Sendable, Equatable {
        /// No socket; operations queue.
        case disconnected
        /// A socket is opening, or open and waiting for the handshake.
        case connecting
        /// The handshake arrived and `auth` was sent; waiting for its reply.
        case authenticating
        /// Requests flow.
        case connected
    }

    /// An operation that stays wanted until the server answers it (or, for listens, until it is removed).
    struct Operation: Sendable {
        var token: Int
        var action: String
        var body: JSONValue
        /// A `p` with a hash: failed rather than re-sent when the connection drops.
        var isTransaction = false
        var sent = false
    }

    /// What a response, or a lost connection, means to the owner.
    enum Outcome: Sendable, Equatable {
        /// The listen with this token was acknowledged (`ok`) or refused.
        case listen(token: Int, status: String, data: JSONValue)
        /// A write, onDisconnect operation or get (by token) finished with this status.
        case completed(token: Int, status: String, data: JSONValue)
        /// Authentication succeeded; on a new connection these frames restore the session.
        case authenticated(restore: [String])
        /// The credential was refused: close the socket and reconnect later.
        case authenticationFailed(status: String, reason: String)
        /// Nothing for the owner (stats, unlisten replies, replies from an earlier connection).
        case none
    }

    private(set) var phase = Phase.disconnected
    /// Server time minus local time, in milliseconds, from the last handshake.
    private(set) var serverTimeOffset: Double = 0
    /// The session id of the current or last connection, sent as `ls` on the next one.
    private(set) var lastSessionID: String?
    /// The credential sent on connect (`auth` for JWTs, `gauth` for others such as `owner`).
    var authToken: String?

    private var nextRequestNumber = 1
    private var nextToken = 1
    /// Active listens by token, in the order they were added.
    private var listens: [Operation] = []
    /// Writes, onDisconnect operations and gets waiting for an answer, in the order they were made.
    /// In the order made; replies arrive in that order, so the one answered is almost always first.
    private var outstanding: Deque<Operation> = []
    /// What each in-flight request number is for.
    private var inflight: [Int: Kind] = [:]
    private var sentStats = false

    private enum Kind: Sendable {
        case listen(token: Int)
        case operation(token: Int)
        case auth
        case other
    }

    init(authToken: String? = nil) {
        self.authToken = authToken
    }

    /// A fresh token for a listen or an operation.
    mutating func makeToken() -> Int {
        defer { nextToken += 1 }
        return nextToken
    }

    /// The query string of the WebSocket URL.
    func connectionQuery(namespace: String) -> String {
        var query = "v=5&ns=\(namespace)"
        if let lastSessionID { query += "&ls=\(lastSessionID)" }
        return query
    }

    mutating func connecting() {
        phase = .connecting
    }

    /// The handshake arrived: records the clock offset and session, then authenticates or restores.
    mutating func receivedHandshake(timestamp: Double, sessionID: String, localTime: Double) -> [String] {
        serverTimeOffset = timestamp - localTime
        lastSessionID = sessionID
        var frames: [String] = []
        if !sentStats {
            sentStats = true
            frames.append(send("s", .object([("c", .object([("sdk.swift.hearth-0-1", .number(1))]))]), kind: .other))
        }
        if let token = authToken {
            phase = .authenticating
            frames.append(authFrame(token))
        } else {
            phase = .connected
            frames += restore()
        }
        return frames
    }

    /// A new credential (a token refresh, sign-in or sign-out). Returns the frame to send now, if any.
    mutating func updateAuthToken(_ token: String?) -> [String] {
        let changed = token != authToken
        authToken = token
        guard changed, phase == .connected else { return [] }
        if let token { return [authFrame(token)] }
        return [send("unauth", .object([]), kind: .other)]
    }

    private mutating func authFrame(_ token: String) -> String {
        // JWTs (three dot-separated parts) use `auth`; other credentials (`owner`, secrets) use `gauth`.
        let action = token.split(separator: ".", omittingEmptySubsequences: false).count == 3 ? "auth" : "gauth"
        return send(action, .object([("cred", .string(token))]), kind: .auth)
    }

    /// Starts listening. Returns the `q` frame when connected.
    mutating func listen(token: Int, body: JSONValue) -> String? {
        var operation = Operation(token: token, action: "q", body: body)
        defer { listens.append(operation) }
        guard phase == .connected else { return nil }
        operation.sent = true
        return send("q", body, kind: .listen(token: token))
    }

    /// Stops a listen. Returns the `n` frame when connected.
    mutating func unlisten(token: Int, body: JSONValue) -> String? {
        guard let index = listens.firstIndex(where: { $0.token == token }) else { return nil }
        listens.remove(at: index)
        guard phase == .connected else { return nil }
        return send("n", body, kind: .other)
    }

    /// Queues a write (`p`, `m`), onDisconnect operation (`o`, `om`, `oc`) or get (`g`). Returns its
    /// frame when connected.
    mutating func enqueue(token: Int, action: String, body: JSONValue, isTransaction: Bool = false) -> String? {
        var operation = Operation(token: token, action: action, body: body, isTransaction: isTransaction)
        guard phase == .connected else {
            outstanding.append(operation)
            return nil
        }
        operation.sent = true
        outstanding.append(operation)
        return send(action, body, kind: .operation(token: token))
    }

    /// Forgets a queued operation (a purge): it is not sent again, and a reply to it is ignored.
    mutating func cancel(token: Int) {
        if let index = outstanding.firstIndex(where: { $0.token == token }) { outstanding.remove(at: index) }
        for (number, kind) in inflight {
            if case .operation(token) = kind { inflight[number] = .other }
        }
    }

    /// A response arrived.
    mutating func receivedResponse(number: Int, status: String, data: JSONValue) -> Outcome {
        guard let kind = inflight.removeValue(forKey: number) else { return .none }
        switch kind {
        case .listen(let token):
            if status != "ok" { listens.removeAll { $0.token == token } }
            return .listen(token: token, status: status, data: data)
        case .operation(let token):
            if let index = outstanding.firstIndex(where: { $0.token == token }) { outstanding.remove(at: index) }
            return .completed(token: token, status: status, data: data)
        case .auth:
            guard status == "ok" else {
                var reason = ""
                if case .string(let text) = data { reason = text }
                return .authenticationFailed(status: status, reason: reason)
            }
            guard phase == .authenticating else { return .authenticated(restore: []) }
            phase = .connected
            return .authenticated(restore: restore())
        case .other:
            return .none
        }
    }

    /// The socket closed. In-flight replies can no longer arrive; sent transaction writes fail with
    /// `disconnect` (their tokens are returned) so they can rerun; everything else is sent again later.
    mutating func disconnected() -> [Int] {
        phase = .disconnected
        inflight.removeAll()
        var failed: [Int] = []
        outstanding.removeAll { operation in
            if operation.isTransaction && operation.sent {
                failed.append(operation.token)
                return true
            }
            return false
        }
        for index in outstanding.indices { outstanding[index].sent = false }
        for index in listens.indices { listens[index].sent = false }
        return failed
    }

    /// Updates the body of a listen that has not been re-sent yet (fresh hashes before a restore).
    mutating func updateListenBody(token: Int, body: JSONValue) {
        if let index = listens.firstIndex(where: { $0.token == token }) { listens[index].body = body }
    }

    var listenTokens: [Int] { listens.map(\.token) }

    private mutating func restore() -> [String] {
        var frames: [String] = []
        for index in listens.indices {
            listens[index].sent = true
            frames.append(send("q", listens[index].body, kind: .listen(token: listens[index].token)))
        }
        // Writes keep their order; onDisconnect operations and gets follow (JS: listens before puts).
        let order = outstanding.indices.sorted { rank(outstanding[$0].action) < rank(outstanding[$1].action) || (rank(outstanding[$0].action) == rank(outstanding[$1].action) && $0 < $1) }
        for index in order {
            outstanding[index].sent = true
            frames.append(send(outstanding[index].action, outstanding[index].body, kind: .operation(token: outstanding[index].token)))
        }
        return frames
    }

    private func rank(_ action: String) -> Int {
        switch action {
        case "p", "m": 0
        case "o", "om", "oc": 1
        default: 2
        }
    }

    private mutating func send(_ action: String, _ body: JSONValue, kind: Kind) -> String {
        let number = nextRequestNumber
        nextRequestNumber += 1
        inflight[number] = kind
        return ClientWire.request(number, action, body)
    }
}
