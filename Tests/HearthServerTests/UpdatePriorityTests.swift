import HearthAccess
import Foundation
import HearthCore
import HTTPTypes
@testable import HearthEngine
import HearthRealtimeClient
@testable import HearthServer
import HearthSQLite
import HearthStorage
import Testing

/// A multi-location update's key may end in `.priority` to set the priority of the node above it, as
/// Firebase's SDKs allow (`update(ref, {"a/.priority": 5})`, the JS SDK's `validateFirebaseMergeDataArg`):
/// over REST (`PATCH`), over the WebSocket (`m`), in what listeners are sent, and in the log followers
/// replay.
@Suite struct UpdatePriorityTests {
    @Test(arguments: [
        ("a/.priority", ["a", ".priority"]),
        (".priority", [".priority"]),
        ("/a//b/.priority/", ["a", "b", ".priority"]),
        ("a/b", ["a", "b"]),
    ])
    func anUpdateKeyMayEndInPriority(_ text: String, _ keys: [String]) throws {
        let path = try DatabasePath(updateKey: text)
        #expect(path.keys.map(\.string) == keys)
        #expect(path.isPriority == (keys.last == ".priority"))
    }

    @Test(arguments: ["a/.priority/b", ".priority/x", "a/.value", "a/b.c", "a/.priority/.priority"])
    func onlyTheLastKeyMayBePriority(_ text: String) {
        #expect(throws: PathError.self) { try DatabasePath(updateKey: text) }
        // A plain path never takes it.
        #expect(throws: PathError.self) { try DatabasePath("a/.priority") }
    }

    @Test func settingAtPriorityChangesThePriorityOfTheNodeAbove() throws {
        let tree = Node.empty.setting(.leaf(.number(1)), at: try DatabasePath("a/x"))
        let prioritised = tree.setting(.leaf(.string("p")), at: try DatabasePath(updateKey: "a/.priority"))
        #expect(prioritised.child(at: try DatabasePath("a")).priority == .string("p"))
        #expect(prioritised.child(at: try DatabasePath("a/x")) == .leaf(.number(1)))
        // Not a child named `.priority`.
        #expect(prioritised.child(at: try DatabasePath("a")).childCount == 1)
        // Null (or anything not a string or a number) removes it; an empty node keeps none.
        #expect(prioritised.setting(.empty, at: try DatabasePath(updateKey: "a/.priority")) == tree)
        #expect(prioritised.setting(.leaf(.bool(true)), at: try DatabasePath(updateKey: "a/.priority")) == tree)
        #expect(tree.setting(.leaf(.number(3)), at: try DatabasePath(updateKey: "b/.priority")) == tree)
    }

