import Clocks
import Foundation
import HearthAccess
import HearthCore
import HearthEngine
import HearthRealtimeClient
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// Builds the real application on in-memory storage and runs a test against it in process.
///
/// The server runs on a clock the test drives (``clock``): its time stands still unless the test
/// advances it, so timeouts, keep-alives and token expiry happen exactly when a test says, never by
/// racing real time. Its wall time starts at the real time, so tokens minted with `Date()` are valid.
struct TestServer {
    static let secret = "test-admin-secret"
    static let admin: HTTPFields = [.authorization: "Bearer \(secret)"]

    var configuration = ServerConfiguration()
    let tokens = TokenSigner.generate()
    let clock = TestClock<Duration>()
    private let running = RunningServer()

    init(emulator: Bool = false, configure: (inout ServerConfiguration) -> Void = { _ in }) {
        // Test clients reuse kept-alive connections across gaps that a starved machine stretches past any
        // short timeout, and a close racing a reuse fails the request: only RequestLimitTests tests the timeout.
        configuration.requestReadTimeout = .seconds(600)
        configuration.emulatorMode = emulator
        configuration.port = 0
        configuration.clock = ServerClock(clock, wallMillisecondsAtStart: WallClock.milliseconds())
        if TestServer.servesFromFiles {
            // Over the limit at every check, checked after every batch: the tree is read again from the
            // file after every write, the hardest case for the file-backed engine.
            var limit = MemoryLimit(bytes: 0)
            limit.checkInterval = .zero
            configuration.memoryLimit = limit
        }
        configure(&configuration)
    }

    /// `HEARTH_TEST_MEMORY_LIMIT=1`: tests that use the default storage run on SQLite files with a
    /// memory limit instead of in memory, so the engine suites check the file-backed engine (decision 3
    /// of docs/decisions/0012-compact-tree-and-warm-start.md) gives exactly the same results.
    static let servesFromFiles = ProcessInfo.processInfo.environment["HEARTH_TEST_MEMORY_LIMIT"] == "1"

    /// The storage a test gets when it names none, and what to clean up after it.
    private static func defaultStorage() throws -> (storage: any DatabaseStorage, directory: URL?) {
        guard servesFromFiles else { return (InMemoryStorage(), nil) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-limited-\(UUID().uuidString)")
        // Every node of more than one leaf stays in the file, read a child at a time.
        return (try SQLiteStorage(directory: directory, wholeNodeRows: 2), directory)
    }

    /// The server's wall time now: mint tokens with it so their expiry is certain relative to the server.
    var wallDate: Date { configuration.clock.wallDate }

    /// The running server's WebSocket services (sessions, the idle reaper's progress).
    var realtime: RealtimeServices {
        get throws { try #require(running.state.withLock { $0 }?.realtime, "the server is not running") }
    }

    /// The running server's databases.
    var registry: DatabaseRegistry {
        get throws { try #require(running.state.withLock { $0 }?.registry, "the server is not running") }
    }

    /// Advances the server's clock to `elapsed` (plus a microsecond, so that a timer due exactly then
    /// fires even if it is scheduled after the advance).
    func advance(to elapsed: Duration) async {
        await clock.advance(to: .init(offset: elapsed + .microseconds(1)))
    }

    /// Advances the server's clock by `duration` (plus a microsecond, as ``advance(to:)``).
    func advance(by duration: Duration) async {
        await advance(to: TestClock<Duration>.Instant().duration(to: clock.now) + duration)
    }

    /// Waits until the idle reaper has swept at `elapsed` or later on the server's clock.
    func idleSweep(reaching elapsed: Duration) async throws {
        let realtime = try realtime
        let target = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
        try await eventually { realtime.lastIdleSweep.load(ordering: .acquiring) >= target }
    }

    func run(
        storage: (any DatabaseStorage)? = nil,
        _ test: @Sendable (any TestClientProtocol, DatabaseRegistry) async throws -> Void
    ) async throws {
        let (storage, scratch) = try storage.map { ($0, nil) } ?? TestServer.defaultStorage()
        defer { if let scratch { try? FileManager.default.removeItem(at: scratch) } }
        let (app, registry) = try await application(storage)
        try await app.test(.router) { client in try await test(client, registry) }
        running.state.withLock { $0 = nil }
    }

    /// Runs the application on a real socket (WebSocket tests); the test gets the port.
    func runLive(
        storage: (any DatabaseStorage)? = nil,
        _ test: @Sendable (any TestClientProtocol, Int, DatabaseRegistry) async throws -> Void
    ) async throws {
        let (storage, scratch) = try storage.map { ($0, nil) } ?? TestServer.defaultStorage()
        defer { if let scratch { try? FileManager.default.removeItem(at: scratch) } }
        let (app, registry) = try await application(storage)
        try await app.test(.live) { client in try await test(client, client.port!, registry) }
        running.state.withLock { $0 = nil }
    }

    private func application(_ storage: any DatabaseStorage) async throws -> (some ApplicationProtocol, DatabaseRegistry) {
        let built = try await makeApplication(
            configuration: configuration,
            storage: storage,
            adminSecret: AdminSecret(hashing: TestServer.secret),
            tokens: tokens
        )
        running.state.withLock { $0 = (built.registry, built.realtime) }
        return (built.application, built.registry)
    }
}

/// What a running ``TestServer`` exposes to its test.
private final class RunningServer: Sendable {
    let state = Mutex<(registry: DatabaseRegistry, realtime: RealtimeServices)?>(nil)
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

/// Waits until a condition holds, polling it. The deadline is generous (30 s of real time): it only
/// matters when something is really broken, never to decide a race.
func eventually(
    _ condition: () async -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        if await condition() { return }
        try await Task.sleep(for: .milliseconds(2))
    }
    Issue.record("condition not met within 30 s", sourceLocation: sourceLocation)
    throw ConditionNotMet()
}

struct ConditionNotMet: Error {}

extension WireConnection {
    /// The next message, or nil once the server has closed the connection; throws if neither happens
    /// within 30 s of real time, which only matters when the behaviour under test is broken.
    func nextMessage() async throws -> String? {
        try await receive(timeout: .seconds(30))
    }
}
