public import HearthCore

/// A message from a client, decoded from one reassembled frame.
///
/// For example:
/// ```swift
/// let message = try ClientMessage(parsing: #"{"t":"d","d":{"r":3,"a":"q","b":{"p":"/posts","h":""}}}"#)
/// guard case .request(let request) = message, case .listen(let path, nil, nil, "") = request.action else { return }
/// #expect(path.description == "/posts")
/// ```
public enum ClientMessage: Sendable {
    /// `{"t":"c","d":{"t":"p"}}`: a health-check ping, answered with a pong.
    case ping
    /// Any other control message (long-poll upgrade steps): ignored.
    case control
    /// A data message: a numbered request.
    case request(WireRequest)

    /// The request of a data message that parses only with its unpaired surrogates replaced, answered
    /// with `invalid_data`; nil for any other fault.
    static func requestWithUnpairedSurrogate(_ text: String) -> WireRequest? {
        var text = text
        let lenient: JSONValue? = text.withUTF8 { buffer in
            var parser = JSONParser(UnsafeRawBufferPointer(buffer))
            parser.replacesUnpairedSurrogates = true
            return try? parser.parseDocument()
        }
        guard let lenient, case .string("d")? = lenient["t"], case .number(let number)? = lenient["d"]?["r"],
            number == number.rounded(), abs(number) < 1e15
        else { return nil }
        return WireRequest(
            number: Int(number),
            action: .invalid(status: "invalid_data", message: "Invalid data; a string holds half of a UTF-16 surrogate pair (a character cut in two)")
        )
    }

    public init(parsing text: String) throws(WireError) {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: text)
        } catch {
            // A request whose data holds half of a UTF-16 surrogate pair (`JSON.stringify` of a string cut
            // inside an emoji; the SDKs do not check for it) is refused on its own, as a PUT of it is:
            // closing the connection instead made the SDK send it again on every reconnect.
            if let request = Self.requestWithUnpairedSurrogate(text) {
                self = .request(request)
                return
            }
            throw WireError("Invalid JSON message")
        }
        switch json["t"] {
        case .string("c")?:
            if case .string("p")? = json["d"]?["t"] { self = .ping } else { self = .control }
        case .string("d")?:
            guard let data = json["d"], case .number(let number)? = data["r"], number == number.rounded(), abs(number) < 1e15 else {
                throw WireError("Data messages need an integer request number r")
            }
            guard case .string(let action)? = data["a"] else { throw WireError("Data messages need an action a") }
            self = .request(WireRequest(number: Int(number), action: WireAction(action, body: data["b"] ?? .object([]))))
        default:
            throw WireError("Messages must have t = \"c\" or \"d\"")
        }
    }
}

/// A numbered client request. Every request gets exactly one response with the same number.
public struct WireRequest: Sendable {
    public var number: Int
    public var action: WireAction
}

/// What a request asks for, with its body decoded and validated. Bodies that cannot be decoded become
/// ``invalid(status:message:)`` so the request still gets its numbered reply.
public enum WireAction: Sendable {
    /// `s`: connection statistics (ignored).
    case stats
    /// `auth` / `gauth`: a credential, with the admin SDK's `authvar` override or `noauth`.
    case auth(credential: String, override: AuthOverride)
    case unauth
    /// `appcheck`, `unappcheck`, `unappeck`: App Check is not enforced.
    case appCheck
    /// `q`: listen at a path, optionally with a query and its tag.
    case listen(DatabasePath, WireQuery?, tag: Int?, hash: String)
    /// `n`: stop a listen.
    case unlisten(DatabasePath, tag: Int?)
    /// `g`: read once.
    case get(DatabasePath, WireQuery?)
    /// `p`: replace the value (or `.priority`) at a path; with `hash`, only if the data still has it.
    case put(DatabasePath, priority: Bool, data: JSONValue, hash: String?)
    /// `m`: several relative paths at once, atomically.
    case merge(DatabasePath, [(path: DatabasePath, value: JSONValue)])
    /// `o` / `om`: queue a put or merge for when the connection ends.
    case onDisconnectPut(DatabasePath, priority: Bool, data: JSONValue)
    case onDisconnectMerge(DatabasePath, [(path: DatabasePath, value: JSONValue)])
    /// `oc`: drop queued onDisconnect writes at or below a path.
    case onDisconnectCancel(DatabasePath)
    /// A request that cannot be carried out as sent: answered with this status and text.
    case invalid(status: String, message: String)

