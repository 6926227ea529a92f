import Foundation
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// An in-memory transport that passes the "server's" frames in batches, as the NIO transport passes
/// the frames of one socket read: nothing is answered until a test sends a batch.
final class BatchingTransport: WebSocketTransport {
    /// The requests the client sent: their numbers and actions, in order.
    let requests = Mutex<[(number: Int, action: String)]>([])
    let deliver = Mutex<(@Sendable ([String]) -> Void)?>(nil)

    func connect(
        host: String, port: Int, secure: Bool, path: String,
        onFrame: @escaping @Sendable (String) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        try await connect(host: host, port: port, secure: secure, path: path, onFrames: { for frame in $0 { onFrame(frame) } }, onClose: onClose)
    }

    func connect(
        host: String, port: Int, secure: Bool, path: String,
        onFrames: @escaping @Sendable ([String]) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        deliver.withLock { $0 = onFrames }
        let handshake = #"{"t":"c","d":{"t":"h","d":{"ts":\#(Int(Date().timeIntervalSince1970 * 1000)),"v":"5","h":"local","s":"s1"}}}"#
        Task { onFrames([handshake]) }
        return Connection(transport: self)
    }

    /// The number of the first request with `action`, once the client has sent one.
    func number(of action: String) -> Int? {
        requests.withLock { $0.first { $0.action == action }?.number }
    }

    /// Passes `frames` to the client in one batch.
    func send(_ frames: [String]) {
        deliver.withLock { $0 }?(frames)
    }

    static func answer(_ number: Int, data: String = #""""#) -> String {
        #"{"t":"d","d":{"r":\#(number),"b":{"s":"ok","d":\#(data)}}}"#
    }

    static func put(_ path: String, _ data: String) -> String {
        #"{"t":"d","d":{"a":"d","b":{"p":"\#(path)","d":\#(data)}}}"#
    }

    struct Connection: WebSocketConnection {
        let transport: BatchingTransport

        func send(_ text: String) {
            guard let json = try? JSONValue(parsing: text), case .number(let number)? = json["d"]?["r"],
                  case .string(let action)? = json["d"]?["a"] else { return }
            transport.requests.withLock { $0.append((Int(number), action)) }
        }

        func close() {}
    }
}

@Suite struct FrameBatchTests {
    /// The frames of one batch are handled in order and their callbacks run together, after the batch:
    /// events, and the completion of a write acknowledged in the same batch as another change.
    @Test func framesThatArriveTogetherRaiseTheirEventsAndCompletionsInOrder() async throws {
        let transport = BatchingTransport()
        let database = try Hearth.Database(url: "http://batch.local:1?ns=demo", transport: transport, clock: FastClock())
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        let events = Mutex<[String]>([])
        let list = database.reference(withPath: "list")
        list.observe(.childAdded) { snapshot in events.withLock { $0.append("+\(snapshot.key)") } }
        list.observe(.childRemoved) { snapshot in events.withLock { $0.append("-\(snapshot.key)") } }
        await waitUntil { transport.number(of: "q") != nil }
        let listen = try #require(transport.number(of: "q"))
        transport.send([BatchingTransport.put("list", #"{"a":1,"b":2}"#), BatchingTransport.answer(listen, data: "{}")])
        await waitUntil { events.withLock { $0.count } == 2 }

        let acknowledged = Mutex<[String]>([])
        list.child("c").setValue(3) { error, _ in
            // Runs after the batch that acknowledges it: the removal in that batch has been raised.
            acknowledged.withLock { $0.append(error == nil ? "ok" : "\(error!)") }
            events.withLock { $0.append("ack c") }
        }
        await waitUntil { transport.number(of: "p") != nil }
        let write = try #require(transport.number(of: "p"))
        // As a server sends them: another client's removal, the echo of the write, its acknowledgement,
        // another client's addition.
        transport.send([
            BatchingTransport.put("list/a", "null"), BatchingTransport.put("list/c", "3"), BatchingTransport.answer(write),
            BatchingTransport.put("list/d", "4"),
        ])
        await waitUntil { events.withLock { $0.count } == 6 }
        #expect(events.withLock { $0 } == ["+a", "+b", "+c", "-a", "ack c", "+d"])
        #expect(acknowledged.withLock { $0 } == ["ok"])
        database.goOffline()
    }
}
