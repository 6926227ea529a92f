import Foundation
import HearthCore
@testable import HearthServer
import HearthStorage
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Builds the real application on in-memory storage and runs a test against it in process.
struct TestServer {
    static let secret = "test-admin-secret"
    static let admin: HTTPFields = [.authorization: "Bearer \(secret)"]

    var configuration = ServerConfiguration()
    let tokens = TokenSigner.generate()

    init(emulator: Bool = false, configure: (inout ServerConfiguration) -> Void = { _ in }) {
        configuration.emulatorMode = emulator
        configuration.port = 0
        configure(&configuration)
    }

    func run(
        storage: any DatabaseStorage = InMemoryStorage(),
        _ test: @Sendable (any TestClientProtocol, DatabaseRegistry) async throws -> Void
    ) async throws {
        let (app, registry) = try await application(storage)
        try await app.test(.router) { client in try await test(client, registry) }
    }

    /// Runs the application on a real socket (WebSocket tests); the test gets the port.
    func runLive(
        storage: any DatabaseStorage = InMemoryStorage(),
        _ test: @Sendable (any TestClientProtocol, Int, DatabaseRegistry) async throws -> Void
    ) async throws {
        let (app, registry) = try await application(storage)
        try await app.test(.live) { client in try await test(client, client.port!, registry) }
    }

    private func application(_ storage: any DatabaseStorage) async throws -> (some ApplicationProtocol, DatabaseRegistry) {
        try await makeApplication(configuration: configuration, storage: storage, adminSecret: AdminSecret(hashing: TestServer.secret), tokens: tokens)
    }
}

/// A response reduced to what the tests look at.
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var body: String
    var headers: HTTPFields

    var etag: String? { headers[.eTag] }

    /// The body parsed as JSON.
    var json: JSONValue? { try? JSONValue(parsing: body) }

    /// The `error` member of a Firebase error body.
    var error: String? {
        if case .string(let message)? = json?["error"] { return message }
        return nil
    }
}

extension TestClientProtocol {
    @discardableResult
    func call(
        _ method: HTTPRequest.Method,
        _ uri: String,
        _ body: String? = nil,
        headers: HTTPFields = TestServer.admin
    ) async throws -> Reply {
        try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            Reply(status: response.status, body: String(buffer: response.body), headers: response.headers)
        }
    }
}

extension HTTPFields {
    static func admin(_ extra: [HTTPField.Name: String]) -> HTTPFields {
        var fields = TestServer.admin
        for (name, value) in extra { fields[name] = value }
        return fields
    }
}

/// Polls a condition for up to two seconds; for waiting on background registration, never for timing.
func eventually(_ condition: () async -> Bool) async throws {
    for _ in 0..<400 {
        if await condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    Issue.record("condition not met in time")
}
