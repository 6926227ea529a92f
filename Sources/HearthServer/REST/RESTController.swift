import Foundation
import HashTreeCollections
import HearthAccess
import HearthCore
import HTTPTypes
import HearthEngine
import HearthProtocol
import HearthRules
import HearthStorage
public import Hummingbird
import Logging
import NIOCore

/// The Firebase Realtime Database REST API: `/<path>.json` with GET (and streaming), PUT, POST, PATCH and
/// DELETE, plus `/.settings/rules.json`.
public struct RESTController: Sendable {
    let registry: DatabaseRegistry
    let configuration: ServerConfiguration
    let authenticator: Authenticator
    let pushIDs = PushIDGenerator()
    /// Where requests that reach the controller without the activity middleware (``DatabaseShortcutResponder``'s
    /// shortcut) are recorded; nil records nothing.
    var activity: ServerActivity?

    static let jsonHeaders: HTTPFields = [
        .contentType: "application/json; charset=utf-8",
        .accessControlAllowOrigin: "*",
        .cacheControl: "no-cache",
    ]
    static let firebaseETag = HTTPField.Name("X-Firebase-ETag")!
    static let methodOverride = HTTPField.Name("X-HTTP-Method-Override")!

    public init(registry: DatabaseRegistry, configuration: ServerConfiguration, adminSecret: AdminSecret?, tokens: TokenSigner?) {
        self.init(registry: registry, configuration: configuration, adminSecret: adminSecret, tokens: tokens, consoleSessions: nil)
    }

    init(
        registry: DatabaseRegistry, configuration: ServerConfiguration, adminSecret: AdminSecret?, tokens: TokenSigner?, consoleSessions: ConsoleSessions?,
        activity: ServerActivity? = nil
    ) {
        self.registry = registry
        self.activity = activity
        self.configuration = configuration
        var authenticator = Authenticator(adminSecret: adminSecret, emulatorMode: configuration.emulatorMode, tokens: tokens, clock: configuration.clock)
        authenticator.consoleSessions = consoleSessions
        self.authenticator = authenticator
    }

    /// Registers the catch-all routes, and the public keys of the server's ID tokens. Returns the
    /// catch-all, which ``DatabaseShortcutResponder`` reaches without the router.
    @discardableResult
    public func register(on router: Router<HearthRequestContext>) -> DatabaseCatchAll {
        if let tokens = authenticator.tokens {
            router.get("/.well-known/jwks.json") { _, _ in
                self.respond(bytes: Array(tokens.jwks.jsonText.utf8), RESTParameters())
            }
        }
        return DatabaseCatchAll.register(on: router) { request, context in await self.respond(to: request, context: context) }
    }

    /// What a request addresses, decoded from its URL path.
    enum Target {
        case data(DatabasePath)
        case priority(DatabasePath)
        case rules
    }

    func respond(to request: Request, context: HearthRequestContext) async -> Response {
        // A HEAD is answered as its GET, without the body (RFC 9110): the same rules, status, ETag and
        // length. The activity log still records it as the HEAD it was.
        let answering = request.method == .head
        let asked = answering ? HeadRequest.get(asking: request) : request
        let started = ContinuousClock.now
        var namespace: String?
        do {
            var response = try await handle(asked, context: context, namespace: &namespace)
            // A browser's script may read the ETag of a cross-origin answer only when it is exposed, and
            // needs it for a conditional write (`if-match`).
            if response.headers.value(of: .eTag) != nil { response.headers[.accessControlExposeHeaders] = "ETag" }
            noteActivity(request, namespace: namespace, status: response.status, started: started)
            return answering ? response.withoutBody() : response
        } catch {
            let restError = RESTError.from(error)
            if restError.status == .internalServerError {
                context.logger.error("Request failed", metadata: ["hearth.error": "\(error)"])
            }
            noteActivity(
                request, namespace: namespace, status: restError.status, denied: restError.message == RESTError.permissionDenied().message,
                started: started
            )
            return answering ? restError.errorResponse().withoutBody() : restError.errorResponse()
        }
    }

