public import Dispatch
public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
public import Hearth
import HearthAccess
import HearthIdentity
import HearthServer
import HearthSQLite
import HearthStorage
import Hummingbird
import Synchronization
public import Testing

/// A Hearth server on a loopback port, in process, on in-memory storage, with the identity service
/// and an admin secret for REST calls that set rules and read what the server really holds. Shared by
/// the test targets of the SDK's upper layers (HearthStore, the reference apps' Swift cores). A
/// reference app's namespace gets the app's rules from the server itself, as with `hearth serve`.
///
/// For example:
/// ```swift
/// try await LoopbackServer.run(namespace: "posts") { server in
///     let client = try server.client()
///     try await server.put("posts/p1", json: #"{"title": "Hi"}"#)
/// }
/// ```
public struct LoopbackServer: Sendable {
    public static let adminSecret = "loopback-tests-admin-secret"

    public let port: Int
    public let namespace: String
    private let clients = Clients()
    public var url: String { "http://127.0.0.1:\(port)?ns=\(namespace)" }

    /// Runs `test` against a fresh server (emulator mode: open rules unless the namespace is an app's
    /// or a test sets some), in the caller's isolation (the main actor, for store and model tests).
    /// With `files`, the server also serves Firebase Storage's API, on a temporary directory removed
    /// afterwards (open until a test sets storage rules, as in emulator mode).
    public static func run(
        namespace: String, enforceIndexes: Bool = true, files: Bool = false, isolation: isolated (any Actor)? = #isolation,
        _ test: (LoopbackServer) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration()
        // Test clients reuse kept-alive connections across gaps that a starved machine stretches past any
        // short timeout, and a close racing a reuse fails the request: only RequestLimitTests tests the timeout.
        configuration.requestReadTimeout = .seconds(600)
        configuration.emulatorMode = true
        configuration.enforceIndexes = enforceIndexes
        // Cheap password hashes: full-cost ones queue on two niced threads behind other suites' and, on a
        // loaded 2-core machine, outlast the test client's fixed 20 s (docs/testing.md).
        configuration.identity.passwordHashing = .fastForTests
        configuration.port = 0
        let filesDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-loopback-files-\(UUID().uuidString)")
        var fileStorage: FileStorage?
        if files {
            try FileManager.default.createDirectory(at: filesDirectory, withIntermediateDirectories: true)
            fileStorage = FileStorage(
                directory: filesDirectory.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: filesDirectory)
            )
        }
        defer { if files { try? FileManager.default.removeItem(at: filesDirectory) } }
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = try await buildApplication(
            configuration: configuration, storage: InMemoryStorage(), adminSecret: AdminSecret(hashing: adminSecret),
            tokens: TokenSigner.generate(), files: fileStorage, onServerRunning: { port in portContinuation.yield(port) }
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CancellationError() }
            let server = LoopbackServer(port: port, namespace: namespace)
            // Clients stop before the server, so none keeps reconnecting to a closed port.
            do {
                try await test(server)
            } catch {
                server.clients.closeAll()
                group.cancelAll()
                throw error
            }
            server.clients.closeAll()
            group.cancelAll()
        }
    }

    /// An independent client (its own connection and cache) whose callbacks run on a private serial
    /// queue, as apps are told to configure it; taken offline when the test ends.
    public func client() throws -> Hearth.Database {
        let database = try Hearth.Database(url: url)
        database.callbackQueue = DispatchQueue(label: "\(namespace).test.callbacks")
        clients.add(database)
        return database
    }

    /// A new client, once it is connected: a `getData()` on a client still connecting fails after 3 s
    /// (as on iOS), which a loaded machine can exceed. Throws after 30 s without a connection.
    public func connectedClient() async throws -> Hearth.Database {
        let database = try client()
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for try await snapshot in database.reference(withPath: ".info/connected").events(.value) where snapshot.value as? Bool == true {
                    return true
                }
                return false
            }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                return false
            }
            let connected = try await group.next() ?? false
            group.cancelAll()
            guard connected else { throw NotConnected() }
        }
        return database
    }

    struct NotConnected: Error, CustomStringConvertible {
        var description: String { "the client did not connect to the test server within 30 s" }
    }

    /// Replaces the namespace's database rules through REST, as the admin.
    public func setRules(_ rules: String) async throws {
        let reply = try await rest("PUT", "/.settings/rules.json", body: rules)
        #expect(reply == #"{"status":"ok"}"#)
    }

    /// Replaces the server's storage rules (one ruleset for every bucket), as the admin.
    public func setStorageRules(_ rules: String) async throws {
        _ = try await rest("PUT", "/.settings/storage.rules", body: rules)
    }

    /// Writes `json` at `path` through REST as the admin (past the rules, as a hand edit would).
    public func put(_ path: String, json: String) async throws {
        _ = try await rest("PUT", "/\(path).json", body: json)
    }

    /// The JSON the server holds at `path`, read through REST as the admin.
    public func json(at path: String) async throws -> String {
        try await rest("GET", "/\(path).json", body: nil)
    }

    /// The value the server holds at `path`, parsed.
    public func value(at path: String) async throws -> Any? {
        let text = try await json(at: path)
        return try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as Any?
    }

    /// The JSON the server holds at `path`, with sorted keys, for exact comparisons.
    public func canonicalJSON(at path: String) async throws -> String {
        let value = try await value(at: path) ?? NSNull()
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    private func rest(_ method: String, _ location: String, body: String?) async throws -> String {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(location)?ns=\(namespace)")!)
        request.httpMethod = method
        request.setValue("Bearer \(Self.adminSecret)", forHTTPHeaderField: "Authorization")
        request.httpBody = body.map { Data($0.utf8) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let text = String(decoding: data, as: UTF8.self)
        guard status == 200 else { throw RESTFailure(status: status, body: text) }
        return text
    }
}

/// The clients a test made, to take offline when it ends.
private final class Clients: Sendable {
    private let all = Mutex<[Hearth.Database]>([])

    func add(_ database: Hearth.Database) { all.withLock { $0.append(database) } }

    func closeAll() {
        for database in all.withLock({ $0 }) { database.goOffline() }
    }
}

/// A REST call the server refused.
public struct RESTFailure: Error, CustomStringConvertible {
    public let status: Int
    public let body: String
    public var description: String { "HTTP \(status): \(body)" }
}

/// Waits until `condition` holds; records an issue after a generous deadline (30 s: it only
/// matters when something is broken, and a loaded machine must not trip it).
public func waitUntil(
    isolation: isolated (any Actor)? = #isolation,
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async {
    let deadline = Date().addingTimeInterval(30)
    while !condition() {
        if Date() > deadline {
            Issue.record("not within 30 s: \(what)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(5))
    }
}
