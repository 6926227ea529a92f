import Foundation
import HearthCore
import HearthStorage

/// Where a PostgreSQL server is and how to log in, parsed from a connection URL
/// (`postgres://user:password@host:port/database?sslmode=disable|prefer|require`).
///
/// Its description never contains the password.
///
/// For example:
/// ```swift
/// let endpoint = try PostgresEndpoint(url: "postgres://hearth@127.0.0.1:5432/hearth")
/// // endpoint.description == "hearth@127.0.0.1:5432/hearth"
/// ```
public struct PostgresEndpoint: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    /// - Throws: ``DatabaseStorageError`` `.unavailable` with what is wrong in the URL (never the password).
    public init(url: String) throws {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
        else {
            throw DatabaseStorageError(.unavailable, "The PostgreSQL URL must look like postgres://user@host:5432/database")
        }
        guard let host = components.host, !host.isEmpty else {
            throw DatabaseStorageError(.unavailable, "The PostgreSQL URL has no host; write it as postgres://user@host:5432/database")
        }
        self.host = host
        port = components.port ?? 5432
        username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        password = components.password.flatMap { $0.removingPercentEncoding }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? username : (path.removingPercentEncoding ?? path)
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        switch mode {
        case "disable": tls = .disable
        case "allow", "prefer": tls = .prefer
        case "require", "verify-ca", "verify-full": tls = .require
        default:
            throw DatabaseStorageError(.unavailable, "Unknown sslmode \(mode) in the PostgreSQL URL; use disable, prefer or require")
        }
    }

    /// The same server and login, another database.
    public func with(database: String) -> PostgresEndpoint {
        var copy = self
        copy.database = database
        return copy
    }

    /// The URL, password included: for handing to another process only, never for logs.
    public var url: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.user = username
        components.password = password
        components.host = host
        components.port = port
        components.path = "/" + database
        if tls != .prefer { components.queryItems = [URLQueryItem(name: "sslmode", value: tls.rawValue)] }
        return components.string ?? "postgres://\(username)@\(host):\(port)/\(database)"
    }

    public var description: String { "\(username)@\(host):\(port)/\(database)" }

    /// A URL as it may appear in logs and messages: without its password, or a placeholder if it does not parse.
    public static func redacted(_ url: String) -> String {
        (try? PostgresEndpoint(url: url))?.description ?? "(an unreadable URL)"
    }
}
