import Hummingbird
import Synchronization

/// Logs every HTTP request into the server's activity (method, path without its query, status,
/// duration). Handlers that know more — the database API knows the namespace and whether the request
/// read, wrote or was refused by the rules — say so through ``RequestNote/current``.
///
/// It wraps the router (``DatabaseShortcutResponder``), so it sees every request the router answers;
/// the database's shortcut past the router records its requests itself.
struct ActivityMiddleware<Context: RequestContext>: RouterMiddleware {
    let activity: ServerActivity

    /// The console's own polling, Prometheus scrapes and the long-polling transport's polls would drown
    /// the log: they are not logged (the requests a poll carries are, as the WebSocket's are). Nor are
    /// health and readiness probes.
    static func isQuiet(_ path: String) -> Bool {
        path == "/.console/activity" || path == "/metrics" || path == "/.lp" || path == "/healthz" || path == "/readyz"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard !Self.isQuiet(path) else { return try await next(request, context) }
        let note = RequestNote()
        let started = ContinuousClock.now
        do {
            let response = try await RequestNote.$current.withValue(note) { try await next(request, context) }
            record(request, path: path, status: response.status.code, note: note, started: started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(request, path: path, status: status, note: note, started: started)
            throw error
        }
    }

    private func record(_ request: Request, path: String, status: Int, note: RequestNote, started: ContinuousClock.Instant) {
        let (namespace, kind) = note.state.withLock { ($0.namespace, $0.kind) }
        activity.record(.http(request, path: path, status: status, started: started, namespace: namespace, kind: kind))
    }
}

/// What a handler tells the activity log about the request it is answering.
final class RequestNote: Sendable {
    struct State {
        var namespace: String?
        var kind: RequestRecord.Kind = .other
    }

    let state = Mutex(State())

    /// The note of the HTTP request being handled by this task, if the activity middleware runs.
    @TaskLocal static var current: RequestNote?

    /// Records what the request was to `namespace`.
    func mark(_ namespace: String, _ kind: RequestRecord.Kind) {
        state.withLock { $0 = State(namespace: namespace, kind: kind) }
    }
}
