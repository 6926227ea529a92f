import Foundation
import HearthCore
import HearthRules
import HTTPTypes
import Hummingbird
import NIOCore

/// The console's own API: `POST /.console/session` exchanges the admin secret for a session token
/// (`{"token", "expires"}`); `DELETE /.console/session` with `Authorization: Bearer <token>` ends it.
/// The token is the admin on every API of the server (REST, WebSocket, identity, files) until it
/// expires, so the console's pages never hold the secret.
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
    let filesEnabled: Bool

    func register(on router: Router<HearthRequestContext>) {
        router.post("/.console/session") { request, _ in await self.signIn(request) }
        router.delete("/.console/session") { request, _ in self.signOut(request) }
        router.get("/.console/info") { request, _ in self.info(request) }
        router.post("/.console/simulate") { request, _ in await self.simulate(request) }
    }

    /// The rules simulator: runs one scenario (`{"auth", "read" | "write" + "value" | "update" +
    /// "value"}`) against the live data and rules of `?ns=`, without writing anything.
    func simulate(_ request: Request) async -> Response {
        guard let token = Authenticator.bearerToken(request.headers[.authorization]), sessions.isValid(token) else {
            return Self.json(.object([("error", .string("Sign in to the console first."))]), status: 401)
        }
        let namespace = request.uri.queryParameters.get("ns") ?? configuration.defaultNamespace
        guard let body = try? await request.body.collect(upTo: 1 << 20), let scenario = try? JSONValue(parsing: body.readableBytesView) else {
            return Self.json(.object([("error", .string("Send the scenario as JSON."))]), status: 400)
        }
        do {
            let database = try await registry.database(namespace)
            let allowed = try RulesTestSuite.allows(scenario, database.rules, data: database.snapshot(), now: configuration.clock.wallMilliseconds)
            return Self.json(.object([("allowed", .bool(allowed))]), status: 200)
        } catch let error as RulesError {
            return Self.json(.object([("error", .string(error.message))]), status: 400)
        } catch {
            return Self.json(.object([("error", .string("The database \(namespace) cannot be opened: \(error)"))]), status: 400)
        }
    }

    /// What the console shows around its views: the project, the mode, the databases (admin only).
    func info(_ request: Request) -> Response {
        guard let token = Authenticator.bearerToken(request.headers[.authorization]), sessions.isValid(token) else {
            return Self.json(.object([("error", .string("Sign in to the console first."))]), status: 401)
        }
        let namespaces = Set(registry.openDatabases.map(\.namespace)).union([configuration.defaultNamespace]).sorted()
        return Self.json(.object([
            ("project", .string(configuration.identity.projectID)),
            ("emulator", .bool(configuration.emulatorMode)),
            ("defaultNamespace", .string(configuration.defaultNamespace)),
            ("namespaces", .array(namespaces.map { .string($0) })),
            ("files", .bool(filesEnabled)),
        ]), status: 200)
    }

    func signIn(_ request: Request) async -> Response {
        guard !sessions.isThrottled() else {
            return Self.json(.object([("error", .string("Too many failed sign-ins; wait a minute and try again."))]), status: 429)
        }
        guard let body = try? await request.body.collect(upTo: 64 * 1024), let json = try? JSONValue(parsing: body.readableBytesView),
            case .string(let secret)? = json["secret"]
        else {
            return Self.json(.object([("error", .string("Send {\"secret\": \"<admin secret>\"}."))]), status: 400)
        }
        guard let adminSecret, adminSecret.verify(secret) else {
            _ = sessions.recordFailure()
            return Self.json(.object([("error", .string("That is not this server's admin secret."))]), status: 401)
        }
        let (token, expires) = sessions.open()
        return Self.json(.object([("token", .string(token)), ("expires", .number(expires))]), status: 200)
    }

    func signOut(_ request: Request) -> Response {
        if let token = Authenticator.bearerToken(request.headers[.authorization]) { sessions.close(token) }
        return Response(status: .noContent)
    }

    static func json(_ value: JSONValue, status: Int) -> Response {
        Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: value.jsonText))
        )
    }
}
