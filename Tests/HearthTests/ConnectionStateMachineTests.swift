@testable import Hearth
import HearthCore
import Testing

/// The connection's protocol logic without a socket.
@Suite struct ConnectionStateMachineTests {
    static func decode(_ frame: String) throws -> (number: Int, action: String, body: JSONValue) {
        let json = try JSONValue(parsing: frame)
        guard case .number(let r)? = json["d"]?["r"], case .string(let a)? = json["d"]?["a"], let b = json["d"]?["b"] else {
            throw ProtocolViolation("not a request: \(frame)")
        }
        return (Int(r), a, b)
    }

    @Test func operationsMadeOfflineAreSentAfterTheHandshakeListensFirstThenWritesInOrder() throws {
        var machine = ConnectionStateMachine()
        #expect(machine.listen(token: 1, body: .object([("p", .string("/a")), ("h", .string(""))])) == nil)
        #expect(machine.enqueue(token: 2, action: "p", body: .object([("p", .string("/x")), ("d", .number(1))])) == nil)
        #expect(machine.enqueue(token: 3, action: "o", body: .object([("p", .string("/y")), ("d", .null)])) == nil)
        #expect(machine.enqueue(token: 4, action: "m", body: .object([("p", .string("/z")), ("d", .object([]))])) == nil)
        machine.connecting()
        let frames = try machine.receivedHandshake(timestamp: 5_000, sessionID: "s1", localTime: 4_000).map(Self.decode)
        #expect(frames.map(\.action) == ["s", "q", "p", "m", "o"])
        #expect(frames.map(\.number) == [1, 2, 3, 4, 5])
        #expect(machine.phase == .connected)
        #expect(machine.serverTimeOffset == 1_000)
        #expect(machine.connectionQuery(namespace: "demo") == "v=5&ns=demo&ls=s1")
        // Replies map back to tokens.
        #expect(machine.receivedResponse(number: 3, status: "ok", data: .string("")) == .completed(token: 2, status: "ok", data: .string("")))
        #expect(machine.receivedResponse(number: 2, status: "ok", data: .object([])) == .listen(token: 1, status: "ok", data: .object([])))
        #expect(machine.receivedResponse(number: 3, status: "ok", data: .string("")) == ConnectionStateMachine.Outcome.none)
    }

    @Test func aCredentialIsSentFirstAndTheSessionRestoredOnlyAfterItIsAccepted() throws {
        var machine = ConnectionStateMachine(authToken: "owner")
        _ = machine.listen(token: 1, body: .object([("p", .string("/a"))]))
        machine.connecting()
        let first = try machine.receivedHandshake(timestamp: 0, sessionID: "s", localTime: 0).map(Self.decode)
        #expect(first.map(\.action) == ["s", "gauth"])
        #expect(machine.phase == .authenticating)
        // A write made while authenticating waits too.
        #expect(machine.enqueue(token: 2, action: "p", body: .object([("p", .string("/b"))])) == nil)
        guard case .authenticated(let restore) = machine.receivedResponse(number: first[1].number, status: "ok", data: .null) else {
            Issue.record("expected authenticated")
            return
        }
        #expect(try restore.map(Self.decode).map(\.action) == ["q", "p"])
        #expect(machine.phase == .connected)
        // JWTs use `auth`.
        var jwt = ConnectionStateMachine(authToken: "a.b.c")
        jwt.connecting()
        #expect(try jwt.receivedHandshake(timestamp: 0, sessionID: "s", localTime: 0).map(Self.decode).map(\.action) == ["s", "auth"])
    }

    @Test func aLostConnectionFailsSentTransactionsAndResendsEverythingElse() throws {
        var machine = ConnectionStateMachine()
        machine.connecting()
        _ = machine.receivedHandshake(timestamp: 0, sessionID: "s1", localTime: 0)
        #expect(machine.listen(token: 1, body: .object([("p", .string("/a"))])) != nil)
        #expect(machine.enqueue(token: 2, action: "p", body: .object([("p", .string("/t")), ("h", .string(""))]), isTransaction: true) != nil)
        #expect(machine.enqueue(token: 3, action: "p", body: .object([("p", .string("/w"))])) != nil)
        #expect(machine.disconnected() == [2])
        #expect(machine.phase == .disconnected)
        machine.connecting()
        let frames = try machine.receivedHandshake(timestamp: 0, sessionID: "s2", localTime: 0).map(Self.decode)
        #expect(frames.map(\.action) == ["q", "p"])
        #expect(frames[1].body["p"] == .string("/w"))
        // Replies to requests of the old connection are not matched (numbers keep growing).
        #expect(frames.allSatisfy { $0.number > 4 })
    }

    @Test func backoffGrowsWithJitterUpToTheMaximumAndResetsAfterALongConnection() {
        var backoff = Backoff(random: { 1 })
        #expect(backoff.nextDelay() == 0)
        #expect(backoff.nextDelay() == 1_000)
        #expect(backoff.nextDelay() == 1_300)
        for _ in 0..<30 { _ = backoff.nextDelay() }
        #expect(backoff.nextDelay() == 30_000)
        backoff.connectionEnded(after: 5_000)
        #expect(backoff.nextDelay() == 30_000)
        backoff.connectionEnded(after: 31_000)
        #expect(backoff.nextDelay() == 0)
        var lowest = Backoff(random: { 0 })
        _ = lowest.nextDelay()
        #expect(abs(lowest.nextDelay() - 300) < 0.001)
    }

    @Test func serverFramesDecode() throws {
        #expect(try ServerFrame(parsing: #"{"t":"c","d":{"t":"h","d":{"ts":1700,"v":"5","h":"localhost","s":"abc"}}}"#)
            == .handshake(timestamp: 1700, sessionID: "abc", host: "localhost"))
        #expect(try ServerFrame(parsing: #"{"t":"d","d":{"a":"d","b":{"p":"posts/p1","d":3,"t":2}}}"#)
            == .overwrite(path: try DatabasePath("/posts/p1"), data: .number(3), tag: 2))
        #expect(try ServerFrame(parsing: #"{"t":"d","d":{"a":"m","b":{"p":"posts","d":{"p3":null}}}}"#)
            == .merge(path: try DatabasePath("/posts"), items: [(try DatabasePath("p3"), .null)], tag: nil))
        #expect(try ServerFrame(parsing: #"{"t":"d","d":{"r":7,"b":{"s":"datastale","d":"no"}}}"#)
            == .response(number: 7, status: "datastale", data: .string("no")))
    }

    @Test func queriesEncodeAsTheServerReadsThem() throws {
        var query = Query(index: .child(try DatabasePath("score")))
        query.start = .init(value: .leaf(.number(3)), name: .key(Key("b")), inclusive: false)
        query.limit = .last(2)
        let object = try #require(ClientWire.queryObject(query))
        #expect(object.jsonText == #"{"i":"score","sp":3,"sn":"b","sin":false,"l":2,"vf":"r"}"#)
        #expect(ClientWire.queryObject(.all) == nil)
    }
}
