import Foundation
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// An in-memory transport whose "server" answers each request with a scripted status: the SDK's
/// engine runs without a network or a real server.
final class ScriptedTransport: WebSocketTransport {
    /// The status for a request (action and body); `ok` when nil.
    let answer: @Sendable (_ action: String, _ body: JSONValue) -> String?
    let requests = Mutex<[String]>([])
    /// Pushes a frame from the "server" on the latest connection.
    let push = Mutex<(@Sendable (String) -> Void)?>(nil)

    init(answer: @escaping @Sendable (_ action: String, _ body: JSONValue) -> String?) {
        self.answer = answer
    }

    func connect(
        host: String, port: Int, secure: Bool, path: String,
        onFrame: @escaping @Sendable (String) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        let connection = Connection(transport: self, onFrame: onFrame)
        push.withLock { $0 = onFrame }
        // The handshake comes first, from the event loop in real life: here from another task.
        Task { onFrame(#"{"t":"c","d":{"t":"h","d":{"ts":\#(Int(Date().timeIntervalSince1970 * 1000)),"v":"5","h":"local","s":"s1"}}}"#) }
        return connection
    }

    struct Connection: WebSocketConnection {
        let transport: ScriptedTransport
        let onFrame: @Sendable (String) -> Void

        func send(_ text: String) {
            guard let json = try? JSONValue(parsing: text), case .number(let number)? = json["d"]?["r"],
                  case .string(let action)? = json["d"]?["a"] else { return }
            let body = json["d"]?["b"] ?? .null
            transport.requests.withLock { $0.append(action) }
            let status = transport.answer(action, body) ?? "ok"
            let data = action == "q" && status == "ok" ? "{}" : #""""#
            let onFrame = self.onFrame
            Task { onFrame(#"{"t":"d","d":{"r":\#(Int(number)),"b":{"s":"\#(status)","d":\#(data)}}}"#) }
        }

        func close() {}
    }
}

@Suite struct ScriptedServerTests {
    @Test func aRevokedCredentialIsReplacedWithAFreshTokenFromTheProvider() async throws {
        let transport = ScriptedTransport { _, _ in nil }
        let database = try Hearth.Database(url: "http://scripted.local:1?ns=demo", transport: transport, clock: FastClock())
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        let issued = Mutex(0)
        database.authTokenProvider = { "header.payload.\(issued.withLock { $0 += 1; return $0 })" }
        database.reference(withPath: "x").observe(.value) { _ in }
        await waitUntil { transport.requests.withLock { $0.contains("q") } }
        #expect(transport.requests.withLock { $0.filter { $0 == "auth" }.count } == 1)
        transport.push.withLock { $0 }?(#"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"Auth token is expired."}}}"#)
        await waitUntil { transport.requests.withLock { $0.filter { $0 == "auth" }.count } == 2 }
        #expect(issued.withLock { $0 } == 2)
        database.goOffline()
    }

    @Test func aTransactionGivesUpAfterTwentyFiveStaleRetries() async throws {
        // Every transaction write is refused as stale.
        let transport = ScriptedTransport { action, body in action == "p" && body["h"] != nil ? "datastale" : nil }
        let database = try Hearth.Database(url: "http://scripted.local:1?ns=demo", transport: transport, clock: FastClock())
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        let runs = Mutex(0)
        await #expect(throws: DatabaseError(.maxRetries, "The transaction had too many retries")) {
            _ = try await database.reference(withPath: "hot").runTransactionBlock { data in
                runs.withLock { $0 += 1 }
                data.value = 1
                return .success(withValue: data)
            }
        }
        // The first run and 25 retries.
        #expect(runs.withLock { $0 } == 26)
        #expect(transport.requests.withLock { $0.filter { $0 == "p" }.count } == 26)
        database.goOffline()
    }

    @Test func aSecondTransactionAtTheSameLocationWaitsForTheFirstToEnd() async throws {
        // The first transaction's write is stale three times; the second may go only after it commits.
        let sent = Mutex<[String]>([])
        let transport = ScriptedTransport { action, body in
            guard action == "p", body["h"] != nil, case .string(let value)? = body["d"] else { return nil }
            return sent.withLock { sent in
                sent.append(value)
                return value == "first" && sent.count <= 3 ? "datastale" : nil
            }
        }
        let database = try Hearth.Database(url: "http://scripted.local:1?ns=demo", transport: transport, clock: FastClock())
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        async let first = database.reference(withPath: "hot").runTransactionBlock { data in
            data.value = "first"
            return .success(withValue: data)
        }
        await waitUntil { sent.withLock { !$0.isEmpty } }
        async let second = database.reference(withPath: "hot/child").runTransactionBlock { data in
            data.value = "second"
            return .success(withValue: data)
        }
        _ = try await (first, second)
        #expect(sent.withLock { $0 } == ["first", "first", "first", "first", "second"])
        database.goOffline()
    }

    @Test func aWriteRefusedByTheServerFailsWithItsStatus() async throws {
        let transport = ScriptedTransport { action, _ in action == "m" ? "invalid_data" : nil }
        let database = try Hearth.Database(url: "http://scripted.local:1?ns=demo", transport: transport, clock: FastClock())
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        await #expect(throws: DatabaseError.self) {
            do {
                try await database.reference(withPath: "x").updateChildValues(["a": 1])
            } catch let error as DatabaseError {
                #expect(error.code == .invalidData)
                throw error
            }
        }
        try await database.reference(withPath: "x").setValue(2)
        database.goOffline()
    }
}

@Suite struct OfflineReadTests {
    @Test func aReadWhileOfflineWithoutCachedDataFailsAfterTheConnectTimeout() async throws {
        let database = try Hearth.Database(url: "http://127.0.0.1:1?ns=demo", transport: ScriptedTransport { _, _ in nil }, clock: FastClock())
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        database.goOffline()
        await #expect(throws: DatabaseError(.disconnected, "The client is offline and has no complete cached data for this location")) {
            _ = try await database.reference(withPath: "nothing").getData()
        }
        // A location with a complete local value is read without the server.
        withoutWaiting { database.reference(withPath: "local").setValue("here") }
        #expect(try await database.reference(withPath: "local").getData().value as? String == "here")
    }
}
