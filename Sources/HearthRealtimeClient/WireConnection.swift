import DequeModule
import Hearth
import HearthProtocol
public import NIOCore
import NIOPosix
import NIOWebSocket
import Synchronization

/// A bare client connection speaking the Realtime Database WebSocket protocol: raw frames in and out,
/// with the protocol's fragment counts handled. Used by the protocol tests and `hearth bench`; it has
/// no cache, no listens bookkeeping and no reconnects. It opens its socket through the Swift SDK's
/// `WebSocketChannel`, so both clients share one WebSocket implementation.
///
/// The socket is read only when ``receive()`` asks for more (automatic reading is off after the
/// upgrade), so a client that stops receiving pushes back on the server, as a slow real client would.
/// Not `Sendable`: one task receives; ``sender`` may be used from others.
///
/// For example:
/// ```swift
/// let connection = try await WireConnection.connect(host: "127.0.0.1", port: 9000, path: "/.ws?v=5&ns=demo")
/// let handshake = try await connection.receive()          // {"t":"c","d":{"t":"h",…}}
/// try await connection.send(#"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/","h":""}}}"#)
/// ```
public final class WireConnection {
    let inbound: InboundFrames
    var assembler = WireFrameAssembler()
    /// The sending half, for a task that sends while another receives.
    public let sender: WireSender

    init(inbound: InboundFrames) {
        self.inbound = inbound
        self.sender = WireSender(channel: inbound.channel)
    }

    public enum ConnectError: Error, Sendable {
        case notUpgraded
    }

    /// Opens a WebSocket to `path` (with its query string) on `host:port`, optionally from a given local
    /// address (load generators spread connections over 127.0.0.x).
    public static func connect(
        host: String,
        port: Int,
        path: String,
        localAddress: String? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> WireConnection {
        do {
            let inbound = try await WebSocketChannel.connect(
                host: host, port: port, path: path, localAddress: localAddress, group: group
            ) { channel in
                let inbound = InboundFrames(channel: channel)
                try channel.pipeline.syncOperations.addHandler(inbound)
                try channel.syncOptions?.setOption(.autoRead, value: false)
                return inbound
            }
            return WireConnection(inbound: inbound)
        } catch WebSocketTransportError.notUpgraded {
            throw ConnectError.notUpgraded
        }
    }

    /// Sends one text frame as is.
    public func sendFrame(_ text: String) async throws {
        try await sender.sendFrame(text)
    }

    /// Sends a message, split into a fragment count and chunks when it is long, as the SDKs do.
    public func send(_ message: String) async throws {
        try await sender.send(message)
    }

    /// The next whole message (fragments joined), or nil when the connection has closed.
    public func receive() async throws -> String? {
        while let frame = try await inbound.next() {
            switch frame.opcode {
            case .text:
                if case .message(let text) = try assembler.receive(String(buffer: frame.unmaskedData)) { return text }
            case .connectionClose:
                return nil
            case .ping:
                try? await sender.pong(frame.unmaskedData)  // a closing connection needs no answer
            default:
                continue
            }
        }
        return nil
    }

    /// Like ``receive()``, but gives up after `timeout`: then the connection is closed and
    /// ``ReceiveTimeout`` is thrown. For tests and tools that must not wait forever on a broken peer.
    public func receive(timeout: Duration) async throws -> String? {
        let fired = TimeoutFlag()
        let channel = inbound.channel
        let timer = Task {
            try await Task.sleep(for: timeout)
            fired.value.store(true, ordering: .releasing)
            try await channel.close()
        }
        defer { timer.cancel() }
        let message = try await receive()
        if fired.value.load(ordering: .acquiring) { throw ReceiveTimeout(timeout: timeout) }
        return message
    }

    /// Nothing arrived within the time given to ``receive(timeout:)``.
    public struct ReceiveTimeout: Error, CustomStringConvertible {
        public var timeout: Duration
        public var description: String { "no message within \(timeout)" }
    }

    /// The next raw text frame, without reassembly (to observe the server's framing).
    public func receiveFrame() async throws -> String? {
        try await receiveBuffer().map { String(buffer: $0) }
    }

    /// The next text frame's bytes, unparsed (for load generators that only count or scan).
    public func receiveBuffer() async throws -> ByteBuffer? {
        while let frame = try await inbound.next() {
            if frame.opcode == .text { return frame.unmaskedData }
            if frame.opcode == .connectionClose { return nil }
            if frame.opcode == .ping { try? await sender.pong(frame.unmaskedData) }
        }
        return nil
    }

    /// Closes the connection (the server sees the socket end, as when a client goes away).
    public func close() async {
        try? await inbound.channel.close()
    }
}

/// The sending half of a ``WireConnection``; can be used from any task.
public struct WireSender: Sendable {
    let channel: any Channel

    /// Sends one text frame as is.
    public func sendFrame(_ text: String) async throws {
        var data = channel.allocator.buffer(capacity: text.utf8.count)
        data.writeString(text)
        try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: data))
    }

    /// Answers a ping (RFC 6455: with its data), as any WebSocket client does.
    func pong(_ data: ByteBuffer) async throws {
        try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: data))
    }

    /// Sends a message, split into a fragment count and chunks when it is long.
    public func send(_ message: String) async throws {
        for chunk in WireFrameAssembler.frames(for: Array(message.utf8)) {
            try await sendFrame(String(decoding: chunk, as: UTF8.self))
        }
    }
}

/// Frames received on the connection, read from the socket on demand. Frames that arrive together are
/// kept (unbounded only up to what one socket read delivers, since nothing more is read until they are
/// taken).
final class InboundFrames: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = WebSocketFrame

    struct State {
        var frames: Deque<WebSocketFrame> = []
        var waiter: CheckedContinuation<WebSocketFrame?, any Error>?
        var closed = false
    }

    let channel: any Channel
    private let state = Mutex(State())

    init(channel: any Channel) {
        self.channel = channel
    }

    /// The next frame, reading from the socket if none is waiting; nil once the connection has closed.
    func next() async throws -> WebSocketFrame? {
        try await withCheckedThrowingContinuation { continuation in
            enum Step { case frame(WebSocketFrame), closed, wait }
            let step: Step = state.withLock { state in
                if !state.frames.isEmpty { return .frame(state.frames.removeFirst()) }
                if state.closed { return .closed }
                state.waiter = continuation
                return .wait
            }
            switch step {
            case .frame(let frame): continuation.resume(returning: frame)
            case .closed: continuation.resume(returning: nil)
            case .wait: channel.read()
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.frames.append(frame)
                return nil as CheckedContinuation<WebSocketFrame?, any Error>?
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: frame)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // A read that delivered only partial frames: read on while someone is waiting.
        if state.withLock({ $0.waiter != nil }) { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let waiter = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

private final class TimeoutFlag: Sendable {
    let value = Atomic<Bool>(false)
}