    /// Tells the activity log which database the request was for and whether it read, wrote or was
    /// refused by the rules. `namespace` is the one the request was found to address, when it got that
    /// far. Through the router, the activity middleware records the request with this note; through
    /// ``DatabaseShortcutResponder``'s shortcut, which skips that middleware (its task-local note and
    /// its async frame were a twentieth of a read), the request is recorded here.
    private func noteActivity(
        _ request: Request, namespace: String?, status: HTTPResponse.Status, denied: Bool = false, started: ContinuousClock.Instant
    ) {
        let note = RequestNote.current
        guard note != nil || activity != nil else { return }
        // The database and what the request did to it; a preflight counts against none.
        var counted: (namespace: String, kind: RequestRecord.Kind)?
        if request.method != .options {
            let namespace = namespace ?? self.namespace(of: request, (try? RESTParameters(query: request.uri.query ?? "")) ?? RESTParameters())
            let kind: RequestRecord.Kind
            if denied {
                kind = .denied
            } else if status.kind != .successful || request.uri.path.hasPrefix("/.settings") {
                kind = .other
            } else if request.method == .get || request.method == .head || RESTController.isPostOverriddenToGet(request) {
                kind = .read
            } else {
                kind = .write
            }
            // Only databases that exist get counters: a made-up `ns=` must not add metrics series.
            if registry.isOpen(namespace) { counted = (namespace, kind) }
        }
        if let note {
            if let counted { note.mark(counted.namespace, counted.kind) }
            return
        }
        activity?.record(.http(
            request, path: request.uri.path, status: status.code, started: started, namespace: counted?.namespace, kind: counted?.kind ?? .other
        ))
    }

    /// The method a request asks for: a POST's `X-HTTP-Method-Override` (header, else query parameter)
    /// names another, for clients that can send only GET and POST.
    static func effectiveMethod(of request: Request, _ parameters: RESTParameters) throws(RESTError) -> HTTPRequest.Method {
        guard request.method == .post, let override = request.headers[RESTController.methodOverride]?.uppercased() ?? parameters.methodOverride
        else { return request.method }
        switch override {
        case "PUT": return .put
        case "PATCH": return .patch
        case "DELETE": return .delete
        case "GET": return .get
        case "POST": return .post
        default: throw RESTError(.badRequest, "X-HTTP-Method-Override must be PUT, PATCH, DELETE, GET or POST")
        }
    }

    /// Whether a POST asked to be a GET (it read). Cheap for every other POST, which is each push: the
    /// query is parsed again only when it may name the override.
    static func isPostOverriddenToGet(_ request: Request) -> Bool {
        guard request.method == .post else { return false }
        if let header = request.headers[RESTController.methodOverride] { return header.uppercased() == "GET" }
        guard let query = request.uri.query, query.contains("verride") || query.contains("%") else { return false }
        return (try? RESTParameters(query: query))?.methodOverride == "GET"
    }

