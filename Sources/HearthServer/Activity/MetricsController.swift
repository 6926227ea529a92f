import HearthAccess
import HearthCore
import HearthProtocol
import HearthStorage
import Prometheus
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /metrics`: the server's counters in Prometheus's text format, for the admin (the admin secret
/// or a console session as a Bearer token, or `?auth=`), so a scrape config needs
/// `authorization: {credentials: <secret>}`.
///
/// For example:
/// ```sh
/// curl -H "Authorization: Bearer $SECRET" http://127.0.0.1:9000/metrics
/// ```
struct MetricsController: Sendable {
    let activity: ServerActivity
    let sampler: ActivitySampler
    let authenticator: Authenticator

    func register(on router: Router<HearthRequestContext>) {
        router.get("/metrics") { request, _ in await self.metrics(request) }
    }

    func metrics(_ request: Request) async -> Response {
        let parameters = (try? RESTParameters(query: request.uri.query ?? "")) ?? RESTParameters()
        let identity: Identity?
        do {
            identity = try authenticator.identity(bearer: Authenticator.bearerToken(request.headers[.authorization]), parameters: parameters)
        } catch where error.status == .tooManyRequests {
            return Response(
                status: .tooManyRequests, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: Authenticator.tooManyGuessesMessage + "\n"))
            )
        } catch {
            identity = nil
        }
        guard identity?.isAdmin == true else {
            return Response(
                status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8", .wwwAuthenticate: "Bearer"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "The metrics need the admin secret as a Bearer token.\n"))
            )
        }
        let sample = await sampler.sample()
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: activity.metricsText(namespaces: sample.databases.map(\.namespace))))
        )
    }
}