    @Test func aPatchSetsPrioritiesAfterItsValues() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/t.json", #"{"a":{"x":1},"b":2}"#)
            // The echo is what was written; a node that does not exist gets no priority (null).
            let reply = try await client.call(.patch, "/t.json", #"{"a/.priority":5,"b/.priority":"p","z/.priority":3}"#)
            #expect(reply.status == .ok)
            #expect(reply.body == #"{"a/.priority":5,"b/.priority":"p","z/.priority":null}"#)
            #expect(try await client.call(.get, "/t.json?format=export").body == #"{"a":{"x":1,".priority":5},"b":{".value":2,".priority":"p"}}"#)
            // The location's own priority, and a priority listed before the value that makes its node.
            try await client.call(.patch, "/t.json", #"{".priority":7,"n/.priority":2,"n/x":1}"#)
            #expect(try await client.call(.get, "/t/.priority.json").body == "7")
            #expect(try await client.call(.get, "/t/n.json?format=export").body == #"{"x":1,".priority":2}"#)
            // Numbers first (n's 2, a's 5), then strings (b's "p").
            #expect(try await client.call(.get, #"/t.json?orderBy="$priority"&limitToFirst=1"#).body == #"{"n":{"x":1}}"#)
            #expect(try await client.call(.get, #"/t.json?orderBy="$priority"&limitToLast=1"#).body == #"{"b":2}"#)
            // Null removes one.
            try await client.call(.patch, "/t.json", #"{"a/.priority":null}"#)
            #expect(try await client.call(.get, "/t/a.json?format=export").body == #"{"x":1}"#)
        }
    }

    @Test func aBadPriorityOrAnOverlapRefusesTheWholePatch() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/t.json", #"{"a":{"x":1},"b":2}"#)
            let bad = try await client.call(.patch, "/t.json", #"{"a/x":9,"b/.priority":true}"#)
            #expect(bad.status == .badRequest)
            #expect(bad.error?.contains("priorities must be strings, numbers or null") == true)
            let overlap = try await client.call(.patch, "/t.json", #"{"a":3,"a/.priority":1}"#)
            #expect(overlap.status == .badRequest)
            #expect(overlap.error?.contains("ancestor") == true)
            #expect(try await client.call(.get, "/t.json?format=export").body == #"{"a":{"x":1},"b":2}"#)
        }
    }

    @Test func aPriorityIsAsDeepAsItsNode() async throws {
        try await TestServer().run { client, _ async throws in
            let deep = (1...31).map { "k\($0)" }.joined(separator: "/")
            try await client.call(.put, "/\(deep)/leaf.json", "1")
            // The node is 32 levels deep: its priority may be set, a child below it may not.
            #expect(try await client.call(.patch, "/\(deep).json", #"{"leaf/.priority":1}"#).status == .ok)
            #expect(try await client.call(.get, "/\(deep)/leaf/.priority.json").body == "1")
            let tooDeep = try await client.call(.patch, "/\(deep)/leaf.json", #"{"x/.priority":1}"#)
            #expect(tooDeep.status == .badRequest)
            #expect(tooDeep.error?.contains("32 levels") == true)
        }
    }

    @Test func aPriorityIsKeptOnDiskAndAfterARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-priority-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestServer().run(storage: try SQLiteStorage(directory: directory)) { client, _ async throws in
            try await client.call(.put, "/t.json", #"{"a":{"x":1},"b":2}"#)
            try await client.call(.patch, "/t.json", #"{"a/.priority":5,"b/.priority":"p",".priority":1,"n/x":1,"n/.priority":2}"#)
            try await client.call(.patch, "/t.json", #"{"b/.priority":null}"#)
        }
        try await TestServer().run(storage: try SQLiteStorage(directory: directory)) { client, _ async throws in
            #expect(try await client.call(.get, "/t.json?format=export").body == #"{"a":{"x":1,".priority":5},"b":2,"n":{"x":1,".priority":2},".priority":1}"#)
        }
    }

    @Test func aPriorityIsValidatedByTheRulesOfItsNode() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/ranked/a.json", "1")
            try await client.call(.put, "/.settings/rules.json", #"{"rules": {"ranked": {"$item": {".write": true, ".validate": "newData.getPriority() == null || newData.getPriority() < 10"}}}}"#)
            #expect(try await client.call(.patch, "/ranked.json", #"{"a/.priority":3}"#, headers: [:]).status == .ok)
            #expect(try await client.call(.patch, "/ranked.json", #"{"a/.priority":30}"#, headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/ranked/a/.priority.json").body == "3")
        }
    }

    @Test func aPriorityIsWrittenUnderTheRulesOfItsNode() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/open/a.json", "1")
            try await client.call(.put, "/closed/a.json", "1")
            try await client.call(.put, "/.settings/rules.json", #"{"rules": {"open": {"$item": {".write": true}}}}"#)
            #expect(try await client.call(.patch, "/open.json", #"{"a/.priority":1}"#, headers: [:]).status == .ok)
            #expect(try await client.call(.patch, "/closed.json", #"{"a/.priority":1}"#, headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/closed/a.json?format=export").body == "1")
            #expect(try await client.call(.get, "/open/a.json?format=export").body == #"{".value":1,".priority":1}"#)
        }
    }

    /// `/t` holds `{"a": {"x": 1}}`.
    static func seed(_ database: DatabaseInstance) async throws {
        _ = try await database.write(WriteRequest(.set(try DatabasePath("/t"), try JSONValue(parsing: #"{"a":{"x":1}}"#)), identity: .admin))
    }

    /// A WebSocket connection to the `demo` database, past its handshake.
    static func connect(_ port: Int) async throws -> WireConnection {
        let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
        _ = try await connection.nextMessage()
        return connection
    }

    @Test func aMergeOverTheWebSocketSetsAPriorityAndListenersAreSentIt() async throws {
        try await TestServer(emulator: true).runLive { _, port, registry in
            let database = try await registry.database("demo")
            try await Self.seed(database)
            let listener = try await Self.connect(port)
            try await listener.send(RealtimeConnectionTests.request(1, "q", #"{"p":"/t","h":""}"#))
            #expect(try await listener.nextMessage() == #"{"t":"d","d":{"a":"d","b":{"p":"t","d":{"a":{"x":1}}}}}"#)
            #expect(try await listener.nextMessage()?.contains(#""s":"ok""#) == true)
            let below = try await Self.connect(port)
            try await below.send(RealtimeConnectionTests.request(1, "q", #"{"p":"/t/a","h":""}"#))
            #expect(try await below.nextMessage() == #"{"t":"d","d":{"a":"d","b":{"p":"t/a","d":{"x":1}}}}"#)
            #expect(try await below.nextMessage()?.contains(#""s":"ok""#) == true)

            let writer = try await Self.connect(port)
            try await writer.send(RealtimeConnectionTests.request(1, "m", #"{"p":"/t","d":{"a/.priority":"high"}}"#))
            #expect(try await writer.nextMessage() == #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#)
            #expect(try await listener.nextMessage() == #"{"t":"d","d":{"a":"m","b":{"p":"t","d":{"a/.priority":"high"}}}}"#)
            #expect(try await below.nextMessage() == #"{"t":"d","d":{"a":"m","b":{"p":"t/a","d":{".priority":"high"}}}}"#)
            #expect(database.snapshot().child(at: try DatabasePath("/t/a")).priority == .string("high"))
            // A bad priority is refused with the protocol's error, and nothing changes.
            try await writer.send(RealtimeConnectionTests.request(2, "m", #"{"p":"/t","d":{"a/.priority":{"k":1}}}"#))
            #expect(try await writer.nextMessage()?.contains(#""r":2,"b":{"s":"invalid_data""#) == true)
            #expect(database.snapshot().child(at: try DatabasePath("/t/a")).priority == .string("high"))
            for connection in [listener, below, writer] { await connection.close() }
        }
    }

    @Test func anOnDisconnectUpdateSetsAPriorityWhenTheConnectionEnds() async throws {
        try await TestServer(emulator: true).runLive { _, port, registry in
            let database = try await registry.database("demo")
            try await Self.seed(database)
            let connection = try await Self.connect(port)
            try await connection.send(RealtimeConnectionTests.request(1, "om", #"{"p":"/t","d":{"a/.priority":9,"seen":true}}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#)
            #expect(database.snapshot().child(at: try DatabasePath("/t/a")).priority == nil)
            await connection.close()
            let a = try DatabasePath("/t/a")
            try await eventually { database.snapshot().child(at: a).priority == .number(9) }
            #expect(database.snapshot().child(at: try DatabasePath("/t/seen")) == .leaf(.bool(true)))
        }
    }

    @Test func anUpdateWithAPriorityIsLoggedSoThatEarlierVersionsReload() throws {
        func payload(_ items: [(path: DatabasePath, node: Node)]) -> String {
            ReplicatedEntry.changes([ReplicatedEntry.Write(path: .root, written: .update(items))]).payload
        }
        #expect(try payload([(DatabasePath("a"), .leaf(.number(1)))]).contains(#""u":["#))
        let withPriority = try payload([(DatabasePath("a"), .leaf(.number(1))), (DatabasePath(updateKey: "b/.priority"), .leaf(.number(2)))])
        #expect(withPriority.contains(#""up":["#) && !withPriority.contains(#""u":["#))
        guard case .changes(let writes) = try ReplicatedEntry(payload: withPriority), case .update(let items) = writes.first?.written else {
            Issue.record("the entry does not decode")
            return
        }
        #expect(items.map(\.path) == [try DatabasePath("a"), try DatabasePath(updateKey: "b/.priority")])
    }

    @Test func followersReplayAPriorityFromTheLog() throws {
        let before = try Node(json: try JSONValue(parsing: #"{"t":{"a":{"x":1}}}"#))
        let write = ReplicatedEntry.Write(
            path: try DatabasePath("/t"), written: .update([(try DatabasePath(updateKey: "a/.priority"), .leaf(.number(4)))])
        )
        let decoded = try ReplicatedEntry(payload: ReplicatedEntry.changes([write]).payload)
        guard case .changes(let writes) = decoded else { Issue.record("not a change"); return }
        let after = try #require(writes.first).applied(to: before)
        #expect(after.child(at: try DatabasePath("/t/a")).priority == .number(4))
        #expect(after.child(at: try DatabasePath("/t/a/x")) == .leaf(.number(1)))
    }
}
