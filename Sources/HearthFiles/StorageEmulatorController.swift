import HearthAccess
import HearthCore
import HearthRules
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The Storage emulator's control endpoints, served in emulator mode only, with no credentials (as
/// the emulator serves them): what `@firebase/rules-unit-testing` and the Emulator Suite's tools call
/// (docs/specs/emulator-suite.md §3.1).
///
/// - `PUT /internal/setRules` with `{"rules": {"files": [{"name": "storage.rules", "content": "…"}]}}`
///   replaces the storage rules: 200 `{"message": "Rules updated successfully"}`; rules that do not
///   compile answer 400 with the emulator's message and, beyond it, every diagnostic under `issues`,
///   and the rules in force stay (the emulator drops them; keeping them is safer).
/// - `POST /internal/reset` drops every object, bucket and unfinished upload; the rules stay.
///
/// For example:
/// ```sh
/// curl -X PUT http://127.0.0.1:9199/internal/setRules -H 'Content-Type: application/json' \
///   -d '{"rules": {"files": [{"name": "storage.rules", "content": "rules_version = \"2\"; …"}]}}'
/// ```
package struct StorageEmulatorController: Sendable {
    let files: FileService
    let logger: Logger

    package init(files: FileService, logger: Logger) {
        self.files = files
        self.logger = logger
    }

    package func register(on router: Router<HearthRequestContext>) {
        // With CORS, as the emulator (rules-unit-testing may run in a browser, e.g. under Karma).
        router.put("/internal/setRules") { request, _ in Self.withCORS(await self.setRules(request), for: request) }
        router.post("/internal/reset") { request, _ in Self.withCORS(await self.reset(), for: request) }
        for path in ["/internal/setRules", "/internal/reset"] {
            router.on(RouterPath(path), method: .options) { request, _ in FilesHTTP.preflight(request) }
        }
    }

    func setRules(_ request: Request) async -> Response {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: 4 << 20)
        } catch {
            return Self.message("Rules are limited to 4 MiB.", status: 413)
        }
        let ruleFiles: [JSONValue]
        switch RulesFiles.parse(body) {
        case .failure(let problem): return Self.message(problem.message, status: 400)
        case .success(let parsed): ruleFiles = parsed
        }
        let contents = ruleFiles.compactMap { $0["content"]?.stringValue }
        // Hearth keeps one set of storage rules for every bucket: several files must agree.
        guard Set(contents).count == 1, let source = contents.first else {
            return Self.message(
                "Hearth applies one set of storage rules to every bucket: give one file, or the same rules for every bucket", status: 400
            )
        }
        let name = ruleFiles.first?["name"]?.stringValue ?? "storage.rules"
        do throws(RulesError) {
            _ = try await files.setRules(source)
        } catch {
            for diagnostic in error.diagnostics {
                logger.warning("Storage rules not loaded: \(name):\(diagnostic.line):\(diagnostic.column): \(diagnostic.message)")
            }
            let issues: [JSONValue] = error.diagnostics.map { diagnostic in
                .object([
                    ("file", .string(name)), ("line", .number(Double(diagnostic.line))), ("column", .number(Double(diagnostic.column))),
                    ("message", .string(diagnostic.message)),
                ])
            }
            return FilesHTTP.json(
                .object([("message", .string("There was an error updating rules, see logs for more details")), ("issues", .array(issues))]),
                status: 400
            )
        }
        logger.info("Storage rules loaded from \(name) (PUT /internal/setRules)")
        return Self.message("Rules updated successfully", status: 200)
    }

    func reset() async -> Response {
        do {
            try await files.reset()
        } catch {
            logger.error("The storage reset failed", metadata: ["hearth.error": "\(error)"])
            return Response(status: .internalServerError, body: ResponseBody(byteBuffer: ByteBuffer(string: "The reset failed: \(error)")))
        }
        return Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: "OK")))
    }

    static func withCORS(_ response: Response, for request: Request) -> Response {
        var response = response
        FilesHTTP.addCORS(&response, origin: request.headers[.origin])
        return response
    }

    static func message(_ text: String, status: Int) -> Response {
        FilesHTTP.json(.object([("message", .string(text))]), status: status)
    }

    /// The `rules.files` array of a setRules body, checked as the emulator checks it.
    enum RulesFiles {
        struct Problem: Error {
            var message: String
        }

        static func parse(_ body: ByteBuffer) -> Result<[JSONValue], Problem> {
            guard let json = try? JSONValue(parsing: String(buffer: body)), case .array(let files)? = json["rules"]?["files"], !files.isEmpty
            else {
                return .failure(Problem(message: "Request body must include 'rules.files' array"))
            }
            let complete = { (file: JSONValue) in file["name"]?.stringValue != nil && file["content"]?.stringValue != nil }
            if files.count == 1 {
                guard complete(files[0]) else {
                    return .failure(Problem(message: "Each member of 'rules.files' array must contain 'name' and 'content'"))
                }
            } else {
                guard files.allSatisfy({ complete($0) && $0["resource"]?.stringValue != nil }) else {
                    return .failure(Problem(message: "Each member of 'rules.files' array must contain 'name', 'content', and 'resource'"))
                }
            }
            return .success(files)
        }
    }
}