    /// Answers a request; sets `namespace` once it knows which database the request addresses.
    func handle(_ request: Request, context: HearthRequestContext, namespace resolved: inout String?) async throws -> Response {
        if request.method == .options { return preflight(request) }
        let parameters = try RESTParameters(query: request.uri.query ?? "")
        let target = try RESTController.target(of: request.uri.path)
        let method = try RESTController.effectiveMethod(of: request, parameters)
        let namespace = namespace(of: request, parameters)
        resolved = namespace
        let authentication = try authenticator.authentication(
            bearer: Authenticator.bearerToken(request.headers.value(of: .authorization)),
            parameters: parameters
        )
        let identity = authentication.identity
        // Only the admin (or anyone, in emulator mode) creates a database by using it. A new database
        // admits only the admin until it has rules, so anyone else is refused as its rules would refuse
        // them — without a file made for every name a stranger tries.
        let database: DatabaseInstance
        if identity.isAdmin || configuration.emulatorMode {
            database = try await registry.database(namespace)
        } else {
            guard let existing = try await registry.existingDatabase(namespace) else { throw RESTError.permissionDenied() }
            database = existing
        }
        switch target {
        case .rules:
            return try await rules(request, method: method, parameters, identity, database)
        case .priority(let path):
            // The priority is the value at `…/.priority`: ETags and `if-match` are of it, as elsewhere.
            let wantsETag = request.headers.value(of: RESTController.firebaseETag) == "true"
            switch method {
            case .get:
                try await database.readBarrier()
                let root = database.snapshot()
                try RESTController.authorizeRead(path, identity, database, query: parameters.query, in: root)
                let priority = root.child(at: path).priority.map { Node.leaf($0.primitive) } ?? .empty
                let ifNoneMatch = request.headers.value(of: .ifNoneMatch)
                if let ifNoneMatch, ifNoneMatch == priority.etag {
                    var headers = RESTController.jsonHeaders
                    headers[.eTag] = priority.etag
                    return Response(status: .notModified, headers: headers)
                }
                var response = respond(priority, parameters)
                if wantsETag || ifNoneMatch != nil { response.headers[.eTag] = priority.etag }
                return response
            case .put, .delete:
                let json = method == .delete ? JSONValue.null : try await body(of: request)
                let ifMatch = request.headers.value(of: .ifMatch)
                let outcome = try await database.write(WriteRequest(.setPriority(path, json), ifMatch: ifMatch, identity: identity))
                switch outcome {
                case .preconditionFailed(let current):
                    guard database.canRead(path, identity, query: nil) else {
                        throw RESTError(.preconditionFailed, "ETag mismatch: the data changed; you may not read its current value")
                    }
                    var response = respond(current, parameters, status: .preconditionFailed, allowSilent: false)
                    response.headers[.eTag] = current.etag
                    return response
                case .written(let value, _):
                    let priority = value.priority.map { Node.leaf($0.primitive) } ?? .empty
                    var response = respond(priority, parameters)
                    if wantsETag || ifMatch != nil { response.headers[.eTag] = priority.etag }
                    return response
                }
            default:
                throw RESTError(.badRequest, "Only GET, PUT and DELETE are supported on .priority")
            }
        case .data(let path):
            switch method {
            case .get:
                if request.headers.value(of: .accept)?.contains("text/event-stream") == true {
                    // A stream holds its data for long: it starts from the loaded tree, not from the file.
                    await database.waitUntilWarm()
                    let revocations = authenticator.tokens?.revocations
                    let consoleSessions = authenticator.consoleSessions
                    let consoleSession = authentication.consoleSession
                    return try EventStreamController.stream(path: path, parameters, authentication, database, configuration) { identity in
                        if let consoleSession { return consoleSessions?.isLive(hash: consoleSession) != true }
                        guard case .user(let auth) = identity else { return false }
                        return revocations?.isRevoked(auth["token"]) == true
                    }
                }
                return try await read(request, path: path, parameters, identity, database)
            case .put:
                let json = try await body(of: request)
                return try await write(request, .set(path, json), parameters, identity, database)
            case .post:
                let json = try await body(of: request)
                let key = Key(pushIDs.next())
                let response = try await write(request, .set(path.child(key), json), parameters, identity, database, echoName: key)
                return response
            case .patch:
                let json = try await body(of: request)
                guard case .object(let members) = json else {
                    throw RESTError(
                        .badRequest,
                        "Invalid data; couldn't parse JSON object. Are you sending a JSON object with valid key names?"
                    )
                }
                var items: [(path: DatabasePath, value: JSONValue)] = []
                for (name, value) in members {
                    do {
                        let relative = try DatabasePath(updateKey: name)
                        guard !relative.isRoot else { throw PathError(.emptyKey, "empty path") }
                        items.append((relative, value))
                    } catch {
                        throw RESTError(
                            .badRequest,
                            "Invalid data; couldn't parse JSON object. Are you sending a JSON object with valid key names?"
                        )
                    }
                }
                return try await write(request, .update(path, items), parameters, identity, database)
            case .delete:
                return try await write(request, .set(path, .null), parameters, identity, database)
            default:
                throw RESTError(.methodNotAllowed, "Method not allowed")
            }
        }
    }

    // MARK: Reading

    func read(_ request: Request, path: DatabasePath, _ parameters: RESTParameters, _ identity: Identity, _ database: DatabaseInstance) async throws -> Response {
        // In a cluster: every write committed before this read is in this node's tree first.
        try await database.readBarrier()
        // One tree for the rules and the answer.
        let root = database.snapshot()
        try RESTController.authorizeRead(path, identity, database, query: parameters.query, in: root)
        let wantsETag = request.headers.value(of: RESTController.firebaseETag) == "true"
        let ifNoneMatch = request.headers.value(of: .ifNoneMatch)
        if parameters.shallow && (wantsETag || ifNoneMatch != nil) {
            throw RESTError(.badRequest, "ETags cannot be combined with shallow")
        }
        if let query = parameters.query { try checkIndex(query, at: path, database) }
        let node = root.child(at: path)
        var response: Response
        if let query = parameters.query, node.childCount > 0 {
            response = respond(bytes: RESTController.render(window: query.window(over: node), of: node, parameters), parameters)
        } else {
            var result = parameters.query?.evaluate(on: node) ?? node
            var rendering = parameters
            if parameters.shallow {
                result = result.shallow()
                // Keys and `true`: an object even when the keys are 0, 1, 2… (decision 0004).
                if rendering.format == .normal { rendering.format = .objects }
            }
            response = respond(result, rendering)
        }
        if wantsETag || ifNoneMatch != nil {
            // A query's ETag is its answer's: query rules may allow that window and not the rest.
            let etag = (parameters.query.map { $0.evaluate(on: node) } ?? node).etag
            if let ifNoneMatch, ifNoneMatch == etag {
                var headers = RESTController.jsonHeaders
                headers[.eTag] = etag
                return Response(status: .notModified, headers: headers)
            }
            response.headers[.eTag] = etag
        }
        return response
    }

