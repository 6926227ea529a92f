import Foundation
import HearthCore
import HearthRealtimeClient
@testable import HearthEngine
@testable import HearthServer
import HearthSQLite
import HearthStorage
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// After a start, a large database answers reads from its file at once while its tree loads; writes
/// and listens wait for the loaded tree, and nothing is lost or seen out of order
/// (docs/decisions/0012-compact-tree-and-warm-start.md).
@Suite struct WarmStartTests {
    /// SQLite storage whose full loads wait until the test opens the gate, so the database stays
    /// "warming" for as long as the test needs.
    final class GatedStorage: DatabaseStorage {
        let inner: SQLiteStorage
        let gate = Gate()

        init(_ inner: SQLiteStorage) { self.inner = inner }

        func namespaces() async throws -> [String] { try await inner.namespaces() }
        func contains(namespace: String) async throws -> Bool { try await inner.contains(namespace: namespace) }
        func open(namespace: String) async throws -> any NamespaceStorage {
            GatedNamespace(inner: try inner.openNamespace(namespace), gate: gate)
        }
    }

    struct GatedNamespace: NamespaceStorage {
        let inner: SQLiteNamespaceStorage
        let gate: Gate

        func load() async throws -> StoredDatabase {
            await gate.wait()
            return try await inner.load()
        }
        func warmStart(minimumBytes: Int) async throws -> StoredDatabase? { try await inner.warmStart(minimumBytes: minimumBytes) }
        func commit(_ mutations: [StorageMutation]) async throws { try await inner.commit(mutations) }
        func saveRules(_ source: String, time: Int64) async throws { try await inner.saveRules(source, time: time) }
        func rulesHistory(limit: Int) async throws -> [RulesVersion] { try await inner.rulesHistory(limit: limit) }
        func storedBytes() async throws -> Int64? { try await inner.storedBytes() }
        func close() async throws { try await inner.close() }
    }

    /// Opens once; whoever waits before that waits until then.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        var isOpen: Bool { state.withLock { $0.open } }

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Runs `test` against a live server (emulator mode) whose database `default` was seeded by an earlier
    /// run and stays loading its tree until the test opens `storage.gate`.
    func withLoadingDatabase(
        _ test: @escaping @Sendable (TestServer, GatedStorage, Int, DatabaseInstance) async throws -> Void
    ) async throws {
        let directory = try await seededDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = GatedStorage(try SQLiteStorage(directory: directory))
        let server = TestServer(emulator: true) {
            $0.warmStartBytes = 0
            $0.memoryLimit = nil
        }
        try await server.runLive(storage: storage) { _, port, registry in
            let database = try await registry.database("default")
            #expect(!database.isWarm)
            try await test(server, storage, port, database)
        }
    }

