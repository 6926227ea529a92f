import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// An open WebSocket carrying text frames. ``send(_:)`` may be called from any thread; frames go out
/// in the order of the calls.
public protocol WebSocketConnection: Sendable {
    func send(_ text: String)
    func close()
}

/// Opens WebSockets. The default is ``NIOWebSocketTransport``; tests may inject an in-memory one.
public protocol WebSocketTransport: Sendable {
    /// Connects to `path` (with its query string) on `host:port`. Received text frames are passed to
    /// `onFrame` one at a time, in order; `onClose` is called once when the socket ends.
    func connect(
        host: String,
        port: Int,
        secure: Bool,
        path: String,
        onFrame: @escaping @Sendable (String) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection
}

/// The transport errors a connection attempt can end with.
public enum WebSocketTransportError: Error, Sendable {
    /// The server answered the HTTP upgrade with something other than 101.
    case notUpgraded
    /// `wss` needs TLS, which this build does not include.
    case tlsUnavailable
}

/// A WebSocket client on SwiftNIO; works on Linux and Apple platforms. Plain `ws` only for now.
public struct NIOWebSocketTransport: WebSocketTransport {
    let group: any EventLoopGroup

    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    public func connect(
        host: String,
        port: Int,
        secure: Bool,
        path: String,
        onFrame: @escaping @Sendable (String) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        if secure { throw WebSocketTransportError.tlsUnavailable }
        let upgradeResult: EventLoopFuture<NIOWebSocketConnection?> = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(30))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOTypedWebSocketClientUpgrader<NIOWebSocketConnection?>(
                        maxFrameSize: 1 << 24,
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                let handler = TextFrameHandler(onFrame: onFrame, onClose: onClose)
                                try channel.pipeline.syncOperations.addHandler(NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 1,
                                    maxAccumulatedFrameCount: 1 << 16,
                                    maxAccumulatedFrameSize: 1 << 26
                                ))
                                try channel.pipeline.syncOperations.addHandler(handler)
                                return NIOWebSocketConnection(channel: channel)
                            }
                        }
                    )
                    var headers = HTTPHeaders()
                    headers.add(name: "Host", value: "\(host):\(port)")
                    headers.add(name: "User-Agent", value: "Firebase/5/hearth-swift-0.1")
                    headers.add(name: "Content-Length", value: "0")
                    let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
                    let configuration = NIOTypedHTTPClientUpgradeConfiguration(
                        upgradeRequestHead: head,
                        upgraders: [upgrader],
                        notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(nil) }
                    )
                    var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
                    // The handshake may arrive in the same read as the 101 response.
                    pipeline.leftOverBytesStrategy = .forwardBytes
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
                }
            }
        guard let connection = try await upgradeResult.get() else { throw WebSocketTransportError.notUpgraded }
        return connection
    }
}

struct NIOWebSocketConnection: WebSocketConnection {
    let channel: any Channel

    func send(_ text: String) {
        var data = channel.allocator.buffer(capacity: text.utf8.count)
        data.writeString(text)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: data), promise: nil)
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// Hands text frames to a callback, answers pings, and reports the end of the socket once.
final class TextFrameHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let onFrame: @Sendable (String) -> Void
    let onClose: @Sendable () -> Void
    let closed = Atomic<Bool>(false)

    init(onFrame: @escaping @Sendable (String) -> Void, onClose: @escaping @Sendable () -> Void) {
        self.onFrame = onFrame
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            onFrame(String(buffer: frame.unmaskedData))
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !closed.exchange(true, ordering: .relaxed) { onClose() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