    /// A query result as a JSON object whose members come in the query's index order (clients may rely on
    /// insertion order; Firebase promises none, so this costs nothing and helps).
    static func render(window: [(key: Key, node: Node)], of node: Node, _ parameters: RESTParameters) -> [UInt8] {
        if window.isEmpty { return Array("null".utf8) }
        var writer = JSONWriter(pretty: parameters.print == .pretty)
        writer.beginObject()
        for (index, entry) in window.enumerated() {
            if index > 0 { writer.comma() }
            writer.newline()
            writer.writeKey(entry.key.string)
            if parameters.shallow {
                writer.writeRaw("true")
            } else {
                entry.node.write(to: &writer, format: parameters.format)
            }
        }
        if parameters.format == .export, !parameters.shallow, let priority = node.priority {
            writer.comma()
            writer.newline()
            writer.writeKey(".priority")
            writer.write(primitive: priority.primitive)
        }
        writer.endObject(empty: false)
        return writer.bytes
    }

    func checkIndex(_ query: Query, at path: DatabasePath, _ database: DatabaseInstance) throws {
        try RESTController.checkIndex(query, at: path, database, enforce: configuration.enforceIndexes)
    }

    /// `orderBy` on a child or `$value` needs `.indexOn` in the rules, as Firebase requires (REST reads and streams).
    static func checkIndex(_ query: Query, at path: DatabasePath, _ database: DatabaseInstance, enforce: Bool) throws {
        guard enforce, let missing = missingIndex(query, at: path, database) else { return }
        throw RESTError(.badRequest, missing)
    }

    /// Firebase's "Index not defined" message when `query` orders by a child or by value that has no
    /// `.indexOn` at `path`; nil when it needs none or has it (REST reads and streams, WebSocket gets).
    static func missingIndex(_ query: Query, at path: DatabasePath, _ database: DatabaseInstance) -> String? {
        guard let name = query.index.indexOnName, !database.rules.hasIndex(name, at: path) else { return nil }
        return "Index not defined, add \".indexOn\": \"\(name)\", for path \"\(path)\", to the rules"
    }

    /// `.read` at the path or above, with the request's query, evaluated on `root` (the tree a read
    /// answers from; the current one when not given) (reads and streams).
    static func authorizeRead(_ path: DatabasePath, _ identity: Identity, _ database: DatabaseInstance, query: Query?, in root: Node? = nil) throws {
        guard database.canRead(path, identity, query: query, root: root ?? database.snapshot()) else { throw RESTError.permissionDenied() }
    }

    // MARK: Writing

