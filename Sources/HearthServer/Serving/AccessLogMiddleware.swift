import HearthAccess
import HearthFiles
import Hummingbird
import Logging
import Synchronization

/// One log line per HTTP request (`--access-log`): method, path, status, duration, bytes sent and
/// the client's address, logged when the response body has been sent.
///
/// It never logs a credential or a value: the query is reduced to its parameter names, but for a few
/// that only select a format (``keptQueryValues``); headers and bodies are not logged.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger
    /// The file service's hand-off: a download sent as a file region writes a token for its bytes.
    var fileRegions: FileRegionDownloads? = nil

    /// The label of the access log's lines, so collectors can tell them from the rest.
    static var label: String { "hearth.access" }

    /// Query parameters whose values say how to answer, never who asks or what is stored.
    static var keptQueryValues: Set<Substring> { ["ns", "v", "format", "print", "shallow", "alt", "uploadType"] }

    /// `name=value` for the kept parameters, `name=…` for the rest, in the order sent.
    static func redactedQuery(_ query: Substring) -> String {
        query.split(separator: "&").map { pair in
            let name = pair.split(separator: "=", maxSplits: 1).first ?? ""
            return keptQueryValues.contains(name) ? String(pair) : "\(name)=…"
        }.joined(separator: "&")
    }

    final class ByteCount: Sendable {
        let value = Atomic(0)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // After RequestClientMiddleware: the address it settled on (X-Forwarded-For when trusted).
        let entry = AccessLogEntry(
            method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "", client: RequestClient.current?.address
        )
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            entry.log(status: 500, bytes: 0, to: logger)
            throw error
        }
        let body = response.body
        let status = response.status.code
        let sent = ByteCount()
        let logger = self.logger
        let fileRegions = self.fileRegions
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            let counting = writer.map { buffer in
                // A download sent as a file region writes a token for its bytes.
                sent.value.add(fileRegions?.byteCount(ofToken: buffer) ?? buffer.readableBytes, ordering: .relaxed)
                return buffer
            }
            defer { entry.log(status: status, bytes: sent.value.load(ordering: .relaxed), to: logger) }
            try await body.write(counting)
        }
        return response
    }
}

/// What the access log says of one request (or WebSocket connection), taken when it arrives and
/// logged when its answer has been sent.
struct AccessLogEntry: Sendable {
    var method: String
    var path: String
    /// Redacted: see ``AccessLogMiddleware/redactedQuery(_:)``.
    var query: String
    var client: String
    var started = ContinuousClock.now

    init(method: String, path: String, query: String, client: String?) {
        self.method = method
        self.path = path
        self.query = AccessLogMiddleware<HearthRequestContext>.redactedQuery(Substring(query))
        self.client = client ?? "-"
    }

    func log(status: Int, bytes: Int, to logger: Logger) {
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var metadata: Logger.Metadata = [
            "method": "\(method)", "path": "\(path)", "status": "\(status)",
            "duration_ms": "\((milliseconds * 10).rounded() / 10)", "bytes": "\(bytes)", "client": "\(client)",
        ]
        if !query.isEmpty { metadata["query"] = "\(query)" }
        logger.info("request", metadata: metadata)
    }
}
