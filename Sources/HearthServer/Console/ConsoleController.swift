import Foundation
import HearthAccess
import HearthCore
import HearthEngine
import HearthFiles
import HearthIdentity
import HearthRules
import HearthStorage
import HearthStorageRules
import HTTPTypes
import Hummingbird
import NIOCore

/// The console's own API: `POST /.console/session` exchanges the admin secret for a session token
/// (`{"token", "expires"}`); `DELETE /.console/session` with `Authorization: Bearer <token>` ends it.
/// The token is the admin on every API of the server (REST, WebSocket, identity, files) until it
/// expires, so the console's pages never hold the secret.
///
/// With a session: `GET /.console/info`, `POST /.console/simulate?ns=` (a rules scenario, explained),
/// `POST /.console/rules/check?kind=database|storage` (diagnostics for a draft, nothing saved),
/// `GET /.console/rules/history?kind=…&ns=` (saved versions, newest first) and `GET /.console/activity`.
///
/// For example:
/// ```sh
/// curl -X POST -d '{"secret": "…"}' http://127.0.0.1:9000/.console/session
/// ```
struct ConsoleController: Sendable {
    let sessions: ConsoleSessions
    let adminSecret: AdminSecret?
    let registry: DatabaseRegistry
    let configuration: ServerConfiguration
    let files: FileService?
    let activity: ServerActivity
    let sampler: ActivitySampler

    var filesEnabled: Bool { files != nil }

    func register(on router: Router<HearthRequestContext>) {
        router.post("/.console/session") { request, _ in await self.signIn(request) }
        router.delete("/.console/session") { request, _ in self.signOut(request) }
        router.get("/.console/info") { request, _ in self.signedIn(request) { self.info() } }
        router.post("/.console/simulate") { request, _ in await self.signedIn(request) { await self.simulate(request) } }
        router.post("/.console/rules/check") { request, _ in await self.signedIn(request) { await self.checkRules(request) } }
        router.get("/.console/rules/history") { request, _ in await self.signedIn(request) { await self.rulesHistory(request) } }
        router.get("/.console/activity") { request, _ in await self.signedIn(request) { await self.activityReport(request) } }
        ChildListing(sessions: sessions, registry: registry, configuration: configuration).register(on: router)
    }

    /// Answers 401 unless the request carries a live console session.
    func signedIn(_ request: Request, _ respond: () async -> Response) async -> Response {
        guard let token = Authenticator.bearerToken(request.headers[.authorization]), sessions.isValid(token) else {
            return Self.json(.object([("error", .string("Sign in to the console first."))]), status: 401)
        }
        return await respond()
    }

    func signedIn(_ request: Request, _ respond: () -> Response) -> Response {
        guard let token = Authenticator.bearerToken(request.headers[.authorization]), sessions.isValid(token) else {
            return Self.json(.object([("error", .string("Sign in to the console first."))]), status: 401)
        }
        return respond()
    }

    /// The rules simulator: runs one scenario (`{"auth", "read" | "write" + "value" | "update" +
    /// "value"}`) against the live data and rules of `?ns=`, without writing anything, and explains the
    /// verdict: `{"allowed", "summary", "steps": [{"rule", "path", "expression", "line", "column", "result"}]}`.
    func simulate(_ request: Request) async -> Response {
        let namespace = request.uri.queryParameters.get("ns") ?? configuration.defaultNamespace
        guard let body = try? await request.body.collect(upTo: 1 << 20), let scenario = try? JSONValue(parsing: body.readableBytesView) else {
            return Self.json(.object([("error", .string("Send the scenario as JSON."))]), status: 400)
        }
        let database: DatabaseInstance
        switch await Self.databaseToRead(namespace, registry: registry, configuration: configuration) {
        case .success(let found): database = found
        case .failure(let answer): return answer.response
        }
        do {
            let explanation = try RulesTestSuite.explain(scenario, database.rules, data: database.snapshot(), now: configuration.clock.wallMilliseconds)
            let steps: [JSONValue] = explanation.steps.map { step in
                .object([
                    ("rule", .string(step.rule)), ("path", .string(step.path)), ("expression", .string(step.expression)),
                    ("line", step.line.map { .number(Double($0)) } ?? .null), ("column", step.column.map { .number(Double($0)) } ?? .null),
                    ("result", .bool(step.result)),
                ])
            }
            return Self.json(
                .object([("allowed", .bool(explanation.allowed)), ("summary", .string(explanation.summary)), ("steps", .array(steps))]),
                status: 200
            )
        } catch let error as RulesError {
            return Self.json(.object([("error", .string(error.message))]), status: 400)
        } catch {
            return Self.json(.object([("error", .string("The scenario cannot be run: \(error)"))]), status: 400)
        }
    }

