import Foundation
import HearthCore
@testable import HearthEngine
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import Synchronization
import Testing

/// With a memory limit, a database is served from its file and only what writes change is held in
/// memory, dropped when over the limit (decision 3 of docs/decisions/0012-compact-tree-and-warm-start.md).
/// It must answer exactly as the fully resident engine does.
@Suite struct MemoryLimitTests {
    /// A splitmix64 generator, so a failing sequence can be replayed.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Over the limit at every check, checked after every batch: the tree is read again from the file
    /// after every write.
    static func limitedServer(emulator: Bool = false) -> TestServer {
        TestServer(emulator: emulator) { configuration in
            var limit = MemoryLimit(bytes: 0)
            limit.checkInterval = .zero
            configuration.memoryLimit = limit
            configuration.enforceIndexes = false
        }
    }

    static func scratchDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-limit-\(UUID().uuidString)")
    }

    /// 600 users of 5 values (3,000 rows: more than a node the reader reads whole).
    static let users: String = {
        let members = (0..<600).map { i in
            #""u\#(i)": {"name": "user \#(i)", "age": \#(i % 90), "tags": {"a": true, "n": \#(i)}, "city": "c\#(i % 7)"}"#
        }
        return "{" + members.joined(separator: ",") + "}"
    }()

    static func usersAreStored(_ database: DatabaseInstance) -> Bool {
        database.snapshot().child(at: DatabasePath(keys: [Key("users")])).childEntries.isStored
    }

    @Test func theTrackerDropsTheTreeOverTheLimitAndAtTheRefreshInterval() {
        var limit = MemoryLimit(bytes: 1000)
        limit.checkInterval = .milliseconds(100)
        limit.refreshInterval = .seconds(10)
        let start = ContinuousClock.now
        var tracker = ResidencyTracker(limit: limit, now: start)
        var measured = 0
        // Too soon to measure: memory is not read at all.
        #expect(!tracker.committed(now: start + .milliseconds(50)) { measured += 1; return 5000 })
        #expect(measured == 0)
        // Time to measure; under the limit.
        #expect(!tracker.committed(now: start + .milliseconds(150)) { measured += 1; return 999 })
        #expect(measured == 1)
        // Over the limit, but measured 50 ms ago.
        #expect(!tracker.committed(now: start + .milliseconds(200)) { measured += 1; return 5000 })
        #expect(measured == 1)
        #expect(tracker.committed(now: start + .milliseconds(300)) { measured += 1; return 1001 })
        // Still over the limit once the tree is dropped: said once, not at every refresh.
        #expect(tracker.refreshed(now: start + .milliseconds(300)) { 1500 } == 1500)
        #expect(!tracker.committed(now: start + .milliseconds(350)) { 5000 })
        #expect(tracker.committed(now: start + .milliseconds(450)) { 5000 })
        #expect(tracker.refreshed(now: start + .milliseconds(450)) { 1500 } == nil)
        // However little memory is used, the tree is read again at the refresh interval.
        #expect(!tracker.committed(now: start + .milliseconds(10_000)) { 0 })
        #expect(tracker.committed(now: start + .milliseconds(10_450)) { 0 })
    }

    /// Random writes into a large stored node (single leaves, whole records, multi-path updates,
    /// deletes that empty a record) give the same answers — values, queries, shallow reads, ETags — as
    /// the fully resident engine, while the node stays in the file.
    @Test(arguments: [1, 2, 3])
    func answersExactlyAsTheResidentEngine(seed: UInt64) async throws {
        var generator = Seeded(state: seed)
        var operations: [(method: HTTPRequest.Method, uri: String, body: String?)] = []
        for _ in 0..<60 {
            let user = "u\(Int.random(in: 0..<700, using: &generator))"
            let other = "u\(Int.random(in: 0..<700, using: &generator))"
            let n = Int.random(in: 0..<100, using: &generator)
            switch Int.random(in: 0..<7, using: &generator) {
            case 0: operations.append((.put, "/users/\(user)/name.json", #""renamed \#(n)""#))
            case 1: operations.append((.put, "/users/\(user).json", #"{"name": "new \#(n)", "age": \#(n)}"#))
            case 2: operations.append((.delete, "/users/\(user).json", nil))
            case 3: operations.append((.patch, "/users.json", #"{"\#(user)/age": \#(n), "\#(other)": null, "x\#(n)": {"age": \#(n)}}"#))
            case 4: operations.append((.put, "/users/\(user)/tags/t\(n).json", #"{"deep": \#(n)}"#))
            case 5: operations.append((.delete, "/users/\(user)/name.json", nil))
            default: operations.append((.put, "/top/\(n).json", "\(n)"))
            }
        }
        let reads = [
            "/users.json?shallow=true",
            #"/users.json?orderBy="age"&limitToFirst=5"#,
            #"/users.json?orderBy="$key"&startAt="u5"&limitToFirst=4"#,
            #"/users.json?orderBy="name"&equalTo="new 7""#,
            "/top.json",
            "/.json",
        ]
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let operationsToRun = operations
        try await TestServer { $0.enforceIndexes = false }.run(storage: InMemoryStorage()) { resident, _ in
            try await Self.limitedServer().run(storage: try SQLiteStorage(directory: directory)) { limited, registry in
                for client in [resident, limited] {
                    #expect(try await client.call(.put, "/users.json", Self.users).status == .ok)
                }
                let database = try await registry.database("default")
                // The writer reads the tree again from the file just after it acknowledges the write.
                try await eventually { Self.usersAreStored(database) }
                for (index, operation) in operationsToRun.enumerated() {
                    let expected = try await resident.call(operation.method, operation.uri, operation.body)
                    let got = try await limited.call(operation.method, operation.uri, operation.body)
                    #expect(got.status == expected.status, "operation \(index): \(operation.uri)")
                    #expect(got.json == expected.json, "operation \(index): \(operation.uri)")
                    var touched = operation.uri.split(separator: "?")[0].replacingOccurrences(of: ".json", with: "")
                    if touched.hasPrefix("/users/") { touched = "/users/" + touched.dropFirst(7).split(separator: "/")[0] }
                    for uri in [touched + ".json"] + (index % 10 == 9 ? reads : []) {
                        let headers = HTTPFields.admin([HTTPField.Name("X-Firebase-ETag")!: "true"])
                        let want = try await resident.call(.get, uri, headers: headers)
                        let have = try await limited.call(.get, uri, headers: headers)
                        #expect(have.status == want.status, "after operation \(index): \(uri)")
                        #expect(have.json == want.json, "after operation \(index): \(uri)")
                        #expect(have.etag == want.etag, "after operation \(index): \(uri)")
                    }
                }
                // Still served from the file (every write dropped what it held).
                try await eventually { Self.usersAreStored(database) }
            }
        }
    }

    /// A reader that took the tree before writes keeps seeing exactly that version, even after the
    /// writer dropped it and its rows in the file changed (its read snapshot pins them).
    @Test func aReaderKeepsItsVersionAfterTheTreeIsDropped() async throws {
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.limitedServer().run(storage: try SQLiteStorage(directory: directory)) { client, registry in
            #expect(try await client.call(.put, "/users.json", Self.users).status == .ok)
            let database = try await registry.database("default")
            try await eventually { Self.usersAreStored(database) }
            let before = database.snapshot()
            let users = try DatabasePath("/users")

            #expect(try await client.call(.put, "/users/u1/name.json", #""renamed""#).status == .ok)
            #expect(try await client.call(.delete, "/users/u2.json").status == .ok)
            #expect(try await client.call(.put, "/users/u3.json", #"{"small": 1}"#).status == .ok)
            let middle = database.snapshot()
            #expect(try await client.call(.put, "/users.json", #"{"only": {"one": 1}}"#).status == .ok)

            #expect(before.child(at: try DatabasePath("/users/u1/name")) == .leaf(.string("user 1")))
            #expect(before.child(at: try DatabasePath("/users/u2/age")) == .leaf(.number(2)))
            #expect(before.child(at: users).childEntries.count == 600)
            #expect(middle.child(at: try DatabasePath("/users/u1/name")) == .leaf(.string("renamed")))
            #expect(middle.child(at: try DatabasePath("/users/u2")).isEmpty)
            #expect(middle.child(at: try DatabasePath("/users/u3")) == (try Node(json: try JSONValue(parsing: #"{"small": 1}"#))))
            #expect(middle.child(at: users).childEntries.count == 599)
            #expect(database.snapshot().child(at: users).childEntries.count == 1)
            #expect(try await client.call(.get, "/users.json").body == #"{"only":{"one":1}}"#)
        }
    }
    /// Reads, writes and a listener at once while the tree is dropped after every write, with every
    /// inner node in the file: the listener gets each write to its record once and in order, reads never
    /// go back in time, and every write is there at the end.
    @Test func concurrentReadsWritesAndAListenerAgree() async throws {
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let rounds = 40
        let storage = try SQLiteStorage(directory: directory, wholeNodeRows: 2)
        // Emulator mode: the listener reads anonymously, and taking read access away ends its stream.
        try await Self.limitedServer(emulator: true).run(storage: storage) { client, registry in
            #expect(try await client.call(.put, "/users.json", Self.users).status == .ok)
            let database = try await registry.database("default")
            try await eventually { Self.usersAreStored(database) }
            let events = SendableBox<String>()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let reply = try await client.call(.get, "/users/u5.json", headers: EventStreamTests.stream)
                    events.value = reply.body
                }
                try await eventually { database.hub.listenerCount == 1 }
                // The listened record's writer, and four others on their own records.
                group.addTask {
                    for round in 0..<rounds {
                        let reply = try await client.call(.put, "/users/u5/name.json", #""v\#(round)""#)
                        #expect(reply.status == .ok)
                    }
                }
                for writer in 0..<4 {
                    group.addTask {
                        for round in 0..<rounds {
                            let uri = round % 2 == 0 ? "/users/u\(100 + writer).json" : "/users.json"
                            let body = round % 2 == 0 ? #"{"round": \#(round)}"# : #"{"u\#(100 + writer)/round": \#(round), "n\#(writer)_\#(round)": true}"#
                            let reply = try await client.call(round % 2 == 0 ? .put : .patch, uri, body)
                            #expect(reply.status == .ok)
                        }
                    }
                }
                // Readers: the name they see only moves forward.
                for _ in 0..<2 {
                    group.addTask {
                        var last = -1
                        for _ in 0..<rounds * 2 {
                            let body = try await client.call(.get, "/users/u5/name.json").body
                            let seen = body.hasPrefix(#""v"#) ? Int(body.dropFirst(2).dropLast()) ?? -1 : -1
                            #expect(seen >= last, "read \(body) after v\(last)")
                            last = seen
                        }
                    }
                }
                // Let the writers finish, then end the stream by taking read access away.
                while database.queue.withLock({ !$0.pending.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
                try await eventually {
                    (try? await client.call(.get, "/users/u5/name.json").body) == #""v\#(rounds - 1)""#
                }
                try await client.call(.put, "/.settings/rules.json", #"{"rules": {".read": false, ".write": true}}"#)
                try await group.waitForAll()
            }
            // The listener: the record as it was, then each name once, in order, then the cancel.
            var expected = EventStreamTests.event("put", #"{"path":"/","data":{"age":5,"city":"c5","name":"user 5","tags":{"a":true,"n":5}}}"#)
            for round in 0..<rounds { expected += EventStreamTests.event("put", #"{"path":"/name","data":"v\#(round)"}"#) }
            expected += EventStreamTests.event("cancel", "null")
            #expect(events.value == expected)
            for writer in 0..<4 {
                let record = try await client.call(.get, "/users/u\(100 + writer).json").json
                #expect(record == (try JSONValue(parsing: #"{"round": \#(rounds - 1)}"#)))
                let shallow = try await client.call(.get, "/users.json?shallow=true").json
                if case .object(let members)? = shallow {
                    let keys = Set(members.map(\.key))
                    #expect((0..<rounds).filter { $0 % 2 == 1 }.allSatisfy { keys.contains("n\(writer)_\($0)") })
                } else {
                    Issue.record("shallow read of /users is not an object")
                }
            }
        }
    }
}