    /// `authvar` / `noauth` in an auth body: who an admin credential acts as.
    public enum AuthOverride: Sendable, Equatable {
        case none
        case unauthenticated
        case auth(JSONValue)
    }

    init(_ action: String, body: JSONValue) {
        do throws(WireError) {
            self = try WireAction.decode(action, body: body)
        } catch {
            self = .invalid(status: "invalid_data", message: error.message)
        }
    }

    static func decode(_ action: String, body: JSONValue) throws(WireError) -> WireAction {
        guard case .object = body else { throw WireError("The request body must be an object") }
        switch action {
        case "s": return .stats
        case "auth", "gauth":
            guard case .string(let credential)? = body["cred"] else { throw WireError("auth needs a cred string") }
            var override = AuthOverride.none
            if case .bool(true)? = body["noauth"] {
                override = .unauthenticated
            } else if let authvar = body["authvar"] {
                override = authvar == .null ? .unauthenticated : .auth(authvar)
            }
            return .auth(credential: credential, override: override)
        case "unauth": return .unauth
        case "appcheck", "unappcheck", "unappeck": return .appCheck
        case "q", "l":
            let (path, _) = try path(body["p"])
            let query = try body["q"].map { json throws(WireError) in try WireQuery(json: json) }
            let tag = try tag(body["t"])
            var hash = ""
            if case .string(let h)? = body["h"] { hash = h }
            return .listen(path, query?.query.isDefault == false ? query : nil, tag: query?.query.isDefault == false ? tag : nil, hash: hash)
        case "n", "u":
            let (path, _) = try path(body["p"])
            return .unlisten(path, tag: body["q"] == nil ? nil : try tag(body["t"]))
        case "g":
            let (path, _) = try path(body["p"])
            let query = try body["q"].map { json throws(WireError) in try WireQuery(json: json) }
            return .get(path, query?.query.isDefault == false ? query : nil)
        case "p", "o":
            let (path, priority) = try path(body["p"], allowPriority: true)
            guard let data = body["d"] else { throw WireError("\(action) needs data d") }
            if action == "o" { return .onDisconnectPut(path, priority: priority, data: data) }
            var hash: String?
            switch body["h"] {
            case nil: break
            case .string(let h)?: hash = h
            default: throw WireError("The hash h must be a string")
            }
            return .put(path, priority: priority, data: data, hash: hash)
        case "m", "om":
            let (path, _) = try path(body["p"])
            guard case .object(let members)? = body["d"] else { throw WireError("\(action) needs an object d") }
            var items: [(path: DatabasePath, value: JSONValue)] = []
            for (key, value) in members {
                let relative: DatabasePath
                do {
                    relative = try DatabasePath(updateKey: key)
                } catch {
                    throw WireError("Invalid key in update: \(error.message)")
                }
                guard !relative.isRoot else { throw WireError("Update keys must not be empty") }
                items.append((relative, value))
            }
            return action == "m" ? .merge(path, items) : .onDisconnectMerge(path, items)
        case "oc":
            return .onDisconnectCancel(try path(body["p"]).path)
        default:
            return .invalid(status: "failure", message: "Unknown action \(action)")
        }
    }

    /// A wire path: segments split on `/`, empty ones dropped, each a valid key; optionally ending in
    /// `.priority`.
    static func path(_ json: JSONValue?, allowPriority: Bool = false) throws(WireError) -> (path: DatabasePath, priority: Bool) {
        guard case .string(let text)? = json else { throw WireError("The request needs a path p") }
        var segments = DatabasePath.segments(of: text)
        var priority = false
        if allowPriority, segments.last == ".priority" {
            priority = true
            segments.removeLast()
        }
        guard segments.count <= DatabasePath.maximumDepth else { throw WireError("Paths must be at most 32 levels deep") }
        var keys: [Key] = []
        keys.reserveCapacity(segments.count)
        for segment in segments {
            do {
                keys.append(try Key(validating: String(segment)))
            } catch {
                throw WireError("Invalid path \(text): \(error.message)")
            }
        }
        return (DatabasePath(keys: keys), priority)
    }

    static func tag(_ json: JSONValue?) throws(WireError) -> Int? {
        switch json {
        case nil, .null?: return nil
        case .number(let n)? where n == n.rounded() && abs(n) < 1e15: return Int(n)
        default: throw WireError("The tag t must be an integer")
        }
    }
}