    /// Diagnostics for a draft of the rules, as the editor types: `{"diagnostics": [{"line", "column",
    /// "message"}]}`, empty when the draft would be accepted. Nothing is saved.
    func checkRules(_ request: Request) async -> Response {
        guard let body = try? await request.body.collect(upTo: configuration.maximumRequestBytes) else {
            return Self.json(.object([("error", .string("The rules document is too large."))]), status: 400)
        }
        let source = String(buffer: body)
        var diagnostics: [Diagnostic] = []
        do {
            if request.uri.queryParameters.get("kind") == "storage" {
                _ = try StorageRules(source: source)
            } else {
                _ = try RulesDocument(source: source)
            }
        } catch {
            diagnostics = error.diagnostics
        }
        let list: [JSONValue] = diagnostics.map { diagnostic in
            .object([
                ("line", .number(Double(diagnostic.line))), ("column", .number(Double(diagnostic.column))),
                ("message", .string(diagnostic.message)), ("text", .string(diagnostic.description)),
            ])
        }
        return Self.json(.object([("diagnostics", .array(list))]), status: 200)
    }

    /// The saved versions of the database rules of `?ns=` or, with `kind=storage`, of the storage rules:
    /// `{"versions": [{"version", "time", "source"}]}`, newest first; restoring one is saving it again.
    func rulesHistory(_ request: Request) async -> Response {
        let limit = min(max(Int(request.uri.queryParameters.get("limit") ?? "") ?? 50, 1), RulesVersion.kept)
        let versions: [RulesVersion]
        do {
            if request.uri.queryParameters.get("kind") == "storage" {
                guard let files else { return Self.json(.object([("error", .string("This server runs without files."))]), status: 404) }
                versions = try await files.rulesHistory(limit: limit)
            } else {
                let namespace = request.uri.queryParameters.get("ns") ?? configuration.defaultNamespace
                switch await Self.databaseToRead(namespace, registry: registry, configuration: configuration) {
                case .success(let database): versions = try await database.rulesHistory(limit: limit)
                case .failure(let answer): return answer.response
                }
            }
        } catch {
            return Self.json(.object([("error", .string("The history cannot be read: \(error)"))]), status: 503)
        }
        let list: [JSONValue] = versions.map { version in
            .object([("version", .number(Double(version.version))), ("time", .number(Double(version.time))), ("source", .string(version.source))])
        }
        return Self.json(.object([("versions", .array(list))]), status: 200)
    }

    /// The Activity view's poll: live counters per database and the requests logged after `?after=`
    /// (a sequence number; 0 for all that are kept).
    func activityReport(_ request: Request) async -> Response {
        let after = Int(request.uri.queryParameters.get("after") ?? "") ?? 0
        let sample = await sampler.sample()
        let databases: [JSONValue] = sample.databases.map { database in
            .object([
                ("namespace", .string(database.namespace)), ("listens", .number(Double(database.listens))),
                ("reads", .number(Double(database.reads))), ("writes", .number(Double(database.writes))),
                ("denied", .number(Double(database.denied))),
                ("storedBytes", database.storedBytes.map { .number(Double($0)) } ?? .null),
            ])
        }
        let requests: [JSONValue] = activity.recentRequests(after: after).map { entry in
            let record = entry.record
            return .object([
                ("sequence", .number(Double(entry.sequence))), ("time", .number(entry.time)),
                ("transport", .string(record.transport.rawValue)), ("method", .string(record.method)), ("path", .string(record.path)),
                ("namespace", record.namespace.map { .string($0) } ?? .null), ("status", .string(record.status)),
                ("milliseconds", .number((record.duration / .microseconds(1)).rounded() / 1000)),
                ("denied", .bool(record.kind == .denied)),
            ])
        }
        return Self.json(.object([
            ("time", .number(configuration.clock.wallMilliseconds)),
            ("websocketConnections", .number(Double(sample.websocketConnections))),
            ("eventStreams", .number(Double(sample.eventStreams))),
            ("databases", .array(databases)),
            ("requests", .array(requests)),
        ]), status: 200)
    }

