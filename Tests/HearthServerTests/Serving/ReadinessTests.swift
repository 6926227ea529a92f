import AsyncHTTPClient
import Foundation
import HTTPTypes
import HearthAccess
@testable import HearthServer
import HearthStorage
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization
import Testing

/// `/healthz` and `/readyz`: no credentials, no data; ready only while serving with storage that
/// answers; 503 `draining` from the moment a stop begins, while everything else is still served.
@Suite struct ReadinessTests {
    /// Storage whose `contains` fails or never answers, as a database server gone away would.
    final class StorageGoneAway: DatabaseStorage, Sendable {
        let hangs: Bool
        init(hangs: Bool) { self.hangs = hangs }
        struct Unavailable: Error {}
        func namespaces() async throws -> [String] { [] }
        func contains(namespace: String) async throws -> Bool {
            if hangs { try await Task.sleep(for: .seconds(3600)) }
            throw Unavailable()
        }
        func open(namespace: String) async throws -> any NamespaceStorage { throw Unavailable() }
    }

    @Test func readyOnlyWhileServingWithStorageThatAnswers() async throws {
        let readiness = ServerReadiness(storage: InMemoryStorage(), probeNamespace: "default")
        #expect(await readiness.check() == .notReady("starting"))
        readiness.serving()
        #expect(await readiness.check() == .ready)
        readiness.draining()
        #expect(await readiness.check() == .notReady("draining"))
        // Never ready again once a stop began.
        readiness.serving()
        #expect(await readiness.check() == .notReady("draining"))
    }

    @Test(arguments: [false, true])
    func storageThatFailsOrHangsIsUnavailable(hangs: Bool) async throws {
        let readiness = ServerReadiness(storage: StorageGoneAway(hangs: hangs), probeNamespace: "default", probeTimeout: .milliseconds(200))
        readiness.serving()
        #expect(await readiness.check() == .notReady("unavailable"))
    }

