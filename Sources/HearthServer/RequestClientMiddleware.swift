import HearthAccess
import HearthIdentity
import Hummingbird

/// Sets ``RequestClient/current`` for every request: its address (honouring
/// ``IdentityConfiguration/trustForwardedFor``) and the server's admin-secret guard.
struct RequestClientMiddleware: RouterMiddleware {
    typealias Context = HearthRequestContext
    let trustForwardedFor: Bool
    let adminSecretGuard: AdminSecretGuard

    init(configuration: ServerConfiguration, adminSecretGuard: AdminSecretGuard) {
        trustForwardedFor = configuration.identity.trustForwardedFor
        self.adminSecretGuard = adminSecretGuard
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let address = RequestClient.address(of: request, remote: context.remoteAddress?.ipAddress, trustForwardedFor: trustForwardedFor)
        let client = RequestClient(address: address, adminSecretGuard: adminSecretGuard)
        return try await RequestClient.$current.withValue(client) { try await next(request, context) }
    }
}
