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

    /// The IP address of the last entry of one or more `X-Forwarded-For` fields (`client, proxy1,
    /// proxy2`), without a port some proxies append (`203.0.113.7:51234`, `[2001:db8::1]:51234`); nil
    /// when there is none or it is not an IP address, so the caller falls back to the connection's
    /// peer. A port kept in the address would give each new connection a count of its own.
    package static func lastForwardedAddress(_ fields: [String]) -> String? {
        let entries = fields.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return entries.last.flatMap(IPAddressText.address(in:))
    }

    /// The key a client address is counted under: an IPv6 address by its /64 (one client usually holds
    /// a whole /64, so counting single addresses would let it spread its attempts), an address with a
    /// port without it; connections without an address (in-process tests) share one.
    package static func addressKey(_ address: String?) -> String {
        guard let address else { return "unknown" }
        let plain = IPAddressText.address(in: address) ?? address
        guard plain.utf8.contains(UInt8(ascii: ":")), let bytes = IPv6Address.parse(plain) else { return plain }
        if let v4 = IPv6Address.mappedIPv4(bytes) { return v4 }
        return bytes.prefix(8).map { String(format: "%02x", $0) }.joined() + "::/64"
    }

    /// Compares a credential with the admin secret for the current client: through its guard during
    /// an HTTP request, else directly (never locked).
    package static func checkAdminSecret(_ candidate: String, against secret: AdminSecret) -> AdminSecretGuard.Verdict {
        guard let client = current else {
            return AdminSecretGuard.isSecretGuess(candidate) && secret.verify(candidate) ? .admin : .notAdmin
        }
        return client.adminSecretGuard.check(candidate, against: secret, from: client.address)
    }
}

/// An IP address as a forwarding proxy may write it, for ``RequestClient/lastForwardedAddress(_:)``.
///
/// For example:
/// ```swift
/// IPAddressText.address(in: "[2001:db8::1]:51234")  // "2001:db8::1"
/// IPAddressText.address(in: "203.0.113.7:51234")    // "203.0.113.7"
/// IPAddressText.address(in: "unknown")              // nil
/// ```
package enum IPAddressText {
    /// The address in `text`: IPv4 with or without `:port`; IPv6 plain, in brackets, or in brackets
    /// with `:port`, its `%zone` dropped. Nil when `text` is none of these.
    package static func address(in text: String) -> String? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || isPort(rest) else { return nil }
            return ipv6(text[text.index(after: text.startIndex)..<close])
        }
        let colons = text.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: ":") ? 1 : 0) }
        if colons == 1, let colon = text.firstIndex(of: ":") {
            guard isPort(text[colon...]) else { return nil }
            return ipv4(text[..<colon])
        }
        return colons == 0 ? ipv4(text[...]) : ipv6(text[...])
    }

    /// `:` and 1–5 digits.
    static func isPort(_ text: Substring) -> Bool {
        let digits = text.utf8.dropFirst()
        return text.utf8.first == UInt8(ascii: ":") && (1...5).contains(digits.count)
            && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    static func ipv4(_ text: Substring) -> String? {
        var address = [UInt8](repeating: 0, count: 4)  // plain bytes, as for IPv6 below
        let parsed = address.withUnsafeMutableBytes { inet_pton(AF_INET, String(text), $0.baseAddress) }
        return parsed == 1 ? String(text) : nil
    }

    static func ipv6(_ text: Substring) -> String? {
        let address = text.firstIndex(of: "%").map { text[..<$0] } ?? text
        return IPv6Address.parse(String(address)) == nil ? nil : String(address)
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
