import HearthAccess
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
        let started = ContinuousClock.now
        // After RequestClientMiddleware: the address it settled on (X-Forwarded-For when trusted).
        let client = RequestClient.current?.address ?? "-"
        let line = Line(
            method: request.method.rawValue, path: request.uri.path, query: Self.redactedQuery(request.uri.query.map { Substring($0) } ?? ""),
            client: client
        )
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            log(line, status: 500, bytes: 0, started: started)
            throw error
        }
        let body = response.body
        let status = response.status.code
        let sent = ByteCount()
        let logger = self.logger
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            let counting = writer.map { buffer in
                sent.value.add(buffer.readableBytes, ordering: .relaxed)
                return buffer
            }
            defer { Self.log(line, status: status, bytes: sent.value.load(ordering: .relaxed), started: started, logger: logger) }
            try await body.write(counting)
        }
        return response
    }

    struct Line: Sendable {
        var method: String
        var path: String
        var query: String
        var client: String
    }

    private func log(_ line: Line, status: Int, bytes: Int, started: ContinuousClock.Instant) {
        Self.log(line, status: status, bytes: bytes, started: started, logger: logger)
    }

    static func log(_ line: Line, status: Int, bytes: Int, started: ContinuousClock.Instant, logger: Logger) {
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var metadata: Logger.Metadata = [
            "method": "\(line.method)", "path": "\(line.path)", "status": "\(status)",
            "duration_ms": "\((milliseconds * 10).rounded() / 10)", "bytes": "\(bytes)", "client": "\(line.client)",
        ]
        if !line.query.isEmpty { metadata["query"] = "\(line.query)" }
        logger.info("request", metadata: metadata)
    }
}