    func write(
        _ request: Request,
        _ operation: WriteRequest.Operation,
        _ parameters: RESTParameters,
        _ identity: Identity,
        _ database: DatabaseInstance,
        echoName: Key? = nil
    ) async throws -> Response {
        let ifMatch = request.headers.value(of: .ifMatch)
        let writeRequest = WriteRequest(operation, ifMatch: ifMatch, identity: identity, maximumLeaves: parameters.writeSizeLimit?.maximumLeaves)
        let outcome = try await database.write(writeRequest)
        switch outcome {
        case .preconditionFailed(let current):
            // The current value (and its ETag, a hash of it) only for a client that may read it; the
            // rules already allowed the write itself, so the mismatch alone tells nothing new.
            guard database.canRead(writeRequest.path, identity, query: nil) else {
                throw RESTError(.preconditionFailed, "ETag mismatch: the data changed; you may not read its current value")
            }
            var response = respond(current, parameters, status: .preconditionFailed, allowSilent: false)
            response.headers[.eTag] = current.etag
            return response
        case .written(let value, let written):
            var response: Response
            if let echoName {
                // `{"name": <key>}` written directly: every push answers it.
                var writer = JSONWriter(pretty: parameters.print == .pretty)
                writer.beginObject()
                writer.newline()
                writer.writeKey("name")
                writer.writeString(echoName.string)
                writer.endObject(empty: false)
                response = respond(bytes: writer.bytes, parameters)
            } else {
                switch written {
                case .node(let node):
                    response = respond(node, parameters)
                case .update(let items):
                    var writer = JSONWriter(pretty: parameters.print == .pretty)
                    writer.beginObject()
                    for (i, item) in items.enumerated() {
                        if i > 0 { writer.comma() }
                        writer.newline()
                        writer.writeKey(item.path.keys.map(\.string).joined(separator: "/"))
                        item.node.write(to: &writer, format: parameters.format)
                    }
                    writer.endObject(empty: items.isEmpty)
                    response = respond(bytes: writer.bytes, parameters)
                }
            }
            // After an update, the ETag hashes the whole location, which the writer may not read (after a
            // set it hashes what the writer sent).
            var isSet = false
            if case .node = written { isSet = true }
            if ifMatch != nil || request.headers.value(of: RESTController.firebaseETag) == "true",
                isSet || database.canRead(writeRequest.path, identity, query: nil)
            {
                response.headers[.eTag] = value.etag
            }
            return response
        }
    }

