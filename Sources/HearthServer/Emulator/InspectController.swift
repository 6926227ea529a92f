import HearthAccess
import HearthCore
import HearthEngine
import HearthProtocol
import HearthRules
import HTTPTypes
import Hummingbird
import NIOCore

/// The database emulator's `/.inspect/…` endpoints:
///
/// - `GET /.inspect/coverage?ns=<name>`: the rules coverage as a page, the rules' source with every
///   `.read`, `.write` and `.validate` marked by what it answered since the rules were put in force
///   (hover one for its counts), then a table of them;
/// - `GET /.inspect/coverage.json?ns=<name>`: the same as JSON (``coverageJSON(_:namespace:)``);
/// - `GET /.inspect/databases.json`: `[{"name": "<namespace>"}, …]`, every database, which the
///   Emulator Suite's hub and UI list.
///
/// Rules are counted only in emulator mode (`hearth serve --emulator`), where these answer anyone, as the
/// emulator's do; otherwise coverage is a 404 that says so, and the list of databases is the admin's.
///
/// For example:
/// ```sh
/// curl 'http://127.0.0.1:9000/.inspect/coverage.json?ns=demo'
/// ```
struct InspectController: Sendable {
    let rest: RESTController
    let registry: DatabaseRegistry
    let emulatorMode: Bool

    func register(on router: Router<HearthRequestContext>) {
        router.get("/.inspect/coverage") { request, _ in await self.coverage(request, asPage: true) }
        router.get("/.inspect/coverage.json") { request, _ in await self.coverage(request, asPage: false) }
        router.get("/.inspect/databases.json") { request, _ in await self.databases(request) }
    }

    func coverage(_ request: Request, asPage: Bool) async -> Response {
        guard emulatorMode else {
            return RESTError(.notFound, "Rules coverage is counted only in emulator mode (hearth serve --emulator)").errorResponse()
        }
        do {
            let parameters = try RESTParameters(query: request.uri.query ?? "")
            let namespace = rest.namespace(of: request, parameters)
            guard let database = try await registry.existingDatabase(namespace) else {
                return RESTError(.notFound, "No database is named \(namespace) yet; its rules are counted once it is used").errorResponse()
            }
            let rules = database.rules
            guard let coverage = rules.coverage else {
                return RESTError(.notFound, "This database's rules are not being counted").errorResponse()
            }
            let report = coverage.report(of: rules)
            if asPage { return Self.page(RulesCoveragePage.html(report, namespace: namespace)) }
            return Self.json(Self.coverageJSON(report, namespace: namespace))
        } catch {
            return RESTError.from(error).errorResponse()
        }
    }

    /// `{"namespace", "rules": [{"rule", "expression", "line", "column", "evaluations", "allowed",
    /// "denied"}, …]}`, the rules in the order of the source.
    static func coverageJSON(_ report: RulesCoverageReport, namespace: String) -> JSONValue {
        .object([
            ("namespace", .string(namespace)),
            ("rules", .array(report.rules.map { rule in
                .object([
                    ("rule", .string(rule.rule)), ("expression", .string(rule.expression)),
                    ("line", .number(Double(rule.line))), ("column", .number(Double(rule.column))),
                    ("evaluations", .number(Double(rule.counts.evaluations))),
                    ("allowed", .number(Double(rule.counts.allowed))), ("denied", .number(Double(rule.counts.denied))),
                ])
            })),
        ])
    }

    func databases(_ request: Request) async -> Response {
        do {
            if !emulatorMode {
                let parameters = try RESTParameters(query: request.uri.query ?? "")
                let bearer = Authenticator.bearerToken(request.headers.value(of: .authorization))
                guard try rest.authenticator.authentication(bearer: bearer, parameters: parameters).identity.isAdmin else {
                    throw RESTError.permissionDenied()
                }
            }
            let names = try await registry.namespaces()
            return Self.json(.array(names.map { .object([("name", .string($0))]) }))
        } catch {
            return RESTError.from(error).errorResponse()
        }
    }

    static func json(_ value: JSONValue) -> Response {
        var headers = RESTController.jsonHeaders
        let body = ByteBuffer(string: value.jsonText)
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    static func page(_ html: String) -> Response {
        let body = ByteBuffer(string: html)
        let headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-cache",
            // The page runs no script; it loads only Hearth's stylesheet and icon.
            .contentSecurityPolicy: "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'", HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            .contentLength: String(body.readableBytes),
        ]
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}