    /// 1,500 users (3,000 rows: more than the reader reads whole) written to a data directory, as a previous run of the server left them.
    func seededDirectory() async throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-warm-\(UUID().uuidString)")
        let storage = try SQLiteStorage(directory: directory)
        let db = try storage.openNamespace("default")
        var users: [(key: Key, value: Node)] = []
        for i in 0..<1500 {
            let user = try Node(json: try JSONValue(parsing: #"{"name": "user \#(i)", "age": \#(i % 90)}"#))
            users.append((key: Key("u\(i)"), value: user))
        }
        try await db.commit([.replace(try DatabasePath("/users"), .children(Node.Children(entries: ChildMap(entries: users))))])
        try await db.close()
        storage.releaseLock()
        return directory
    }

    @Test func readsAreAnsweredWhileTheTreeLoadsAndWritesWaitForIt() async throws {
        let directory = try await seededDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = GatedStorage(try SQLiteStorage(directory: directory))
        let server = TestServer {
            $0.warmStartBytes = 0
            $0.memoryLimit = nil
        }
        try await server.run(storage: storage) { client, registry in
            let database = try await registry.database("default")
            #expect(!database.isWarm)
            #expect(database.snapshot().child(at: try DatabasePath("/users")).childEntries.isStored)

            // Reads: a leaf, a subtree, a query, shallow — all from the file, all before the load ends.
            #expect(try await client.call(.get, "/users/u7/name.json").body == #""user 7""#)
            #expect(try await client.call(.get, "/users/u12.json").body == #"{"age":12,"name":"user 12"}"#)
            let last = try await client.call(.get, #"/users.json?orderBy="$key"&limitToLast=2"#)
            #expect(last.body == #"{"u998":{"age":8,"name":"user 998"},"u999":{"age":9,"name":"user 999"}}"#)
            #expect(try await client.call(.get, "/users.json?shallow=true").json.map { object in
                if case .object(let members) = object { members.count } else { 0 }
            } == 1500)
            #expect(!storage.gate.isOpen)

            // A write waits for the loaded tree: it is acknowledged only after the load is let through.
            let write = Task {
                let reply = try await client.call(.put, "/users/u7/name.json", #""renamed""#)
                return (reply, storage.gate.isOpen)
            }
            try await eventually { database.queue.withLock { !$0.pending.isEmpty } }
            storage.gate.open()
            let (reply, openWhenAcknowledged) = try await write.value
            #expect(reply.status == .ok)
            #expect(openWhenAcknowledged)
            #expect(database.isWarm)
            #expect(try await client.call(.get, "/users/u7.json").body == #"{"age":7,"name":"renamed"}"#)
            #expect(try await client.call(.get, "/users/u1499/age.json").body == "59")
            #expect(!database.snapshot().child(at: try DatabasePath("/users")).childEntries.isStored)
        }
    }

    /// A listen waits for the loaded tree; if its connection closes meanwhile, it is not registered when
    /// the load ends (the close had nothing to remove then, so the hub would keep the dead session).
    @Test func aListenWhoseConnectionClosedWhileTheTreeLoadedIsNotKept() async throws {
        try await withLoadingDatabase { server, storage, port, database in
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=default")
            _ = try await connection.nextMessage()
            try await connection.send(RealtimeConnectionTests.request(1, "q", #"{"p":"/users","h":""}"#))
            let sessions = try server.realtime.sessions
            try await eventually { sessions.all.count == 1 }
            await connection.close()
            try await eventually { sessions.all.isEmpty }
            storage.gate.open()
            try await eventually { database.isWarm }
            // The listen's task ends soon after the load: give it time to (wrongly) register.
            try await Task.sleep(for: .milliseconds(300))
            #expect(database.realtime.listenCount == 0)
        }
    }

    /// A client pipelining writes while its database loads: the server stops reading its socket once
    /// about ``RealtimeSession/inboundRequestLimit`` requests are queued or in flight (one read's worth
    /// more at most), and reads again as they are answered; every write is acknowledged, in order.
    @Test func aConnectionIsNotReadWhileItsRequestsPileUp() async throws {
        try await withLoadingDatabase { server, storage, port, database in
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=default")
            _ = try await connection.nextMessage()
            let sessions = try server.realtime.sessions
            let writes = 24_000
            // Sent from a task: once the socket buffers fill, a send waits for the server to read again.
            let sending = connection.sender
            let sent = Atomic<Int>(0)
            let sender = Task {
                for number in 1...writes {
                    try await sending.send(RealtimeConnectionTests.request(number, "p", #"{"p":"/pipelined/w\#(number)","d":\#(number)}"#))
                    sent.add(1, ordering: .relaxed)
                }
            }
            // While the client sends (until it is done, or held back for 2 s by the socket's buffers),
            // the requests queued or in flight stay near the limit: the limit, plus at most one read's
            // requests (4 reads of up to 64 KiB, about 3,700 of these). Without the pause, all 24,000.
            var most = 0
            var stalled = 0
            var lastSent = -1
            while stalled < 40 {
                try await Task.sleep(for: .milliseconds(50))
                most = max(most, sessions.all.first?.inboundLoad.requests ?? 0)
                let now = sent.load(ordering: .relaxed)
                stalled = now == lastSent ? stalled + 1 : 0
                lastSent = now
                if now == writes, stalled >= 6 { break }
            }
            #expect(sessions.all.first?.inboundLoad.paused == true)
            #expect(most >= RealtimeSession.inboundRequestLimit && most < RealtimeSession.inboundRequestLimit + 4_000, "\(most) requests held")
            // Its keep-alives wait unread meanwhile: the idle reaper leaves a paused connection alone.
            sessions.all.first?.closeIfSilent(since: .max)
            storage.gate.open()
            var acknowledged = 0
            while acknowledged < writes {
                let message = try #require(try await connection.receive(), "the connection ended after \(acknowledged) acknowledgements")
                guard message.contains(#""s":"ok""#) else { continue }
                acknowledged += 1
                #expect(message.contains(#""r":\#(acknowledged),"#), "acknowledgement \(acknowledged) out of order: \(message)")
            }
            try await sender.value
            #expect(database.snapshot().child(at: try DatabasePath("/pipelined")).childCount == writes)
            try await eventually { sessions.all.first?.inboundLoad.requests == 0 }
            await connection.close()
        }
    }

    /// The same over long polling, which cannot stop reading a socket: a poll bringing more requests
    /// waits (holding its client back) while the session is paused, and goes on once it has room.
    @Test func aLongPollWaitsWhileItsRequestsPileUp() async throws {
        try await withLoadingDatabase { server, storage, port, database in
            var (poller, _) = try await LongPollTests.Poller.start(port: port, namespace: "default")
            let session = try #require(try server.realtime.sessions.session(poller.id))
            // 230 polls of 20 writes each, sent one after another without waiting for their answers (a
            // poll is held until the next one releases it).
            let perPoll = 20, polls = 230
            var pending: [Task<LongPollTests.Poller.Answer, any Error>] = []
            for batch in 0..<polls {
                let segments = poller.segments((1...perPoll).map { index in
                    let number = batch * perPoll + index
                    return LongPollTests.request(number, "p", #"{"p":"/lp/w\#(number)","d":\#(number)}"#)
                })
                let sending = poller
                pending.append(Task { try await sending.poll(segments) })
                if session.inboundLoad.paused { break }
                try await eventually { session.inboundLoad.requests == (batch + 1) * perPoll }
            }
            #expect(session.inboundLoad.paused)
            // A few more polls arrive meanwhile: their requests are not taken.
            let held = session.inboundLoad.requests
            for batch in pending.count..<pending.count + 3 {
                let segments = poller.segments((1...perPoll).map { index in
                    let number = batch * perPoll + index
                    return LongPollTests.request(number, "p", #"{"p":"/lp/w\#(number)","d":\#(number)}"#)
                })
                let sending = poller
                pending.append(Task { try await sending.poll(segments) })
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(session.inboundLoad.requests == held)
            #expect(held >= RealtimeSession.inboundRequestLimit && held < RealtimeSession.inboundRequestLimit + perPoll)
            storage.gate.open()
            let writes = pending.count * perPoll
            let list = try DatabasePath("/lp")
            do { try await eventually { database.snapshot().child(at: list).childCount == writes } } catch {
                Issue.record("\(database.snapshot().child(at: list).childCount) of \(writes) writes, load \(session.inboundLoad)")
                throw error
            }
            try await eventually { session.inboundLoad.requests == 0 }
            // A last poll releases the one held; it may be held itself (when every answer has gone to
            // earlier polls), and is then released by the server's clock, not by a poll that never comes.
            let transport = try LongPollTests.transport(server, poller)
            let sending = poller
            let lastAnswered = Mutex(false)
            let last = Task {
                let answer = try await sending.poll()
                lastAnswered.withLock { $0 = true }
                return answer
            }
            for (index, task) in pending.enumerated() {
                do { _ = try await task.value } catch {
                    Issue.record("poll \(index) of \(pending.count): \(error); held \(transport.heldPolls), received \(transport.receivedPolls), load \(session.inboundLoad)")
                    throw error
                }
            }
            // Every earlier poll is answered: `last` is answered, or held once it has arrived (then the
            // server's clock releases it).
            try await eventually { transport.heldPolls == 1 || lastAnswered.withLock { $0 } }
            if !lastAnswered.withLock({ $0 }) { await server.advance(by: LongPollTransport.holdDuration) }
            _ = try await last.value
        }
    }

    @Test func aSmallDatabaseLoadsBeforeItAnswers() async throws {
        let directory = try await seededDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let server = TestServer {
            $0.warmStartBytes = 1 << 40
            $0.memoryLimit = nil
        }
        try await server.run(storage: storage) { client, registry in
            let database = try await registry.database("default")
            #expect(database.isWarm)
            #expect(try await client.call(.get, "/users/u7/name.json").body == #""user 7""#)
        }
    }
}
