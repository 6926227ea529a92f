import Foundation
import HearthAccess
import HearthCore
import HearthProtocol
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// What the Suite's hub answers, on every port in emulator mode (and on `emulators.hub`'s port if
/// firebase.json names it):
///
/// - `GET /emulators`: where each emulator listens, which `@firebase/rules-unit-testing` reads to find
///   them (`FIREBASE_EMULATOR_HUB`);
/// - `POST /_admin/export`: writes an emulators:export directory of everything the server holds at
///   the path in the body, `{"path": "/absolute/dir"}`, on the server's machine (`hearth emulators
///   export` calls it). Unlike the hub, it needs the emulators' admin credential, `Bearer owner`.
///
/// For example:
/// ```sh
/// curl -X POST -H 'Authorization: Bearer owner' -d '{"path": "/tmp/seed"}' http://127.0.0.1:9000/_admin/export
/// ```
struct EmulatorHubController: Sendable {
    let transfer: EmulatorDataTransfer
    let authenticator: Authenticator
    /// The emulators firebase.json names (`database`, `auth`, `storage`, `hub`) and their addresses.
    let emulators: [String: EmulatorSuiteOptions.Listener]
    let logger: Logger

    func register(on router: Router<HearthRequestContext>) {
        router.post("/_admin/export") { request, _ in await self.export(request) }
        router.get("/emulators") { request, _ in
            // Readable by a page of any origin (rules-unit-testing may run in a browser), as the hub's.
            var response = self.listing()
            if let origin = request.headers[.origin] { response.headers[.accessControlAllowOrigin] = origin }
            return response
        }
    }

    /// `{"database": {"name", "host", "port", "listen": [{"address", "family", "port"}]}, …}`, as the hub's.
    func listing() -> Response {
        let members = emulators.sorted { $0.key < $1.key }.map { name, listener -> (key: String, value: JSONValue) in
            let family = listener.host.contains(":") ? "IPv6" : "IPv4"
            return (name, .object([
                ("name", .string(name)), ("host", .string(listener.host)), ("port", .number(Double(listener.port))),
                ("listen", .array([.object([
                    ("address", .string(listener.host)), ("family", .string(family)), ("port", .number(Double(listener.port))),
                ])])),
            ]))
        }
        var response = Self.answer(.ok)
        response.body = ResponseBody(byteBuffer: ByteBuffer(string: JSONValue.object(members).jsonText))
        return response
    }

    func export(_ request: Request) async -> Response {
        // Never from a web page (as the hub): a page could otherwise have files written on this machine.
        guard request.headers[.origin] == nil else {
            return Self.answer(.forbidden, ("error", "Export cannot be triggered by external callers."))
        }
        let parameters = (try? RESTParameters(query: request.uri.query ?? "")) ?? RESTParameters()
        let identity = try? authenticator.identity(bearer: Authenticator.bearerToken(request.headers[.authorization]), parameters: parameters)
        guard identity?.isAdmin == true else {
            return Self.answer(.unauthorized, ("error", "An export needs the emulator's admin credential: Authorization: Bearer owner"))
        }
        var request = request
        guard let body = try? await request.collectBody(upTo: 64 * 1024), let json = try? JSONValue(parsing: String(buffer: body)),
            let path = json["path"]?.stringValue, path.hasPrefix("/")
        else {
            return Self.answer(.badRequest, ("error", #"The body must be {"path": "<absolute directory>"}"#))
        }
        do {
            // `"force": true` (hearth emulators export --force) replaces a directory that is not an export.
            let summary = try await transfer.export(to: URL(fileURLWithPath: path), replacingAnything: json["force"] == .bool(true))
            logger.notice("Exported the emulators' data", metadata: ["hearth.export.directory": "\(path)", "hearth.export.summary": "\(summary)"])
            return Self.answer(.ok, ("path", path), ("summary", summary.description))
        } catch let error as EmulatorExportError {
            return Self.answer(.conflict, ("error", error.description))
        } catch {
            logger.error("The export failed", metadata: ["hearth.export.directory": "\(path)", "hearth.error": "\(error)"])
            return Self.answer(.internalServerError, ("error", "The export to \(path) failed: \(error)"))
        }
    }

    static func answer(_ status: HTTPResponse.Status, _ members: (String, String)...) -> Response {
        let json = JSONValue.object(members.map { ($0.0, JSONValue.string($0.1)) })
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: json.jsonText))
        )
    }
}

/// `--export-on-exit`: when the server is asked to stop (SIGINT or SIGTERM), writes an export before
/// the listeners close. A failed export is logged, and the stop goes on.
struct ExportOnExitService: Service {
    let transfer: EmulatorDataTransfer
    let directory: URL
    let logger: Logger

    func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled, not stopped gracefully: no export
        }
        logger.notice("Exporting the emulators' data before stopping", metadata: ["hearth.export.directory": "\(directory.path)"])
        do {
            let summary = try await transfer.export(to: directory)
            logger.notice("Exported \(summary) to \(directory.path)")
        } catch {
            logger.error("The export on exit failed; the previous export (if any) is unchanged", metadata: ["hearth.error": "\(error)"])
        }
    }
}
