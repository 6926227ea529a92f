import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hearth
import HearthCore
import Hummingbird
@testable import HearthServer
import HearthStorage
import Synchronization
import Testing

/// A Hearth server on a loopback port, in process, on in-memory storage, with the identity service
/// and an admin secret for REST calls that set rules and read what the server really holds.
struct TestServer: Sendable {
    static let adminSecret = "hearthstore-tests-admin-secret"

    let port: Int
    private let clients = Clients()
    var url: String { "http://127.0.0.1:\(port)?ns=demo" }

    /// Runs `test` against a fresh server (open rules until a test sets some), in the caller's
    /// isolation (the main actor, for store tests).
    static func run(isolation: isolated (any Actor)? = #isolation, _ test: (TestServer) async throws -> Void) async throws {
        var configuration = ServerConfiguration()
        configuration.emulatorMode = true
        configuration.port = 0
        configuration.enforceIndexes = false
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

    /// An independent client (its own connection and cache) whose callbacks run on a private serial
    /// queue, as apps are told to configure it.
    func client() throws -> Hearth.Database {
        let database = try Hearth.Database(url: url)
        database.callbackQueue = DispatchQueue(label: "hearthstore.test.callbacks")
        clients.add(database)
        return database
    }

    /// Replaces the database rules through the REST API, as the admin.
    func setRules(_ rules: String) async throws {
        let reply = try await rest("PUT", "/.settings/rules.json", body: rules)
        #expect(reply == #"{"status":"ok"}"#)
    }

    /// The JSON the server holds at `path`, read through the REST API as the admin.
    func json(at path: String) async throws -> String {
        try await rest("GET", "/\(path).json", body: nil)
    }

    /// The value the server holds at `path`, parsed.
    func value(at path: String) async throws -> Any? {
        let text = try await json(at: path)
        return try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as Any?
    }

    private func rest(_ method: String, _ path: String, body: String?) async throws -> String {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)?ns=demo")!)
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
