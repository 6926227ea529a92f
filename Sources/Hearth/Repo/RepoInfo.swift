import Foundation

/// Where a database lives: host, port, TLS and namespace, parsed from its URL as the official SDKs do.
///
/// For example:
/// ```swift
/// let info = try RepoInfo(url: "http://127.0.0.1:9000?ns=demo")
/// #expect(info.namespace == "demo" && info.port == 9000 && !info.secure)
/// ```
struct RepoInfo: Sendable, Hashable {
    var host: String
    var port: Int
    var secure: Bool
    var namespace: String

    init(host: String, port: Int, secure: Bool, namespace: String) {
        self.host = host
        self.port = port
        self.secure = secure
        self.namespace = namespace
    }

    init(url: String) throws(DatabaseError) {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw DatabaseError(.invalidData, "Invalid database URL \(url)")
        }
        let scheme = components.scheme?.lowercased() ?? "https"
        self.host = host
        self.secure = scheme == "https" || scheme == "wss"
        self.port = components.port ?? (secure ? 443 : 80)
        let labels = host.split(separator: ".")
        if let ns = components.queryItems?.first(where: { $0.name == "ns" })?.value, !ns.isEmpty {
            namespace = ns
        } else if labels.count >= 3, host.first?.isLetter == true {
            namespace = String(labels[0]).lowercased()
        } else {
            namespace = String(labels.first ?? "default")
        }
    }

    /// The database's URL, as `DatabaseReference.url` reports it.
    var baseURL: String {
        let scheme = secure ? "https" : "http"
        let defaultPort = secure ? 443 : 80
        let portText = port == defaultPort ? "" : ":\(port)"
        let labels = host.split(separator: ".")
        if labels.count >= 3, labels[0].lowercased() == namespace { return "\(scheme)://\(host)\(portText)" }
        return "\(scheme)://\(host)\(portText)"
    }

    /// A folder name for this database's persisted data: host, port and namespace.
    var storageName: String {
        "\(host)_\(port)_\(namespace)".map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" }.map(String.init).joined()
    }

    /// The `?ns=` suffix for hosts that do not carry the namespace.
    var namespaceQuery: String {
        let labels = host.split(separator: ".")
        if labels.count >= 3, labels[0].lowercased() == namespace { return "" }
        return "?ns=\(namespace)"
    }
}