    /// Storage that counts its probes; the first answers only once `release()` is called (or after
    /// `firstDelay`), ignoring cancellation as a query on a connection that never answers may; the
    /// others answer at once.
    final class CountingStorage: DatabaseStorage, Sendable {
        let probes = Atomic<Int>(0)
        let firstFinished = Atomic<Bool>(false)
        let released = Atomic<Bool>(false)
        let firstDelay: Duration
        init(firstDelay: Duration = .milliseconds(50)) { self.firstDelay = firstDelay }
        func release() { released.store(true, ordering: .relaxed) }
        func namespaces() async throws -> [String] { [] }
        func contains(namespace: String) async throws -> Bool {
            guard probes.add(1, ordering: .relaxed).newValue == 1 else { return true }
            let end = ContinuousClock.now + firstDelay
            while ContinuousClock.now < end, !released.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(10)) }
            firstFinished.store(true, ordering: .relaxed)
            return true
        }
        func open(namespace: String) async throws -> any NamespaceStorage { throw StorageGoneAway.Unavailable() }
    }

    /// `/readyz` needs no credentials: a flood of it must not become a flood of storage queries.
    /// Checks at once share the probe in flight, and its answer stands for `probeReuse`.
    @Test func readinessChecksShareOneStorageProbeWhileItsAnswerStands() async throws {
        let storage = CountingStorage()
        let readiness = ServerReadiness(storage: storage, probeNamespace: "default", probeReuse: .seconds(600))
        readiness.serving()
        let answers = await withTaskGroup(of: ServerReadiness.Answer.self) { group in
            for _ in 0..<50 { group.addTask { await readiness.check() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 50 && answers.allSatisfy { $0 == .ready })
        #expect(storage.probes.load(ordering: .relaxed) == 1)

        let expiring = ServerReadiness(storage: storage, probeNamespace: "default", probeReuse: .milliseconds(100))
        expiring.serving()
        #expect(await expiring.check() == .ready)
        #expect(storage.probes.load(ordering: .relaxed) == 2)
        try await Task.sleep(for: .milliseconds(150))
        #expect(await expiring.check() == .ready)
        #expect(storage.probes.load(ordering: .relaxed) == 3)
    }

    /// A probe whose query never ends (and ignores cancellation) answers "unavailable" at its timeout,
    /// and until that query ends no other is started: checks answer at once instead of piling up.
    @Test func aProbeWhoseQueryHangsGivesUpWithoutWaitingForIt() async throws {
        // The first query ends only when released: 60 s is a backstop, so that an implementation that
        // waits for it fails instead of hanging.
        let storage = CountingStorage(firstDelay: .seconds(60))
        let readiness = ServerReadiness(storage: storage, probeNamespace: "default", probeTimeout: .milliseconds(200), probeReuse: .milliseconds(50))
        readiness.serving()
        #expect(await readiness.check() == .notReady("unavailable"))
        let queryEnded = storage.firstFinished.load(ordering: .relaxed)
        #expect(!queryEnded, "the check waited for the query to end")
        try await Task.sleep(for: .milliseconds(100))
        #expect(await readiness.check() == .notReady("unavailable"))
        #expect(storage.probes.load(ordering: .relaxed) == 1)
        storage.release()
        try await eventually { storage.firstFinished.load(ordering: .relaxed) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(await readiness.check() == .ready)
        #expect(storage.probes.load(ordering: .relaxed) == 2)
    }

    @Test func healthAndReadinessNeedNoCredentialsAndCarryNoData() async throws {
        // Live: ready only once the server listens.
        try await TestServer().runLive { client, _, _ in
            try await client.call(.put, "/secret.json?ns=default", #""s3cr3t""#)
            for (path, body) in [("/healthz", "ok\n"), ("/readyz", "ready\n")] {
                let reply = try await client.call(.get, path, headers: [:])
                #expect(reply.status == .ok, "\(path)")
                #expect(reply.body == body)
                #expect(reply.headers[.cacheControl] == "no-store")
                #expect(reply.headers[.contentType]?.hasPrefix("text/plain") == true)
            }
            #expect(try await client.call(.head, "/healthz", headers: [:]).status == .ok)
        }
    }

    @Test func aStopDrainsWithReadinessOffWhileRequestsAreStillServed() async throws {
        try await Self.runServer({ $0.drainPeriod = .seconds(2) }) { port, group in
            let base = "http://127.0.0.1:\(port)"
            let before = try await Self.get(base, "/readyz")
            #expect(before.status == 200 && before.body == "ready\n")
            let stopRequested = ContinuousClock.now
            await group.triggerGracefulShutdown()
            // Draining: not ready, but still serving.
            try await eventually { (try? await Self.get(base, "/readyz"))?.status == 503 }
            let during = try await Self.get(base, "/readyz")
            #expect(during.status == 503 && during.body == "draining\n")
            #expect(try await Self.get(base, "/healthz").status == 200)
            #expect(try await Self.get(base, "/x.json").status == 200)
            return stopRequested
        } stopped: { stopRequested in
            // The server stopped only after the drain period.
            #expect(ContinuousClock.now - stopRequested >= .seconds(2))
        }
    }

    /// A browser's preconnected socket, or a load balancer's open probe, has sent nothing, or a client
    /// only part of its first request's head: a stop closes it at once instead of waiting for its read
    /// timeout (here 600 s, longer than the test's patience).
    @Test(arguments: ["", "GET /x.json HTTP/1.1\r\nHost: loc"])
    func aStopClosesAConnectionWhoseFirstRequestHasNotArrived(sent: String) async throws {
        try await Self.runServer({ $0.requestReadTimeout = .seconds(600) }) { port, group in
            let silent = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port) { channel in
                    channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
                }
            if !sent.isEmpty { try await silent.channel.writeAndFlush(ByteBuffer(string: sent)) }
            // The server has it, and what it sent, once another connection's request is answered (accepts
            // come in order).
            #expect(try await Self.get("http://127.0.0.1:\(port)", "/healthz").status == 200)
            await group.triggerGracefulShutdown()
            let closedByServer = try await silent.executeThenClose { inbound, _ in
                try await withThrowingTaskGroup(of: Bool.self) { waiting in
                    waiting.addTask {
                        for try await _ in inbound {}
                        return true
                    }
                    waiting.addTask {
                        try await Task.sleep(for: .seconds(30))
                        return false
                    }
                    defer { waiting.cancelAll() }
                    return try await waiting.next() ?? false
                }
            }
            #expect(closedByServer)
        } stopped: { _ in }
    }

    /// Runs a server (emulator mode, in memory, `configure`d) in a service group. `body` gets its port and
    /// the group, and must stop it; `stopped` runs once it has, with what `body` returned.
    static func runServer<Value: Sendable>(
        _ configure: (inout ServerConfiguration) -> Void,
        _ body: @Sendable (Int, ServiceGroup) async throws -> Value,
        stopped: (Value) throws -> Void
    ) async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.emulatorMode = true
        configure(&configuration)
        let ports = AsyncStream.makeStream(of: Int.self)
        let server = try await buildApplication(
            configuration: configuration, storage: InMemoryStorage(), adminSecret: nil,
            onServerRunning: { port in ports.continuation.yield(port) }
        )
        let group = ServiceGroup(configuration: .init(services: [server], logger: Logger(label: "test")))
        let value = try await withThrowingTaskGroup(of: Value?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            var iterator = ports.stream.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let value = try await body(port, group)
            try await tasks.waitForAll()
            return value
        }
        try stopped(value)
    }

    static func get(_ base: String, _ path: String) async throws -> (status: Int, body: String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + path), timeout: .seconds(10))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }
}
