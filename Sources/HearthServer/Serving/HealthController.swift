import HTTPTypes
import HearthAccess
import Hummingbird
import NIOCore

/// `GET /healthz` and `GET /readyz`, for load balancers, container runtimes and systemd: no
/// credentials, no data, never cached.
///
/// `/healthz` answers 200 `ok` while the process serves requests; `/readyz` answers 200 `ready`, or
/// 503 with why not (`starting`, `draining`, `unavailable`) — see ``ServerReadiness``.
struct HealthController {
    let readiness: ServerReadiness

    func register(on router: Router<HearthRequestContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/healthz", method: method) { _, _ in Self.answer(.ok, "ok") }
            router.on("/readyz", method: method) { _, _ in
                switch await readiness.check() {
                case .ready: Self.answer(.ok, "ready")
                case .notReady(let reason): Self.answer(.serviceUnavailable, reason)
                }
            }
        }
    }

    static func answer(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text + "\n"))
        )
    }
}
