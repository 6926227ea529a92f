import Foundation
import HTTPTypes
import Hummingbird

/// The client of the HTTP request this task is serving: its address and the server's
/// ``AdminSecretGuard``, so every surface that accepts the admin secret counts wrong guesses per
/// address without each handler passing the address along. Set by ``RequestClientMiddleware`` for
/// HTTP requests, and by a realtime session around its `auth` messages (WebSocket and long polling).
///
/// For example:
/// ```swift
/// if let client = RequestClient.current, client.adminSecretGuard.isLocked(client.address) { … }
/// ```
struct RequestClient: Sendable {
    /// The client's IP address (see ``address(of:remote:trustForwardedFor:)``); nil when unknown.
    var address: String?
    var adminSecretGuard: AdminSecretGuard

    @TaskLocal static var current: RequestClient?

    /// The client's IP address: the connection's peer, or with `trustForwardedFor` the last
    /// `X-Forwarded-For` entry (the one the proxy in front appended; earlier ones come from the client
    /// and could be anything).
    static func address(of request: Request, remote: String?, trustForwardedFor: Bool) -> String? {
        if trustForwardedFor, let forwarded = lastForwardedAddress(request.headers[values: forwardedFor]) { return forwarded }
        return remote
    }

    static let forwardedFor = HTTPField.Name("x-forwarded-for")!

    /// The last address of one or more `X-Forwarded-For` fields (`client, proxy1, proxy2`), or nil when empty.
    static func lastForwardedAddress(_ fields: [String]) -> String? {
        let entries = fields.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return entries.last
    }

    /// Compares a credential with the admin secret for the current client: through its guard during
    /// an HTTP request, else directly (never locked).
    static func checkAdminSecret(_ candidate: String, against secret: AdminSecret) -> AdminSecretGuard.Verdict {
        guard let client = current else { return secret.verify(candidate) ? .admin : .notAdmin }
        return client.adminSecretGuard.check(candidate, against: secret, from: client.address)
    }
}

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
