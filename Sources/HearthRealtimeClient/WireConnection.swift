import HearthProtocol
public import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A bare client connection speaking the Realtime Database WebSocket protocol: raw frames in and out,
/// with the protocol's fragment counts handled. Used by the protocol tests and `hearth bench`; it has
/// no cache, no listens bookkeeping and no reconnects.
///
/// Not `Sendable`: one task owns a connection.
///
/// For example:
/// ```swift
/// let connection = try await WireConnection.connect(host: "127.0.0.1", port: 9000, path: "/.ws?v=5&ns=demo")
/// let handshake = try await connection.receive()          // {"t":"c","d":{"t":"h",…}}
/// try await connection.send(#"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/","h":""}}}"#)
/// ```
public final class WireConnection {
    let channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
    var inbound: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator
    var assembler = WireFrameAssembler()

    init(channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>) {
        self.channel = channel
        self.inbound = channel.inbound.makeAsyncIterator()
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
        var bootstrap = ClientBootstrap(group: group)
        if let localAddress { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: localAddress, port: 0)) }
        let upgradeResult: EventLoopFuture<NIOAsyncChannel<WebSocketFrame, WebSocketFrame>?> = try await bootstrap.connect(
            host: host,
            port: port
        ) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<NIOAsyncChannel<WebSocketFrame, WebSocketFrame>?>(
                    maxFrameSize: 1 << 24,
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(NIOWebSocketFrameAggregator(
                                minNonFinalFragmentSize: 1,
                                maxAccumulatedFrameCount: 1 << 16,
                                maxAccumulatedFrameSize: 1 << 26
                            ))
                            return try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel)
                        }
                    }
                )
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "\(host):\(port)")
                headers.add(name: "Content-Length", value: "0")
                let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
                let configuration = NIOTypedHTTPClientUpgradeConfiguration(
                    upgradeRequestHead: head,
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(nil) }
                )
                var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
                // The server's first frame (the handshake) may arrive in the same read as the 101 response.
                pipeline.leftOverBytesStrategy = .forwardBytes
                return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
            }
        }
        guard let channel = try await upgradeResult.get() else { throw ConnectError.notUpgraded }
        return WireConnection(channel: channel)
    }

    /// The sending half, for a task that sends while another receives.
    public var sender: WireSender { WireSender(outbound: channel.outbound, allocator: channel.channel.allocator) }

    /// Sends one text frame as is.
    public func sendFrame(_ text: String) async throws {
        try await sender.sendFrame(text)
    }

    /// Sends a message, split into a fragment count and chunks when it is long, as the SDKs do.
    public func send(_ message: String) async throws {
        try await sender.send(message)
    }

    /// The next text frame's bytes, unparsed (for load generators that only count or scan).
    public func receiveBuffer() async throws -> ByteBuffer? {
        while let frame = try await inbound.next() {
            if frame.opcode == .text { return frame.unmaskedData }
            if frame.opcode == .connectionClose { return nil }
        }
        return nil
    }

    /// The next whole message (fragments joined), or nil when the connection has closed.
    public func receive() async throws -> String? {
        while let frame = try await inbound.next() {
            switch frame.opcode {
            case .text:
                if case .message(let text) = try assembler.receive(String(buffer: frame.unmaskedData)) { return text }
            case .connectionClose:
                return nil
            default:
                continue
            }
        }
        return nil
    }

    /// The next raw text frame, without reassembly (to observe the server's framing).
    public func receiveFrame() async throws -> String? {
        while let frame = try await inbound.next() {
            if frame.opcode == .text { return String(buffer: frame.unmaskedData) }
            if frame.opcode == .connectionClose { return nil }
        }
        return nil
    }

    /// Closes the connection (the server sees the socket end, as when a client goes away).
    public func close() async {
        try? await channel.channel.close()
    }
}

/// The sending half of a ``WireConnection``; can be used from any task.
public struct WireSender: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>
    let allocator: ByteBufferAllocator

    /// Sends one text frame as is.
    public func sendFrame(_ text: String) async throws {
        var data = allocator.buffer(capacity: text.utf8.count)
        data.writeString(text)
        try await outbound.write(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: data))
    }

    /// Sends a message, split into a fragment count and chunks when it is long.
    public func send(_ message: String) async throws {
        for chunk in WireFrameAssembler.frames(for: Array(message.utf8)) {
            try await sendFrame(String(decoding: chunk, as: UTF8.self))
        }
    }
}
