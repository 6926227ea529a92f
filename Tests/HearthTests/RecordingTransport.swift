import Foundation
@testable import Hearth
import Synchronization

/// The NIO transport, recording every frame the client sends and able to cut the connection as a
/// network failure would (the client then reconnects on its own).
final class RecordingTransport: WebSocketTransport {
    private let inner = NIOWebSocketTransport()
    private let state = Mutex<(sent: [String], connections: [any WebSocketConnection], connects: Int, failures: Int)>(([], [], 0, 0))

    var sent: [String] { state.withLock { $0.sent } }
    var connectCount: Int { state.withLock { $0.connects } }
    /// Attempts whose connect threw (refused, TLS handshake failed).
    var failedConnects: Int { state.withLock { $0.failures } }

    /// The actions (`q`, `p`, …) of the requests sent so far, with their bodies.
    var requests: [(action: String, body: String)] {
        sent.compactMap { frame in
            guard let json = try? JSONValueBridge.parse(frame), let action = json.action else { return nil }
            return (action, json.body)
        }
    }

    func clear() { state.withLock { $0.sent.removeAll() } }

    /// Closes the open sockets without telling the client anything first.
    func dropConnections() {
        let connections = state.withLock { state in
            defer { state.connections.removeAll() }
            return state.connections
        }
        for connection in connections { connection.close() }
    }

    func connect(
        host: String, port: Int, secure: Bool, path: String,
        onFrame: @escaping @Sendable (String) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        let connection: any WebSocketConnection
        do {
            connection = try await inner.connect(host: host, port: port, secure: secure, path: path, onFrame: onFrame, onClose: onClose)
        } catch {
            state.withLock { $0.failures += 1 }
            throw error
        }
        let recording = Recording(inner: connection, transport: self)
        state.withLock { $0.connections.append(connection); $0.connects += 1 }
        return recording
    }

    fileprivate func record(_ frame: String) { state.withLock { $0.sent.append(frame) } }

    private struct Recording: WebSocketConnection {
        let inner: any WebSocketConnection
        let transport: RecordingTransport

        func send(_ text: String) {
            transport.record(text)
            inner.send(text)
        }

        func close() { inner.close() }
    }
}

import HearthCore

/// Reads the action and body of a request frame.
enum JSONValueBridge {
    struct Request {
        var action: String?
        var body: String
    }

    static func parse(_ frame: String) throws -> Request {
        let json = try JSONValue(parsing: frame)
        var action: String?
        if case .string(let a)? = json["d"]?["a"] { action = a }
        return Request(action: action, body: json["d"]?["b"]?.jsonText ?? "")
    }
}

/// A clock that runs a thousand times faster than the wall clock: reconnect delays and the 45 s
/// keep-alive take milliseconds. A client on it against a real socket should use
/// ``Hearth/Database/withRealisticConnectTimeout()``: 30 s of connect timeout would be 30 ms.
struct FastClock: HearthClock {
    static let origin = Date().timeIntervalSince1970 * 1_000

    func milliseconds() -> Double { FastClock.origin + (Date().timeIntervalSince1970 * 1_000 - FastClock.origin) * 1_000 }

    func sleep(milliseconds: Double) async throws {
        try await Task.sleep(nanoseconds: UInt64(max(0, milliseconds) * 1_000))
    }
}

extension Hearth.Database {
    /// Lengthens the connect timeout to 30 s of real time on ``FastClock`` (a loaded machine may take
    /// longer than 30 ms to open a loopback WebSocket); ConnectTimeoutTests test the timeout itself.
    @discardableResult
    func withRealisticConnectTimeout() -> Self {
        repo.state.withLock { $0.connectTimeout = 30_000_000 }
        return self
    }
}
