import Dispatch
import Foundation
@testable import Hearth
import HearthAccess
import HearthCore
import HearthEngine
import HearthIdentity
import HearthRules
import Hummingbird
@testable import HearthServer
import HearthSQLite
import HearthStorage
import Synchronization
import Testing

/// A Hearth server on a loopback port, in process, on in-memory storage (emulator mode: open rules,
/// `owner` is admin).
enum LiveServer {
    /// With `identity`, the server also serves the Identity Toolkit API (users in memory); with
    /// `files`, the file service (Firebase Storage's API) on a temporary directory, removed afterwards.
    static func run(
        rules: String? = nil,
        identity: Bool = false,
        files: Bool = false,
        tls: ServerCertificate? = nil,
        _ test: @Sendable (_ url: String, _ server: DatabaseInstance) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration()
        configuration.tls = tls
        // Test clients reuse kept-alive connections across gaps that a starved machine stretches past any
        // short timeout, and a close racing a reuse fails the request: only RequestLimitTests tests the timeout.
        configuration.requestReadTimeout = .seconds(600)
        configuration.emulatorMode = true
        configuration.port = 0
        configuration.enforceIndexes = false
        // Cheap password hashes: full-cost ones queue on two niced threads behind other suites' and, on a
        // loaded 2-core machine, outlast the test client's fixed 20 s (docs/testing.md).
        configuration.identity.passwordHashing = .fastForTests
        var fileStorage: FileStorage?
        let filesDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-live-files-\(UUID().uuidString)")
        defer { if files { try? FileManager.default.removeItem(at: filesDirectory) } }
        if files {
            try FileManager.default.createDirectory(at: filesDirectory, withIntermediateDirectories: true)
            fileStorage = FileStorage(
                directory: filesDirectory.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: filesDirectory)
            )
        }
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let (app, registry, _, _, _) = try await makeApplication(
            configuration: configuration, storage: InMemoryStorage(), adminSecret: nil,
            tokens: identity ? TokenSigner.generate() : nil, files: fileStorage,
            onServerRunning: { port in portContinuation.yield(port) }
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CancellationError() }
            let database = try await registry.database("demo")
            if let rules { try await database.replaceRules(try RulesDocument(source: rules)) }
            do {
                try await test("\(configuration.scheme)://127.0.0.1:\(port)?ns=demo", database)
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }
}

/// Makes an independent client (its own connection) whose callbacks run on a private serial queue.
func makeClient(_ url: String) throws -> Hearth.Database {
    let database = try Hearth.Database(url: url)
    database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
    return database
}

/// Makes a client (as ``makeClient(_:)``) and waits until it is connected: a `getData()` on a client
/// still connecting waits only 3 s before it fails as offline (as Firebase's iOS SDK does), which a
/// loaded machine can exceed.
func makeConnectedClient(_ url: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Hearth.Database {
    let database = try makeClient(url)
    database.repo.start()
    await waitUntil(sourceLocation: sourceLocation) {
        database.repo.state.withLock { $0.machine.phase == .connected && $0.socket != nil }
    }
    return database
}

/// Records what observers receive, for exact comparisons.
final class Recorder: Sendable {
    private let items = Mutex<[String]>([])

    func append(_ item: String) { items.withLock { $0.append(item) } }

    var all: [String] { items.withLock { $0 } }

    func clear() { items.withLock { $0.removeAll() } }

    /// Observes `type` on `query`, recording `type key prev value`.
    @discardableResult
    func observe(_ query: DatabaseQuery, _ type: DataEventType, label: String = "") -> DatabaseHandle {
        query.observe(type, andPreviousSiblingKeyWith: { snapshot, previous in
            self.append("\(label)\(Recorder.name(type)) \(snapshot.ref.key ?? "/") prev=\(previous ?? "-") \(snapshot.node.jsonString())")
        })
    }

    static func name(_ type: DataEventType) -> String {
        switch type {
        case .childAdded: "added"
        case .childRemoved: "removed"
        case .childChanged: "changed"
        case .childMoved: "moved"
        case .value: "value"
        }
    }

    /// Waits until at least `count` items arrived (deadline 30 s unless `seconds` says more), then
    /// returns them all.
    func wait(count: Int, seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) async -> [String] {
        await waitUntil(seconds: seconds, sourceLocation: sourceLocation) { self.all.count >= count }
        return all
    }
}

/// Polls `condition` until it holds; records an issue after a generous deadline (30 s: it only matters
/// when something is really broken, and a loaded machine must not trip it).
func waitUntil(seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation, _ condition: @Sendable () -> Bool) async {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline {
            Issue.record("condition not met within \(Int(seconds)) s", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
}

/// Waits until everything queued on the client's callback queue has run.
func drain(_ database: Hearth.Database) async {
    await withCheckedContinuation { continuation in
        database.callbackQueue.async { continuation.resume() }
    }
}

/// A server that can be stopped and started again on the same port and storage, to test reconnects.
final class RestartableServer: Sendable {
    let storage = InMemoryStorage()
    private let running = Mutex<Task<Void, any Error>?>(nil)
    private let boundPort = Mutex(0)

    var port: Int { boundPort.withLock { $0 } }
    var url: String { "http://127.0.0.1:\(port)?ns=demo" }

    /// Starts on the port of the previous run (any free port the first time).
    func start() async throws {
        var configuration = ServerConfiguration()
        // Test clients reuse kept-alive connections across gaps that a starved machine stretches past any
        // short timeout, and a close racing a reuse fails the request: only RequestLimitTests tests the timeout.
        configuration.requestReadTimeout = .seconds(600)
        configuration.emulatorMode = true
        configuration.port = port
        configuration.enforceIndexes = false
        // Cheap password hashes: full-cost ones queue on two niced threads behind other suites' and, on a
        // loaded 2-core machine, outlast the test client's fixed 20 s (docs/testing.md).
        configuration.identity.passwordHashing = .fastForTests
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let (app, _, _, _, _) = try await makeApplication(
            configuration: configuration, storage: storage, adminSecret: nil,
            onServerRunning: { port in portContinuation.yield(port) }
        )
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        running.withLock { $0 = task }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        boundPort.withLock { $0 = port }
    }

    /// Stops the server and waits until it has shut down (its connections are closed).
    func stop() async {
        guard let task = running.withLock({ state in defer { state = nil }; return state }) else { return }
        task.cancel()
        _ = try? await task.value
    }
}
