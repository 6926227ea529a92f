import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hearth
import Hummingbird
@testable import HearthServer
import HearthStorage
import Synchronization
import Testing

/// A Hearth server on a loopback port, in process, on in-memory storage — the same setup as
/// `HearthStoreTests`' helper, kept minimal, with the identity service (a token signer) for sign-up and log-in. The server installs the Posts app's rules in the
/// `posts` namespace itself (as `hearth serve` does), so these tests run against the real rules;
/// an admin secret lets a test write what the rules would refuse, through REST.
struct TestServer: Sendable {
    static let adminSecret = "posts-tests-admin-secret"

    let port: Int
    private let clients = Clients()
    var url: String { "http://127.0.0.1:\(port)?ns=posts" }

    /// Runs `test` against a fresh server, in the caller's isolation (the main actor for model tests).
    static func run(isolation: isolated (any Actor)? = #isolation, _ test: (TestServer) async throws -> Void) async throws {
        var configuration = ServerConfiguration()
        configuration.emulatorMode = true
        configuration.port = 0
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let (app, _, _) = try await makeApplication(
            configuration: configuration, storage: InMemoryStorage(), adminSecret: AdminSecret(hashing: adminSecret),
            tokens: TokenSigner.generate(),
            onServerRunning: { port in portContinuation.yield(port) }
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CancellationError() }
            let server = TestServer(port: port)
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

    /// An independent client (its own connection and cache), callbacks on a private serial queue.
    func database() throws -> Hearth.Database {
        let database = try Hearth.Database(url: url)
        database.callbackQueue = DispatchQueue(label: "posts.test.callbacks")
        clients.add(database)
        return database
    }

    /// Writes `json` at `path` through REST as the admin (past the rules, as a hand edit would).
    func put(_ path: String, json: String) async throws {
        _ = try await rest("PUT", path, body: json)
    }

    /// The value the server holds at `path`, parsed (read as the admin through REST).
    func value(at path: String) async throws -> Any? {
        let text = try await rest("GET", path, body: nil)
        return try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as Any?
    }

    /// The JSON the server holds at `path`, with sorted keys, for exact comparisons.
    func canonicalJSON(at path: String) async throws -> String {
        let value = try await value(at: path) ?? NSNull()
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    private func rest(_ method: String, _ path: String, body: String?) async throws -> String {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/\(path).json?ns=posts")!)
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

struct RESTFailure: Error, CustomStringConvertible {
    let status: Int
    let body: String
    var description: String { "HTTP \(status): \(body)" }
}

/// Waits until `condition` holds; records an issue after a generous deadline (30 s: it only
/// matters when something is broken, and a loaded machine must not trip it).
func waitUntil(
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
