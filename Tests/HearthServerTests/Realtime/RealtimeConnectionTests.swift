import Foundation
import HearthAccess
import HearthCore
@testable import HearthEngine
import HearthProtocol
import HearthRealtimeClient
import HearthRules
import HearthStorage
@testable import HearthServer
import Synchronization
import Testing

/// WebSocket behaviour that transcripts cannot express: large messages split into fragments, tokens
/// expiring on an open connection, idle connections dropped, and slow readers cut off.
@Suite struct RealtimeConnectionTests {
    static func request(_ number: Int, _ action: String, _ body: String) -> String {
        #"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#
    }

    @Test func longMessagesTravelAsFragmentCountsAndChunks() async throws {
        try await TestServer(emulator: true).runLive { _, port, _ in
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            // 40,000 characters including astral scalars, which must not be cut in half.
            let text = String(repeating: "ab😀", count: 10_000)
            try await connection.send(Self.request(1, "p", #"{"p":"/big","d":"\#(text)"}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#)
            try await connection.send(Self.request(2, "g", #"{"p":"/big","q":{}}"#))
            let count = try #require(try await connection.receiveFrame())
            let expected = #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":"\#(text)"}}}"#
            #expect(count == String(Int((Double(expected.utf16.count) / 16_384).rounded(.up))))
            var joined = ""
            for _ in 0..<Int(count)! {
                let chunk = try #require(try await connection.receiveFrame())
                #expect(chunk.utf16.count <= 16_384)
                joined += chunk
            }
            #expect(joined == expected)
            await connection.close()
        }
    }

    @Test func listensOfTheSamePathAndQueryShareOneGroupAndOneEncoding() async throws {
        try await TestServer(emulator: true).runLive { _, port, registry in
            let database = try await registry.database("demo")
            var connections: [WireConnection] = []
            for _ in 0..<3 {
                let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
                _ = try await connection.nextMessage()
                try await connection.send(Self.request(1, "q", #"{"p":"/scores","q":{"l":2,"vf":"r","i":".value"},"t":1,"h":""}"#))
                #expect(try await connection.nextMessage()?.contains(#""s":"ok""#) == true)
                connections.append(connection)
            }
            #expect(database.realtime.listenCount == 3)
            #expect(database.realtime.groupCount == 1)
            _ = try await database.write(WriteRequest(.set(try DatabasePath("/scores/a"), .number(1)), identity: .admin))
            // Each gets the same bytes: the push was encoded once for tag 1.
            var received: Set<String> = []
            for connection in connections { received.insert(try #require(try await connection.nextMessage())) }
            #expect(received == [#"{"t":"d","d":{"a":"d","b":{"p":"scores","d":{"a":1},"t":1}}}"#])
            for connection in connections { await connection.close() }
        }
    }

    @Test func onDisconnectWritesOfConnectionsClosedByAShutdownAreStored() async throws {
        let storage = InMemoryStorage()
        try await TestServer(emulator: true).runLive(storage: storage) { _, port, _ in
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            try await connection.send(Self.request(1, "o", #"{"p":"/presence/ada","d":"offline"}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#)
            // The test ends with the connection open: the server shuts down, closing it.
        }
        let stored = try await storage.open(namespace: "demo").load()
        #expect(stored.root.child(at: try DatabasePath("/presence/ada")) == .leaf(.string("offline")))
    }

    @Test func anExpiringTokenIsRevokedWithAcAndItsListensWithC() async throws {
        let server = TestServer()
        try await server.runLive { _, port, registry in
            let database = try await registry.database("demo")
            try await database.replaceRules(try .init(source: #"{"rules": {"notes": {".read": "auth != null"}}}"#))
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            // Valid for a minute of the server's clock, which stands still until the test advances it.
            let token = try server.tokens.mint(uid: "ada", claims: [], expiresIn: 60, now: server.wallDate)
            try await connection.send(Self.request(1, "auth", #"{"cred":"\#(token)"}"#))
            #expect(try await connection.nextMessage()?.contains(#""s":"ok""#) == true)
            try await connection.send(Self.request(2, "q", #"{"p":"/notes","h":""}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":{}}}}"#)
            // Half the lifetime passes: still authenticated.
            await server.advance(by: .seconds(30))
            try await connection.send(Self.request(3, "g", #"{"p":"/notes","q":{}}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":null}}}"#)
            // The token expires: the connection is told (`ac`), then its listen is revoked (`c`).
            await server.advance(by: .seconds(30))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"Auth token is expired."}}}"#)
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"a":"c","b":{"p":"notes"}}}"#)
            try await connection.send(Self.request(4, "g", #"{"p":"/notes","q":{}}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":4,"b":{"s":"permission_denied","d":"Permission denied"}}}"#)
            await connection.close()
        }
    }

    /// A compare-and-set (`p` with `h`) tells nothing past the rules: a client that may write a location
    /// but not read it is refused whether its hash is right or not, and a failed one resends the current
    /// value only to an unfiltered listen (an untagged `q` may carry a filter its query rules allow alone).
    @Test func compareAndSetTellsNothingPastTheRules() async throws {
        let server = TestServer()
        try await server.runLive { _, port, registry in
            let database = try await registry.database("demo")
            try await database.replaceRules(try .init(source: #"""
                {"rules": {
                  "dropbox": {"$uid": {".write": "auth.uid === $uid"}},
                  "baskets": {
                    ".read": "auth.uid != null && query.orderByChild == 'owner' && query.equalTo == auth.uid",
                    ".indexOn": "owner",
                    "$b": {".write": "newData.child('owner').val() == auth.uid"}
                  }
                }}
                """#))
            _ = try await database.write(WriteRequest(.set(try DatabasePath("/dropbox/ada"), .string("hidden")), identity: .admin))
            _ = try await database.write(WriteRequest(.set(try DatabasePath("/baskets/bob"), try JSONValue(parsing: #"{"owner":"bob","item":"secret"}"#)), identity: .admin))
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            let token = try server.tokens.mint(uid: "ada", claims: [], expiresIn: 3600, now: server.wallDate)
            try await connection.send(Self.request(1, "auth", #"{"cred":"\#(token)"}"#))
            #expect(try await connection.nextMessage()?.contains(#""s":"ok""#) == true)
            // A right and a wrong guess of the hidden value: the same refusal.
            let right = Node.leaf(.string("hidden")).hash
            for (number, hash) in [(2, right), (3, "wrong")] {
                try await connection.send(Self.request(number, "p", #"{"p":"/dropbox/ada","d":"hidden","h":"\#(hash)"}"#))
                #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":\#(number),"b":{"s":"permission_denied","d":"Permission denied"}}}"#)
            }
            // A filtered listen without a tag, which only its query's rules allow, then a compare-and-set
            // on another user's basket, which the write rules allow: refused (the basket may not be read
            // whole), and the basket is not sent (it went to that listen as a `datastale`'s current value).
            /// The messages up to and with the reply to request `number`.
            func messages(untilReplyTo number: Int) async throws -> [String] {
                var received: [String] = []
                while let message = try await connection.nextMessage() {
                    received.append(message)
                    if message.contains(#""r":\#(number),"#) { break }
                }
                return received
            }
            try await connection.send(Self.request(4, "q", #"{"p":"/baskets","q":{"i":"owner","sp":"ada","ep":"ada"},"h":""}"#))
            #expect(try await messages(untilReplyTo: 4).last?.contains(#""s":"ok""#) == true)
            try await connection.send(Self.request(5, "p", #"{"p":"/baskets/bob","d":{"owner":"ada"},"h":"x"}"#))
            let answers = try await messages(untilReplyTo: 5)
            #expect(!answers.joined().contains("secret"), "\(answers)")
            #expect(answers.last?.contains(#""s":"permission_denied""#) == true, "\(answers)")
            await connection.close()
        }
    }

    @Test func silentConnectionsAreClosedAfterTheIdleTimeoutAndKeepAlivesPreventIt() async throws {
        // The default timeout (120 s); the reaper sweeps every 30 s of the server's clock, which the test
        // drives: nothing here waits for real time to pass.
        let server = TestServer(emulator: true)
        try await server.runLive { _, port, _ in
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            let session = try #require(try server.realtime.sessions.all.first)
            // At 60 s the client sends a keep-alive ("0"), and the server notes it.
            await server.advance(to: .seconds(60))
            try await connection.sendFrame("0")
            try await eventually { session.lastActivityNanoseconds >= 60_000_000_000 }
            // At 150 s it has been silent for 90 s: the sweeps at 90, 120 and 150 s leave it open (without
            // the keep-alive, the one at 120 s would have closed it). A ping is still answered.
            await server.advance(to: .seconds(150))
            try await server.idleSweep(reaching: .seconds(150))
            try await connection.send(#"{"t":"c","d":{"t":"p","d":{}}}"#)
            #expect(try await connection.nextMessage() == #"{"t":"c","d":{"t":"o","d":null}}"#)
            // Reading that answer, the client answered the server's WebSocket pings of 60, 120 and 150 s
            // with pongs, which count as activity when they arrive: a second ping's answer comes after
            // them on the same connection, so they are counted at 150 s, not after the clock moves on
            // (a pong counted at 300 s kept the connection open under load).
            try await connection.send(#"{"t":"c","d":{"t":"p","d":{}}}"#)
            #expect(try await connection.nextMessage() == #"{"t":"c","d":{"t":"o","d":null}}"#)
            // Then silence from 150 s. The client reads nothing until the end, so it answers none of the
            // server's pings (from 210 s), as a dead client would not: the sweep at 300 s (the first a
            // whole timeout later) closes it. (Reading meanwhile, it would answer the ping of 210 s, and
            // the pong, counted at whatever time the clock had reached, could keep it open: a live client.)
            let sessions = try server.realtime.sessions
            await server.advance(to: .seconds(300))
            try await server.idleSweep(reaching: .seconds(300))
            try await eventually { sessions.count == 0 }
            #expect(try await connection.nextMessage() == nil)
        }
    }

    /// A client that only receives (a live view) never sends a keep-alive: the SDKs reset their timer
    /// on every frame that arrives too. After half the timeout without a frame from it, the server pings;
    /// a live client's WebSocket answers with a pong, which keeps it open. (One that does not answer is
    /// closed at the timeout: `silentConnectionsAreClosedAfterTheIdleTimeoutAndKeepAlivesPreventIt`.)
    @Test func aClientThatAnswersPingsIsNotSilent() async throws {
        let server = TestServer(emulator: true)
        try await server.runLive { _, port, registry in
            let database = try await registry.database("demo")
            let listener = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await listener.nextMessage()
            try await listener.send(Self.request(1, "q", #"{"p":"/tick","h":""}"#))
            _ = try await listener.nextMessage()
            try await eventually { database.realtime.listenCount == 1 }
            let session = try #require(try server.realtime.sessions.all.first)
            // The client reads (and so answers pings) but sends nothing of its own.
            let received = Mutex<[String]>([])
            let reading = UncheckedSendable(listener)
            let reader = Task {
                while let message = try await reading.value.receive() { received.withLock { $0.append(message) } }
            }
            defer { reader.cancel() }
            for second in stride(from: 30, through: 300, by: 30) {
                await server.advance(to: .seconds(second))
                try await server.idleSweep(reaching: .seconds(second))
                // A sweep that finds it quiet for half the timeout (or more: the sweeps come every 30 s)
                // pings it. Before the clock moves on, the pong of any ping due has come back (so no
                // sweep finds it silent for the whole timeout): it is at most 60 s behind.
                try await eventually { session.lastActivityNanoseconds > Int64(second - 60) * 1_000_000_000 - 1_000_000 }
            }
            _ = try await database.write(WriteRequest(.set(try DatabasePath("tick"), .number(1)), identity: .admin))
            try await eventually { received.withLock { $0.contains { $0.contains(#""d":1"#) } } }
            #expect(database.realtime.listenCount == 1)
            await listener.close()
        }
    }

    /// A failed transaction's resend of the current value is the value as its batch left it: a plain
    /// write right behind it (pushed already) is not undone in the client's cache by an older value.
    @Test func aFailedTransactionsResendIsNotOlderThanWhatWasPushed() async throws {
        let server = TestServer(emulator: true)
        try await server.runLive { _, port, _ in
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            try await connection.send(Self.request(1, "p", #"{"p":"/c","d":1}"#))
            try await connection.send(Self.request(2, "q", #"{"p":"/c","h":""}"#))
            var seen: [String] = []
            while seen.filter({ $0.contains(#""r":2"#) }).isEmpty, let message = try await connection.nextMessage() { seen.append(message) }
            // A write large enough to keep the writer busy while the next two queue behind it, together.
            let large = "{" + (0..<20_000).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"
            for round in 0..<5 {
                // A compare-and-set with a stale hash, and a plain write right behind it (one batch).
                let value = 100 + round
                try await connection.send(Self.request(9 + 2 * round + 1000, "p", #"{"p":"/large","d":\#(large)}"#))
                try await connection.send(Self.request(10 + 2 * round, "p", #"{"p":"/c","d":1,"h":"stale"}"#))
                try await connection.send(Self.request(11 + 2 * round, "p", #"{"p":"/c","d":\#(value)}"#))
                var pushes: [String] = []
                while true {
                    let message = try #require(try await connection.nextMessage())
                    if message.contains(#""a":"d""#) { pushes.append(message) }
                    if message.contains(#""r":\#(11 + 2 * round),"#) { break }
                }
                #expect(pushes.last?.contains(#""d":\#(value)}"#) == true, "round \(round): \(pushes)")
            }
            await connection.close()
        }
    }

    /// A client that reconnects (`ls=` its old session) gets its old connection's onDisconnect writes
    /// run before its new requests, even when the old socket is backed up: the old presence cleanup must
    /// not undo the new connection's presence.
    @Test func aReconnectingClientsOldOnDisconnectRunsBeforeItsNewWrites() async throws {
        let server = TestServer(emulator: true) { $0.realtimeOutboundLimit = 256 << 20 }
        try await server.runLive { _, port, registry in
            let database = try await registry.database("demo")
            let old = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            let handshake = try #require(try await old.nextMessage())
            let session = try #require(try JSONValue(parsing: handshake)["d"]?["d"]?["s"]?.stringValue)
            try await old.send(Self.request(1, "o", #"{"p":"/pres/a","d":null}"#))
            try await old.send(Self.request(2, "p", #"{"p":"/pres/a","d":true}"#))
            try await old.send(Self.request(3, "q", #"{"p":"/feed","h":""}"#))
            var seen = 0
            while seen < 3, let message = try await old.nextMessage() { if message.contains(#""r":"#) { seen += 1 } }
            // The old client stops reading while pushes back its socket up (a dead mobile connection).
            let value = JSONValue.string(String(repeating: "x", count: 64 * 1024))
            for index in 0..<400 {
                _ = try await database.write(WriteRequest(.set(try DatabasePath("feed/\(index)"), value), identity: .admin))
            }
            let new = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo&ls=\(session)")
            _ = try await new.nextMessage()
            try await new.send(Self.request(1, "o", #"{"p":"/pres/a","d":null}"#))
            try await new.send(Self.request(2, "p", #"{"p":"/pres/a","d":true}"#))
            var answered = 0
            while answered < 2, let message = try await new.nextMessage() { if message.contains(#""r":"#) { answered += 1 } }
            // Past the polite close's two seconds: the old connection's cleanup came first, if at all.
            try await Task.sleep(for: .seconds(2.5))
            #expect(database.snapshot().child(at: try DatabasePath("pres/a")) == .leaf(.bool(true)))
            await new.close()
            await old.close()
        }
    }

    /// One message larger than the slow-consumer limit (a read of a large location) is delivered;
    /// the limit is on what waits behind it.
    @Test func aMessageLargerThanTheQueueLimitIsDelivered() async throws {
        let server = TestServer(emulator: true) { $0.realtimeOutboundLimit = 256 * 1024 }
        try await server.runLive { _, port, registry in
            let database = try await registry.database("demo")
            let big = JSONValue.string(String(repeating: "y", count: 600 * 1024))
            _ = try await database.write(WriteRequest(.set(try DatabasePath("big"), big), identity: .admin))
            let reader = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await reader.nextMessage()
            try await reader.send(Self.request(1, "g", #"{"p":"/big","q":{}}"#))
            let answer = try #require(try await reader.nextMessage())
            #expect(answer.count > 600 * 1024, "\(answer.prefix(200))")
            #expect(answer.hasPrefix(#"{"t":"d","d":{"r":1,"b":{"s":"ok","d":"yyy"#))
            await reader.close()
        }
    }

    @Test func aClientThatDoesNotReadIsDisconnectedOnceItsQueueIsFull() async throws {
        let server = TestServer(emulator: true) { $0.realtimeOutboundLimit = 256 * 1024 }
        try await server.runLive { _, port, registry in
            let database = try await registry.database("demo")
            let reader = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await reader.nextMessage()
            try await reader.send(Self.request(1, "q", #"{"p":"/feed","h":""}"#))
            #expect(try await reader.nextMessage() == #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":{}}}}"#)
            try await eventually { database.realtime.listenCount == 1 }
            // The client stops reading; pushes fill the socket buffers, then back up past the 256 KB limit.
            let value = JSONValue.string(String(repeating: "x", count: 64 * 1024))
            for index in 0..<2048 {
                _ = try await database.write(WriteRequest(.set(try DatabasePath("feed/\(index)"), value), identity: .admin))
                if database.realtime.listenCount == 0 { break }
            }
            try await eventually { database.realtime.listenCount == 0 }
            #expect(database.realtime.listenCount == 0)
            await reader.close()
        }
    }

    /// A write whose string holds half of a surrogate pair, as `JSON.stringify` writes a string cut inside
    /// an emoji, is refused on its own (`invalid_data`, as a PUT of it gets 400); the connection stays,
    /// and the writes after it go through. (Closing it made the SDK resend the write on every reconnect.)
    @Test func aWriteWithHalfASurrogatePairIsRefusedAndTheConnectionStays() async throws {
        try await TestServer(emulator: true).runLive { _, port, registry in
            let database = try await registry.database("demo")
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            try await connection.send(Self.request(1, "p", #"{"p":"/chat/m1","d":{"text":"hi \ud83d"}}"#))
            let refused = try #require(try await connection.nextMessage())
            #expect(refused.hasPrefix(#"{"t":"d","d":{"r":1,"b":{"s":"invalid_data","d":"Invalid data; "#), "\(refused)")
            try await connection.send(Self.request(2, "m", #"{"p":"/chat","d":{"m2/text":"\udc00 alone","m3/text":"ok"}}"#))
            #expect(try await connection.nextMessage()?.hasPrefix(#"{"t":"d","d":{"r":2,"b":{"s":"invalid_data""#) == true)
            try await connection.send(Self.request(3, "p", #"{"p":"/chat/m4","d":{"text":"a whole \ud83d\ude00"}}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":""}}}"#)
            #expect(database.snapshot().child(at: try DatabasePath("/chat")) == .empty.setting(.leaf(.string("a whole 😀")), at: try DatabasePath("m4/text")))
            // A frame that is not JSON for any other reason still ends the connection.
            try await connection.send(#"{"t":"d","d":{"r":4,"a":"p","b":{"p":"/x","d":1}"#)
            #expect(try await connection.nextMessage() == nil)
        }
    }
}

/// A value handed to one task that alone uses it from then on (a test's reading task).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