    func body(of request: Request) async throws -> JSONValue {
        let tooLarge = RESTError(.badRequest, "Request body is too large; the limit is \(configuration.maximumRequestBytes / 1_048_576) MB")
        // A declared length over the limit is refused before a byte is read, not after the limit's worth.
        if let declared = request.headers.value(of: .contentLength).flatMap(Int.init), declared > configuration.maximumRequestBytes {
            throw tooLarge
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maximumRequestBytes)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        }
        guard buffer.readableBytes > 0 else { throw RESTError(.badRequest, "Missing PUT, POST or PATCH data") }
        do {
            return try buffer.withUnsafeReadableBytes { raw in try JSONValue(parsing: raw) }
        } catch {
            throw RESTError(.badRequest, "Invalid data; couldn't parse JSON object, array, or value.")
        }
    }

    // MARK: Rules

    func rules(_ request: Request, method: HTTPRequest.Method, _ parameters: RESTParameters, _ identity: Identity, _ database: DatabaseInstance) async throws -> Response {
        guard identity.isAdmin else { throw RESTError.permissionDenied() }
        switch method {
        case .get:
            let rules = database.rules
            let bytes: [UInt8]
            if parameters.strictFormat {
                var writer = JSONWriter(pretty: true)
                writer.write(rules.json)
                bytes = writer.bytes
            } else {
                bytes = Array(rules.source.utf8)
            }
            return respond(bytes: bytes, parameters)
        case .put:
            var request = request
            let buffer: ByteBuffer
            do {
                buffer = try await request.collectBody(upTo: configuration.maximumRequestBytes)
            } catch is NIOTooManyBytesError {
                throw RESTError(.badRequest, "The rules document is too large")
            }
            guard buffer.readableBytes > 0 else { throw RESTError(.badRequest, "Missing rules document") }
            let rules = try RulesDocument(source: String(buffer: buffer))
            try await database.replaceRules(rules)
            return respond(bytes: Array(#"{"status":"ok"}"#.utf8), parameters)
        default:
            throw RESTError(.methodNotAllowed, "Only GET and PUT are supported on /.settings/rules.json")
        }
    }

    // MARK: Responses

    func respond(_ node: Node, _ parameters: RESTParameters, status: HTTPResponse.Status = .ok, allowSilent: Bool = true) -> Response {
        respond(bytes: node.jsonBytes(format: parameters.format, pretty: parameters.print == .pretty), parameters, status: status, allowSilent: allowSilent)
    }

    func respond(bytes: [UInt8], _ parameters: RESTParameters, status: HTTPResponse.Status = .ok, allowSilent: Bool = true) -> Response {
        var headers = RESTController.jsonHeaders
        if allowSilent && parameters.print == .silent {
            return Response(status: .noContent, headers: headers)
        }
        var body = bytes
        if let callback = parameters.callback {
            headers[.contentType] = "application/javascript; charset=utf-8"
            body = Array(callback.utf8) + [UInt8(ascii: "(")] + bytes + Array(");".utf8)
        }
        if let download = parameters.download {
            let safe = download.filter { $0 != "\"" && $0 != "\\" && !$0.isNewline }
            headers[.contentDisposition] = "attachment; filename=\"\(safe)\""
        }
        headers[.contentLength] = String(body.count)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    func preflight(_ request: Request) -> Response {
        var headers: HTTPFields = [
            .accessControlAllowOrigin: "*",
            .accessControlAllowMethods: "GET, PUT, POST, PATCH, DELETE, OPTIONS",
            .accessControlMaxAge: "86400",
        ]
        headers[.accessControlAllowHeaders] = request.headers[.accessControlRequestHeaders] ?? "*"
        return Response(status: .ok, headers: headers)
    }

    // MARK: Addressing

    func namespace(of request: Request, _ parameters: RESTParameters) -> String {
        if let namespace = parameters.namespace, !namespace.isEmpty { return namespace }
        if let host = request.head.authority, let label = RESTController.namespaceLabel(host: host) { return label }
        return configuration.defaultNamespace
    }

    /// The first DNS label of a Host such as `mydb.localhost:9000`; nil for IP addresses and single labels.
    static func namespaceLabel(host: String) -> String? {
        // On the bytes: every request asks, and Character's Unicode properties cost more than the request.
        // One pass, no array of labels: most requests come to an IP address and get nil.
        var name = host.utf8[...]
        if let colon = name.firstIndex(of: UInt8(ascii: ":")) { name = name[..<colon] }
        var first: Substring.UTF8View?
        var labels = 0
        var onlyDigits = true
        var labelStart = name.startIndex
        var index = name.startIndex
        while true {
            let atEnd = index == name.endIndex
            if atEnd || name[index] == UInt8(ascii: ".") {
                if labelStart != index {
                    labels += 1
                    if first == nil { first = name[labelStart..<index] }
                }
                if atEnd { break }
                labelStart = name.index(after: index)
            } else if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(name[index]) {
                onlyDigits = false
            }
            index = name.index(after: index)
        }
        guard labels >= 2, !onlyDigits, let first else { return nil }
        return String(Substring(first))
    }

    /// Decodes `/<path>.json`: percent-decoded, validated segments; `.priority` and `/.settings/rules`.
    static func target(of rawPath: String) throws -> Target {
        guard rawPath.hasSuffix(".json") else {
            throw RESTError(.notFound, "Not found: database locations are addressed as /<path>.json")
        }
        // Split on the bytes: every request asks, and Character-based splitting cost more than the rest
        // of this function (profile in docs/benchmarks.md, "REST reads: Hearth's own work").
        let utf8 = rawPath.utf8
        let end = utf8.index(utf8.endIndex, offsetBy: -5)
        var segments: [String] = []
        var start = utf8.startIndex
        var index = start
        var escaped = false
        while true {
            let atEnd = index == end
            if atEnd || utf8[index] == UInt8(ascii: "/") {
                if index != start {
                    let segment = String(rawPath[start..<index])
                    if escaped {
                        guard let decoded = PercentDecoding.decode(segment) else {
                            throw RESTError(.badRequest, "Invalid path: the URL has a malformed percent escape")
                        }
                        segments.append(decoded)
                    } else {
                        segments.append(segment)
                    }
                }
                if atEnd { break }
                start = utf8.index(after: index)
                escaped = false
            } else if utf8[index] == UInt8(ascii: "%") {
                escaped = true
            }
            index = utf8.index(after: index)
        }
        if segments.count == 2, segments[0] == ".settings", segments[1] == "rules" { return .rules }
        let isPriority = segments.last == ".priority"
        do throws(PathError) {
            var keys: [Key] = []
            keys.reserveCapacity(segments.count)
            for segment in isPriority ? segments.dropLast() : segments[...] {
                keys.append(try Key(validating: segment))
            }
            if keys.count > DatabasePath.maximumDepth {
                throw PathError(.tooDeep, "Invalid path: paths must be at most \(DatabasePath.maximumDepth) levels deep")
            }
            let path = DatabasePath(keys: keys)
            return isPriority ? .priority(path) : .data(path)
        } catch {
            let shown = isPriority ? segments.dropLast() : segments[...]
            throw RESTError(.badRequest, "Invalid path \"/\(shown.joined(separator: "/"))\": \(error.message)")
        }
    }
}