    /// What the console shows around its views: the project, the mode, the databases (admin only).
    func info() -> Response {
        let namespaces = Set(registry.openDatabases.map(\.namespace)).union([configuration.defaultNamespace]).sorted()
        return Self.json(.object([
            ("project", .string(configuration.identity.projectID)),
            ("emulator", .bool(configuration.emulatorMode)),
            ("defaultNamespace", .string(configuration.defaultNamespace)),
            ("namespaces", .array(namespaces.map { .string($0) })),
            ("files", .bool(filesEnabled)),
        ]), status: 200)
    }

    /// Wrong secrets count against the client's address, with those tried anywhere else
    /// (``AdminSecretGuard``): an address that guessed too often gets 429 for a while, even with the
    /// right secret, and other addresses — the real admin's — are unaffected.
    func signIn(_ request: Request) async -> Response {
        guard let body = try? await request.body.collect(upTo: 64 * 1024), let json = try? JSONValue(parsing: body.readableBytesView),
            case .string(let secret)? = json["secret"]
        else {
            return Self.json(.object([("error", .string("Send {\"secret\": \"<admin secret>\"}."))]), status: 400)
        }
        let verdict = adminSecret.map { RequestClient.checkAdminSecret(secret, against: $0) } ?? .notAdmin
        guard verdict != .locked else {
            return Self.json(.object([("error", .string("Too many failed sign-ins; wait a minute and try again."))]), status: 429)
        }
        guard verdict == .admin else {
            return Self.json(.object([("error", .string("That is not this server's admin secret."))]), status: 401)
        }
        let (token, expires) = sessions.open()
        return Self.json(.object([("token", .string(token)), ("expires", .number(expires))]), status: 200)
    }

    func signOut(_ request: Request) -> Response {
        if let token = Authenticator.bearerToken(request.headers[.authorization]) { sessions.close(token) }
        return Response(status: .noContent)
    }

    /// The database a console read names: the server's default one (made if new), or one that exists.
    /// A read never makes a database: an unknown name is a 404, an impossible one a 400 (the answer).
    static func databaseToRead(
        _ namespace: String, registry: DatabaseRegistry, configuration: ServerConfiguration
    ) async -> Result<DatabaseInstance, ConsoleAnswer> {
        guard NamespaceName.isValid(namespace) else {
            return .failure(ConsoleAnswer(json(
                .object([("error", .string("Invalid database name \"\(namespace)\": letters, digits, - and _, at most 63."))]), status: 400
            )))
        }
        do {
            if namespace == configuration.defaultNamespace { return .success(try await registry.database(namespace)) }
            guard let database = try await registry.existingDatabase(namespace) else {
                return .failure(ConsoleAnswer(json(.object([("error", .string("There is no database named \(namespace)."))]), status: 404)))
            }
            return .success(database)
        } catch {
            return .failure(ConsoleAnswer(json(
                .object([("error", .string("The database \(namespace) cannot be opened: \(error)"))]), status: 503
            )))
        }
    }

    static func json(_ value: JSONValue, status: Int) -> Response {
        Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: value.jsonText))
        )
    }
}

/// A console request's answer, carried as an error where a lookup fails.
struct ConsoleAnswer: Error {
    var response: Response

    init(_ response: Response) { self.response = response }
}
