import Foundation
import HTTPTypes
import Hummingbird

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The client of the HTTP request this task is serving: its address and the server's
/// ``AdminSecretGuard``, so every surface that accepts the admin secret counts wrong guesses per
/// address without each handler passing the address along. Set by ``RequestClientMiddleware`` for
/// HTTP requests, and by a realtime session around its `auth` messages (WebSocket and long polling).
///
/// For example:
/// ```swift
/// if let client = RequestClient.current, client.adminSecretGuard.isLocked(client.address) { … }
/// ```
package struct RequestClient: Sendable {
    /// The client's IP address (see ``address(of:remote:trustForwardedFor:)``); nil when unknown.
    package var address: String?
    package var adminSecretGuard: AdminSecretGuard

    package init(address: String?, adminSecretGuard: AdminSecretGuard) {
        self.address = address
        self.adminSecretGuard = adminSecretGuard
    }

    @TaskLocal package static var current: RequestClient?

    /// The client's IP address: the connection's peer, or with `trustForwardedFor` the last
    /// `X-Forwarded-For` entry (the one the proxy in front appended; earlier ones come from the client
    /// and could be anything).
    package static func address(of request: Request, remote: String?, trustForwardedFor: Bool) -> String? {
        if trustForwardedFor, let forwarded = lastForwardedAddress(request.headers[values: forwardedFor]) { return forwarded }
        return remote
    }

    package static let forwardedFor = HTTPField.Name("x-forwarded-for")!

    /// The last address of one or more `X-Forwarded-For` fields (`client, proxy1, proxy2`), or nil when empty.
    package static func lastForwardedAddress(_ fields: [String]) -> String? {
        let entries = fields.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return entries.last
    }

    /// The key a client address is counted under: an IPv6 address by its /64 (one client usually holds
    /// a whole /64, so counting single addresses would let it spread its attempts); connections
    /// without an address (in-process tests) share one.
    package static func addressKey(_ address: String?) -> String {
        guard let address else { return "unknown" }
        guard address.utf8.contains(UInt8(ascii: ":")), let bytes = IPv6Address.parse(address) else { return address }
        if let v4 = IPv6Address.mappedIPv4(bytes) { return v4 }
        return bytes.prefix(8).map { String(format: "%02x", $0) }.joined() + "::/64"
    }

    /// Compares a credential with the admin secret for the current client: through its guard during
    /// an HTTP request, else directly (never locked).
    package static func checkAdminSecret(_ candidate: String, against secret: AdminSecret) -> AdminSecretGuard.Verdict {
        guard let client = current else { return secret.verify(candidate) ? .admin : .notAdmin }
        return client.adminSecretGuard.check(candidate, against: secret, from: client.address)
    }
}

/// IPv6 addresses in text, for ``RequestClient/addressKey(_:)``.
package enum IPv6Address {
    /// The 16 bytes of an IPv6 address (brackets and a `%zone` allowed); nil if it is not one.
    package static func parse(_ text: String) -> [UInt8]? {
        var trimmed = text
        if trimmed.hasPrefix("["), trimmed.hasSuffix("]") { trimmed = String(trimmed.dropFirst().dropLast()) }
        if let zone = trimmed.firstIndex(of: "%") { trimmed = String(trimmed[..<zone]) }
        // Into 16 plain bytes, not an `in6_addr`: NIO's C module declares that struct too, and which of
        // the two a file's lookup finds varies with the module's other files (a fresh build refused it).
        var address = [UInt8](repeating: 0, count: 16)
        let parsed = address.withUnsafeMutableBytes { inet_pton(AF_INET6, trimmed, $0.baseAddress) }
        return parsed == 1 ? address : nil
    }

    /// `::ffff:a.b.c.d` (an IPv4 client on a dual-stack socket) as its IPv4 text.
    package static func mappedIPv4(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else { return nil }
        return bytes[12..<16].map(String.init).joined(separator: ".")
    }
}
