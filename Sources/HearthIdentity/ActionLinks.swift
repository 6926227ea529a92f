import Foundation
import HearthAccess
import Synchronization

/// Where the links in account emails point, and where their `continueUrl` may lead.
///
/// The origin comes from configuration, never from a request: ``IdentityConfiguration/publicURL``
/// when set, else the address the server listens on (`http://<host>:<port>`, with a wildcard host —
/// `0.0.0.0`, `::` — replaced by `127.0.0.1`, which only works on the server's machine: `hearth serve`
/// warns about that). A client's `Host` or `X-Forwarded-Host` cannot move a password-reset link to
/// an attacker's server.
///
/// A `continueUrl` must be http or https on an authorized domain (Firebase's rule): `localhost`,
/// `127.0.0.1`, the links' own host, and ``IdentityConfiguration/authorizedDomains``. A domain admits
/// its subdomains; an IP address only itself; any port.
///
/// For example:
/// ```swift
/// let links = ActionLinks(
///     publicURL: "https://hearth.example.com", host: "0.0.0.0", port: 9000, authorizedDomains: ["app.example.com"]
/// )
/// links.origin                                             // "https://hearth.example.com"
/// links.check(continueURL: "https://shop.app.example.com/done")  // .authorized
/// ```
public final class ActionLinks: Sendable {
    /// The configured public origin, normalized; nil when links use the listening address.
    let publicOrigin: String?
    let listeningHost: String
    /// `https` when the server serves TLS itself, else `http`.
    let listeningScheme: String
    private let listeningPort: Atomic<Int>
    let configuredDomains: [String]

    package init(publicURL: String?, host: String, port: Int, secure: Bool = false, authorizedDomains: [String]) {
        publicOrigin = publicURL.flatMap { try? Self.validatedOrigin($0) }
        listeningHost = host
        listeningScheme = secure ? "https" : "http"
        listeningPort = Atomic(port)
        configuredDomains = authorizedDomains.compactMap(Self.normalizedDomain)
    }

    /// The port the server turned out to listen on (for `--port 0`).
    package func listening(on port: Int) {
        listeningPort.store(port, ordering: .relaxed)
    }

    /// The origin of every link: `scheme://host[:port]`, no trailing slash.
    var origin: String {
        publicOrigin ?? Self.listeningOrigin(host: listeningHost, port: listeningPort.load(ordering: .relaxed), scheme: listeningScheme)
    }

    /// Every domain a `continueUrl` may point at, without duplicates, in a stable order.
    var authorizedDomains: [String] {
        var domains = ["localhost", "127.0.0.1"]
        if let host = URLComponents(string: origin)?.host.map(Self.bareHost) { domains.append(host) }
        domains += configuredDomains
        var seen = Set<String>()
        return domains.filter { seen.insert($0).inserted }
    }

    enum ContinueURLCheck: Equatable {
        case authorized
        /// Not an absolute http or https URL with a host.
        case invalid
        /// On a domain that is not authorized.
        case unauthorized
    }

    /// Whether a `continueUrl` may be put in a link and followed by the action page.
    func check(continueURL: String) -> ContinueURLCheck {
        guard let components = URLComponents(string: continueURL), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let rawHost = components.host, !rawHost.isEmpty
        else { return .invalid }
        // Credentials in the URL are where parsers disagree about the host: never followed.
        guard components.user == nil, components.password == nil else { return .unauthorized }
        let host = Self.bareHost(rawHost)
        let isIP = Self.isIPAddress(host)
        let allowed = authorizedDomains.contains { domain in
            host == domain || (!isIP && !Self.isIPAddress(domain) && host.hasSuffix("." + domain))
        }
        return allowed ? .authorized : .unauthorized
    }

    // MARK: Configuration

    /// A `--public-url` as an origin (`https://hearth.example.com[:port]`, lowercased, no trailing
    /// slash), or an error that says what is wrong with it.
    public static func validatedOrigin(_ text: String) throws -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else { throw InvalidPublicURL(text: text, problem: "it is not an absolute URL with a host") }
        guard scheme == "http" || scheme == "https" else { throw InvalidPublicURL(text: text, problem: "only http and https are allowed") }
        guard components.user == nil, components.password == nil else { throw InvalidPublicURL(text: text, problem: "it has a user name or password") }
        guard components.path.isEmpty || components.path == "/" else {
            throw InvalidPublicURL(text: text, problem: "it has a path (the action page is always at /__/auth/action)")
        }
        guard components.query == nil, components.fragment == nil else { throw InvalidPublicURL(text: text, problem: "it has a query or fragment") }
        return "\(scheme)://\(urlHost(bareHost(host)))" + (components.port.map { ":\($0)" } ?? "")
    }

    /// Whether `host` listens on every interface (`0.0.0.0`, `::`): links then point at `127.0.0.1`.
    public static func isWildcard(_ host: String) -> Bool {
        let bare = bareHost(host)
        return bare.isEmpty || bare == "0.0.0.0" || bare == "::" || bare == "0:0:0:0:0:0:0:0"
    }

    /// The links' origin without a public URL: `http://<host>:<port>` (`https` when the server serves
    /// TLS), a wildcard host as `127.0.0.1`.
    public static func listeningOrigin(host: String, port: Int, scheme: String = "http") -> String {
        let bare = isWildcard(host) ? "127.0.0.1" : bareHost(host)
        return "\(scheme)://\(urlHost(bare)):\(port)"
    }

    /// `--authorized-domain` values: a host name or IP address, lowercased; a scheme, port or path
    /// given by mistake is dropped (`https://app.example.com/` → `app.example.com`).
    static func normalizedDomain(_ text: String) -> String? {
        var domain = text.trimmingCharacters(in: .whitespaces).lowercased()
        if domain.contains("://"), let host = URLComponents(string: domain)?.host { domain = host }
        domain = bareHost(domain)
        if !isIPAddress(domain), let colon = domain.firstIndex(of: ":") { domain = String(domain[..<colon]) }
        if let slash = domain.firstIndex(of: "/") { domain = String(domain[..<slash]) }
        while domain.hasPrefix(".") { domain.removeFirst() }
        return domain.isEmpty ? nil : domain
    }

    /// A host lowercased and without IPv6 brackets.
    static func bareHost(_ host: String) -> String {
        var bare = host.lowercased()
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        return bare
    }

    /// A host as it goes in a URL: IPv6 addresses in brackets.
    static func urlHost(_ bare: String) -> String {
        bare.contains(":") ? "[\(bare)]" : bare
    }

    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }
}

/// A `--public-url` (or `HEARTH_PUBLIC_URL`) that is not an http or https origin.
public struct InvalidPublicURL: Error, CustomStringConvertible, Sendable {
    public var text: String
    public var problem: String

    public var description: String {
        "'\(text)' is not an http or https origin such as https://hearth.example.com: \(problem)"
    }
}
