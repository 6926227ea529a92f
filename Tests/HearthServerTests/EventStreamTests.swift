import HearthAccess
import HearthCore
@testable import HearthEngine
import HearthProtocol
@testable import HearthServer
import HearthStorage
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// REST streaming. A stream ends when rules take read access away (`cancel`), which lets a test collect
/// the whole stream and compare it with the exact expected events.
@Suite struct EventStreamTests {
    static let stream: HTTPFields = [.accept: "text/event-stream"]

    /// Opens a stream (as an anonymous client), runs `actions` once it is registered, then revokes read
    /// access so the stream ends, and returns everything it carried.
    func collect(
        _ uri: String,
        server: TestServer = TestServer(emulator: true),
        setup: @escaping @Sendable (any TestClientProtocol) async throws -> Void = { _ in },
        actions: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws -> String {
        let body = SendableBox<String>()
        try await server.run { client, registry async throws in
            try await setup(client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let reply = try await client.call(.get, uri, headers: Self.stream)
                    #expect(reply.status == .ok)
                    #expect(reply.headers[.contentType] == "text/event-stream")
                    body.value = reply.body
                }
                let database = try await registry.database("default")
                try await eventually { database.hub.listenerCount == 1 }
                try await actions(client)
                try await client.call(.put, "/.settings/rules.json", #"{"rules": {".read": false, ".write": true}}"#)
                try await group.waitForAll()
                #expect(database.hub.listenerCount == 0)
            }
        }
        return body.value
    }

    static func event(_ name: String, _ data: String) -> String {
        "event: \(name)\ndata: \(data)\n\n"
    }

    /// A query's stream and a shallow stream give objects, as the same GET does: keys 0, 1, 2… stay
    /// keys, with no `null` put in for the missing ones. Arrays inside the values stay arrays.
    @Test func queryAndShallowStreamsOfArrayLikeDataAreObjects() async throws {
        let setup: @Sendable (any TestClientProtocol) async throws -> Void = { client in
            try await client.call(.put, "/.settings/rules.json", #"{"rules": {".read": true, ".write": true, "arr": {".indexOn": ".value"}}}"#)
            try await client.call(.put, "/arr.json", "[10,20,30,null,50]")
        }
        let query = try await collect(#"/arr.json?orderBy="$value"&startAt=20"#, setup: setup) { client in
            try await client.call(.put, "/arr/5.json", "[1,2]")
        }
        #expect(query.hasPrefix(Self.event("put", #"{"path":"/","data":{"1":20,"2":30,"4":50}}"#)), "\(query)")
        #expect(query.contains(Self.event("put", #"{"path":"/5","data":[1,2]}"#)), "\(query)")
        let shallow = try await collect("/arr.json?shallow=true", setup: setup) { _ in }
        #expect(shallow.hasPrefix(Self.event("put", #"{"path":"/","data":{"0":true,"1":true,"2":true,"4":true}}"#)), "\(shallow)")
    }

    @Test func putPatchAndWritesAboveAndElsewhere() async throws {
        let events = try await collect(
            "/room.json",
            setup: { client in try await client.call(.put, "/room.json", #"{"a":1}"#) },
            actions: { client in
                try await client.call(.put, "/room/b.json", #"{"c":true}"#)
                try await client.call(.patch, "/room.json", #"{"a":2,"d/e":"x"}"#)
                try await client.call(.put, "/elsewhere.json", "1")
                try await client.call(.patch, "/.json", #"{"room/f":3,"other":1}"#)
                try await client.call(.put, "/.json", #"{"room":{"z":1},"other":1}"#)
                try await client.call(.put, "/.json", #"{"room":{"z":1},"other":2}"#)
                try await client.call(.delete, "/room.json")
            }
        )
        let expected = [
            Self.event("put", #"{"path":"/","data":{"a":1}}"#),
            Self.event("put", #"{"path":"/b","data":{"c":true}}"#),
            Self.event("patch", #"{"path":"/","data":{"a":2,"d/e":"x"}}"#),
            Self.event("patch", #"{"path":"/","data":{"f":3}}"#),
            Self.event("put", #"{"path":"/","data":{"z":1}}"#),
            Self.event("put", #"{"path":"/","data":null}"#),
            Self.event("cancel", "null"),
        ].joined()
        #expect(events == expected)
    }

    /// An update's `a/.priority` reaches a `format=export` stream as written, and a plain stream not at
    /// all (it carries no priorities); the values of the same update reach both.
    @Test func aPriorityFromAnUpdateReachesExportStreamsOnly() async throws {
        let setup: @Sendable (any TestClientProtocol) async throws -> Void = { client in
            try await client.call(.put, "/room.json", #"{"a":{"x":1}}"#)
        }
        let actions: @Sendable (any TestClientProtocol) async throws -> Void = { client in
            try await client.call(.patch, "/room.json", #"{"a/.priority":5}"#)
            // b does not exist: its priority resolves to none.
            try await client.call(.patch, "/room.json", #"{"c":2,"b/.priority":"p"}"#)
        }
        let plain = try await collect("/room.json", setup: setup, actions: actions)
        #expect(plain == [
            Self.event("put", #"{"path":"/","data":{"a":{"x":1}}}"#),
            Self.event("patch", #"{"path":"/","data":{"c":2}}"#),
            Self.event("cancel", "null"),
        ].joined())
        let export = try await collect("/room.json?format=export", setup: setup, actions: actions)
        #expect(export == [
            Self.event("put", #"{"path":"/","data":{"a":{"x":1}}}"#),
            Self.event("patch", #"{"path":"/","data":{"a/.priority":5}}"#),
            Self.event("patch", #"{"path":"/","data":{"c":2,"b/.priority":null}}"#),
            Self.event("cancel", "null"),
        ].joined())
    }

    @Test func queryStreamsKeepTheirWindowExact() async throws {
        let server = TestServer(emulator: true)
        let events = try await collect(
            "/top.json?orderBy=%22$key%22&limitToLast=2",
            server: server,
            setup: { client in try await client.call(.put, "/top.json", #"{"a":1,"b":2}"#) },
            actions: { client in
                try await client.call(.put, "/top/c.json", "3")  // enters; a leaves
                try await client.call(.put, "/top/a.json", "9")  // outside the window: nothing
                try await client.call(.put, "/top/c.json", "4")  // changes inside
                try await client.call(.delete, "/top/c.json")  // leaves; a comes back whole
            }
        )
        let expected = [
            Self.event("put", #"{"path":"/","data":{"a":1,"b":2}}"#),
            Self.event("put", #"{"path":"/a","data":null}"#),
            Self.event("put", #"{"path":"/c","data":3}"#),
            Self.event("put", #"{"path":"/c","data":4}"#),
            Self.event("put", #"{"path":"/c","data":null}"#),
            Self.event("put", #"{"path":"/a","data":9}"#),
            Self.event("cancel", "null"),
        ].joined()
        #expect(events == expected)
    }

    @Test func keepAliveIsSentOnIdleStreams() async throws {
        // The default interval (30 s) on the server's clock, which the test advances: one keep-alive.
        let server = TestServer(emulator: true)
        let events = try await collect("/idle.json", server: server) { _ in
            let database = try await server.registry.database("default")
            await server.advance(by: .seconds(29))
            #expect(database.hub.broadcastCount == 0)
            await server.advance(by: .seconds(1))
            try await eventually { database.hub.broadcastCount == 1 }
        }
        let expected = [
            Self.event("put", #"{"path":"/","data":null}"#),
            Self.event("keep-alive", "null"),
            Self.event("cancel", "null"),
        ].joined()
        #expect(events == expected)
    }

    @Test func streamsNeedReadAccessAtConnectTime() async throws {
        try await TestServer().run { client, _ async throws in
            let reply = try await client.call(.get, "/x.json", headers: Self.stream)
            #expect(reply.status == .unauthorized)
            #expect(reply.error == "Permission denied")
        }
    }

    /// The read rules are checked on the tree the first event is taken from; refused, nothing is
    /// registered (a rules change between the request's check and the registration).
    @Test func aStreamIsCheckedOnTheTreeItsFirstEventComesFrom() async throws {
        let hub = SubscriptionHub(bufferLimit: 4)
        let key = ListenKey(path: try DatabasePath("/a"))
        let tree = Node.empty.setting(.leaf(.string("secret")), at: try DatabasePath("/a"))
        let checked = Mutex<Node?>(nil)
        #expect(hub.subscribe(key, identity: .anonymous, snapshot: { tree }, canRead: { root in
            checked.withLock { $0 = root }
            return false
        }) == nil)
        #expect(checked.withLock { $0 } == tree)
        #expect(hub.listenerCount == 0)
        let allowed = try #require(hub.subscribe(key, identity: .anonymous, snapshot: { tree }, canRead: { _ in true }))
        #expect(hub.listenerCount == 1)
        var events = allowed.events.makeAsyncIterator()
        #expect(await events.next().map { String(buffer: $0) }?.contains("secret") == true)
    }

    @Test func slowConsumersAreCutOffNotBuffered() async throws {
        let hub = SubscriptionHub(bufferLimit: 4)
        let key = ListenKey(path: try DatabasePath("/a"))
        let subscription = try #require(hub.subscribe(key, identity: .anonymous) { .empty })
        var root = Node.empty
        for i in 0..<10 {
            let path = try DatabasePath("/a/k\(i)")
            let after = root.setting(.leaf(.number(Double(i))), at: path)
            hub.publish([Change(path: path, written: .node(.leaf(.number(Double(i)))), before: root, after: after)]) {}
            root = after
        }
        var received = 0
        for await _ in subscription.events { received += 1 }
        #expect(received == 4)  // the initial put plus three events, then the stream ended
        #expect(hub.listenerCount == 0)
    }

    @Test func listenersWithTheSameQueryShareOneEncoding() throws {
        // Events are a pure function of (key, change): computed once per group, not per listener.
        let key = ListenKey(path: try DatabasePath("/a"))
        let before = Node.empty
        let after = before.setting(.leaf(.number(1)), at: try DatabasePath("/a/b"))
        let change = Change(path: try DatabasePath("/a/b"), written: .node(.leaf(.number(1))), before: before, after: after)
        #expect(SubscriptionHub.events(for: key, change: change) == [.put(path: try DatabasePath("/b"), data: .leaf(.number(1)))])
        let unrelated = ListenKey(path: try DatabasePath("/z"))
        #expect(SubscriptionHub.events(for: unrelated, change: change).isEmpty)
    }
}

/// A value written by one task and read by another after it finished.
final class SendableBox<Value: Sendable>: @unchecked Sendable {
    // Safe: written once by a child task before `waitForAll()` returns, read only after.
    var value: Value

    init() where Value == String {
        value = ""
    }
}
