import HearthCore

/// A message from the server, decoded from one reassembled frame.
///
/// For example:
/// ```swift
/// let frame = try ServerFrame(parsing: #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":{}}}}"#)
/// #expect(frame == .response(number: 3, status: "ok", data: .object([])))
/// ```
enum ServerFrame: Sendable, Equatable {
    /// `h`: the handshake, with the server time in ms and the session id.
    case handshake(timestamp: Double, sessionID: String, host: String)
    /// `r`: reconnect to another host.
    case reset(host: String)
    /// `s`: the server shuts the connection down; do not reconnect.
    case shutdown(reason: String)
    /// `o`: the answer to a ping.
    case pong
    /// The reply to request `number`.
    case response(number: Int, status: String, data: JSONValue)
    /// `d`: the data at `path` is now exactly `data`.
    case overwrite(path: DatabasePath, data: JSONValue, tag: Int?)
    /// `m`: each relative path under `path` now holds its value.
    case merge(path: DatabasePath, items: [(path: DatabasePath, value: JSONValue)], tag: Int?)
    /// `c`: a listen was revoked.
    case listenRevoked(path: DatabasePath)
    /// `ac`: the credential was revoked.
    case authRevoked(status: String, reason: String)
    /// Anything this client does not need (`sd`, `apc`, unknown actions).
    case ignored

    static func == (lhs: ServerFrame, rhs: ServerFrame) -> Bool {
        switch (lhs, rhs) {
        case let (.handshake(a, b, c), .handshake(d, e, f)): a == d && b == e && c == f
        case let (.reset(a), .reset(b)): a == b
        case let (.shutdown(a), .shutdown(b)): a == b
        case (.pong, .pong), (.ignored, .ignored): true
        case let (.response(a, b, c), .response(d, e, f)): a == d && b == e && c == f
        case let (.overwrite(a, b, c), .overwrite(d, e, f)): a == d && b == e && c == f
        case let (.merge(a, b, c), .merge(d, e, f)):
            a == d && c == f && b.count == e.count && zip(b, e).allSatisfy { $0.path == $1.path && $0.value == $1.value }
        case let (.listenRevoked(a), .listenRevoked(b)): a == b
        case let (.authRevoked(a, b), .authRevoked(c, d)): a == c && b == d
        default: false
        }
    }

    init(parsing text: String) throws(ProtocolViolation) {
        let json: JSONValue
        do { json = try JSONValue(parsing: text) } catch { throw ProtocolViolation("invalid JSON from server") }
        guard case .string(let layer)? = json["t"], let payload = json["d"] else {
            throw ProtocolViolation("a server message needs t and d")
        }
        if layer == "c" {
            guard case .string(let kind)? = payload["t"] else { throw ProtocolViolation("control message without t") }
            let body = payload["d"] ?? .null
            switch kind {
            case "h":
                guard case .number(let ts)? = body["ts"] else { throw ProtocolViolation("handshake without ts") }
                var session = ""
                if case .string(let s)? = body["s"] { session = s }
                var host = ""
                if case .string(let h)? = body["h"] { host = h }
                self = .handshake(timestamp: ts, sessionID: session, host: host)
            case "r":
                guard case .string(let host) = body else { throw ProtocolViolation("reset without host") }
                self = .reset(host: host)
            case "s":
                if case .string(let reason) = body { self = .shutdown(reason: reason) } else { self = .shutdown(reason: "") }
            case "o": self = .pong
            default: self = .ignored
            }
            return
        }
        guard layer == "d" else { throw ProtocolViolation("unknown layer \(layer)") }
        if case .number(let number)? = payload["r"] {
            let body = payload["b"] ?? .null
            var status = ""
            if case .string(let s)? = body["s"] { status = s }
            self = .response(number: Int(number), status: status, data: body["d"] ?? .null)
            return
        }
        guard case .string(let action)? = payload["a"] else { throw ProtocolViolation("data message without r or a") }
        let body = payload["b"] ?? .null
        var tag: Int?
        if case .number(let t)? = body["t"] { tag = Int(t) }
        switch action {
        case "d", "m":
            guard case .string(let p)? = body["p"] else { throw ProtocolViolation("push without path") }
            let path: DatabasePath
            do { path = try DatabasePath(p) } catch { throw ProtocolViolation("invalid push path \(p)") }
            let data = body["d"] ?? .null
            if action == "d" {
                self = .overwrite(path: path, data: data, tag: tag)
            } else {
                guard case .object(let members) = data else { throw ProtocolViolation("merge data must be an object") }
                var items: [(path: DatabasePath, value: JSONValue)] = []
                for (key, value) in members {
                    do { items.append((try DatabasePath(updateKey: key), value)) } catch { throw ProtocolViolation("invalid merge key \(key)") }
                }
                self = .merge(path: path, items: items, tag: tag)
            }
        case "c":
            guard case .string(let p)? = body["p"], let path = try? DatabasePath(p) else { throw ProtocolViolation("revoke without path") }
            self = .listenRevoked(path: path)
        case "ac":
            var status = "", reason = ""
            if case .string(let s)? = body["s"] { status = s }
            if case .string(let d)? = body["d"] { reason = d }
            self = .authRevoked(status: status, reason: reason)
        default:
            self = .ignored
        }
    }
}

/// The server sent something this client cannot understand.
struct ProtocolViolation: Error, Sendable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Builds the client's side of the protocol: request envelopes and the `q` object of queries.
enum ClientWire {
    /// `{"t":"d","d":{"r":N,"a":action,"b":body}}`.
    static func request(_ number: Int, _ action: String, _ body: JSONValue) -> String {
        JSONValue.object([
            ("t", .string("d")),
            ("d", .object([("r", .number(Double(number))), ("a", .string(action)), ("b", body)])),
        ]).jsonText
    }

    /// The keep-alive frame, sent after 45 s without traffic.
    static let keepAlive = "0"

    /// A path as the SDKs send it: a leading slash, `/` for the root.
    static func path(_ path: DatabasePath) -> JSONValue { .string(path.description) }

    /// The `q` object for a query (nil for queries the server treats as the whole location).
    static func queryObject(_ query: Query) -> JSONValue? {
        guard !query.isDefault || query.index != .key else { return nil }
        var members: [(key: String, value: JSONValue)] = []
        switch query.index {
        case .priority: break
        case .key: members.append(("i", .string(".key")))
        case .value: members.append(("i", .string(".value")))
        case .child(let path): members.append(("i", .string(path.keys.map(\.string).joined(separator: "/"))))
        }
        if let start = query.start {
            members.append(("sp", start.value.jsonValue))
            if let name = start.name { members.append(("sn", .string(boundName(name)))) }
            if !start.inclusive { members.append(("sin", .bool(false))) }
        }
        if let end = query.end {
            members.append(("ep", end.value.jsonValue))
            if let name = end.name { members.append(("en", .string(boundName(name)))) }
            if !end.inclusive { members.append(("ein", .bool(false))) }
        }
        switch query.limit {
        case .first(let n)?: members.append(("l", .number(Double(n)))); members.append(("vf", .string("l")))
        case .last(let n)?: members.append(("l", .number(Double(n)))); members.append(("vf", .string("r")))
        case nil: break
        }
        return .object(members)
    }

    static func boundName(_ name: Query.BoundName) -> String {
        switch name {
        case .min: "[MIN_NAME]"
        case .max: "[MAX_NAME]"
        case .key(let key): key.string
        }
    }
}
