import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
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

    /// As ``connect(host:port:secure:path:onFrame:onClose:)``, passing the text frames that arrived
    /// together (in one read from the socket) in one call, in order. The SDK handles such a batch as one
    /// and wakes its callback queue once for it, rather than once a frame. The default passes each frame
    /// alone.
    ///
    /// For example:
    /// ```swift
    /// let socket = try await transport.connect(
    ///     host: "127.0.0.1", port: 9000, secure: false, path: "/.ws?v=5&ns=demo",
    ///     onFrames: { frames in for frame in frames { print(frame) } },
    ///     onClose: { print("closed") }
    /// )
    /// ```
    func connect(
        host: String,
        port: Int,
        secure: Bool,
        path: String,
        onFrames: @escaping @Sendable ([String]) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection

    /// This transport, trusting the certificate authorities in these PEM files for `wss` in addition
    /// to the system's (``Database/trustedCertificateAuthorityFiles``). Transports without TLS return
    /// themselves.
    func trusting(certificateAuthorityFiles files: [URL]) -> any WebSocketTransport
}

extension WebSocketTransport {
    public func trusting(certificateAuthorityFiles files: [URL]) -> any WebSocketTransport { self }

    public func connect(
        host: String,
        port: Int,
        secure: Bool,
        path: String,
        onFrames: @escaping @Sendable ([String]) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        try await connect(host: host, port: port, secure: secure, path: path, onFrame: { onFrames([$0]) }, onClose: onClose)
    }
}

/// The transport errors a connection attempt can end with.
public enum WebSocketTransportError: Error, Sendable {
    /// The server answered the HTTP upgrade with something other than 101.
    case notUpgraded
    /// `wss` needs TLS, which this transport does not offer.
    case tlsUnavailable
    /// The server did not complete the handshake in time (the attempt is retried with backoff).
    case timedOut
}

/// A WebSocket client on SwiftNIO; works on Linux and Apple platforms. `wss` goes through TLS
/// (swift-nio-ssl) with the system's trust roots, plus any certificate authorities added with
/// ``trusting(certificateAuthorityFiles:)``; the server's name is checked against its certificate.
public struct NIOWebSocketTransport: WebSocketTransport {
    let group: any EventLoopGroup
    /// PEM files of certificate authorities trusted besides the system's roots.
    let certificateAuthorityFiles: [URL]

    /// A transport on `group` (NIO's shared event loops by default).
    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.init(group: group, certificateAuthorityFiles: [])
    }

    /// A transport that also trusts the certificate authorities in `certificateAuthorityFiles` (PEM)
    /// for `wss`, such as a self-hosted server's own CA.
    ///
    /// ```swift
    /// let transport = NIOWebSocketTransport(certificateAuthorityFiles: [URL(fileURLWithPath: "/etc/hearth/ca.pem")])
    /// let database = try Database(url: "https://hearth.internal:9443?ns=demo", transport: transport)
    /// ```
    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, certificateAuthorityFiles: [URL]) {
        self.group = group
        self.certificateAuthorityFiles = certificateAuthorityFiles
    }

    public func trusting(certificateAuthorityFiles files: [URL]) -> any WebSocketTransport {
        NIOWebSocketTransport(group: group, certificateAuthorityFiles: certificateAuthorityFiles + files)
    }

    func tlsConfiguration() -> TLSConfiguration {
        .hearthClient(trusting: certificateAuthorityFiles)
    }

    public func connect(
        host: String,
        port: Int,
        secure: Bool,
        path: String,
        onFrame: @escaping @Sendable (String) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        try await connect(
            host: host, port: port, secure: secure, path: path, onFrames: { frames in for frame in frames { onFrame(frame) } }, onClose: onClose
        )
    }

    public func connect(
        host: String,
        port: Int,
        secure: Bool,
        path: String,
        onFrames: @escaping @Sendable ([String]) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) async throws -> any WebSocketConnection {
        let tls = secure ? try NIOSSLContext(configuration: tlsConfiguration()) : nil
        return try await WebSocketChannel.connect(
            host: host, port: port, path: path, headers: [("User-Agent", "Firebase/5/hearth-swift-0.1")], tls: tls, group: group
        ) { channel in
            try channel.pipeline.syncOperations.addHandler(TextFrameHandler(onFrames: onFrames, onClose: onClose))
            return NIOWebSocketConnection(channel: channel)
        }
    }
}

/// Opens a TCP connection, upgrades it to a WebSocket and hands the channel (with fragmented frames
/// already joined) to `configure`, which adds the handler that reads frames. The SDK's transport and
/// the bare protocol client of the tests and `hearth bench` (`WireConnection`) both connect this way.
///
/// For example:
/// ```swift
/// let channel = try await WebSocketChannel.connect(host: "127.0.0.1", port: 9000, path: "/.ws?v=5&ns=demo") { $0 }
/// ```
///
/// `package`, not public: only modules of this package (HearthRealtimeClient) build on it; an app
/// opens sockets through ``WebSocketTransport``.
package enum WebSocketChannel {
    package static func connect<Output: Sendable>(
        host: String,
        port: Int,
        path: String,
        headers extraHeaders: [(String, String)] = [],
        tls: NIOSSLContext? = nil,
        localAddress: String? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        configure: @escaping @Sendable (any Channel) throws -> Output
    ) async throws -> Output {
        var bootstrap = ClientBootstrap(group: group).connectTimeout(.seconds(30))
        if let localAddress { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: localAddress, port: 0)) }
        // The channel, so that a caller who gives up (task cancelled) closes it instead of waiting for
        // an upgrade answer that may never come.
        let opened = Mutex<(any Channel)?>(nil)
        let upgradeResult: EventLoopFuture<Output?> = try await bootstrap.connect(host: host, port: port) { channel in
            opened.withLock { $0 = channel }
            return channel.eventLoop.makeCompletedFuture {
                if let tls {
                    // SNI and the certificate's name check use the host (not for IP addresses: SNI
                    // cannot carry them; the check then matches the certificate's IP entries).
                    let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: tls, serverHostname: isAddress ? nil : host)
                    )
                }
                let upgrader = NIOTypedWebSocketClientUpgrader<Output?>(
                    maxFrameSize: 1 << 24,
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(NIOWebSocketFrameAggregator(
                                minNonFinalFragmentSize: 1,
                                maxAccumulatedFrameCount: 1 << 16,
                                maxAccumulatedFrameSize: 1 << 26
                            ))
                            return try configure(channel)
                        }
                    }
                )
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "\(host):\(port)")
                for (name, value) in extraHeaders { headers.add(name: name, value: value) }
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
        return try await withTaskCancellationHandler {
            guard let output = try await upgradeResult.get() else { throw WebSocketTransportError.notUpgraded }
            return output
        } onCancel: {
            opened.withLock { $0 }?.close(promise: nil)
        }
    }
}

/// The SDK's socket. Frames sent from any thread are queued and written by one drain on the channel's
/// event loop: everything queued since the last drain goes out as one buffer with one flush, so a
/// stream of writes is pipelined in a few large socket writes rather than one task hop, one
/// `WebSocketFrame` through the pipeline and one syscall each.
final class NIOWebSocketConnection: WebSocketConnection {
    let channel: any Channel
    private let outgoing = Mutex(OutboundFrameBatch())

    init(channel: any Channel) {
        self.channel = channel
    }

    func send(_ text: String) {
        guard outgoing.withLock({ $0.enqueue(text) }) else { return }
        // Always a task on the loop, never inline: the engine calls in while holding its lock, and a
        // write to a closing channel runs the close callback, which takes that lock again.
        channel.eventLoop.execute { self.drain() }
    }

    func close() {
        // Behind any drain already scheduled (the loop runs its tasks in order), so frames sent before
        // the close still go out first.
        let channel = self.channel
        channel.eventLoop.execute { channel.close(promise: nil) }
    }

    /// On the event loop: frames everything queued into one buffer and writes it below the frame
    /// encoder (the frames are already encoded and masked), with one flush.
    private func drain() {
        let frames = outgoing.withLock { $0.drain() }
        guard !frames.isEmpty, channel.isActive,
              let encoder = try? channel.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self)
        else { return }
        var size = 0
        for frame in frames { size += ClientTextFrames.encodedSize(payloadCount: frame.utf8.count) }
        var buffer = channel.allocator.buffer(capacity: size)
        // A fresh masking key per frame (RFC 6455 §5.3); one system random draw serves two frames.
        var random = SystemRandomNumberGenerator()
        var keys: UInt64 = 0
        for (index, frame) in frames.enumerated() {
            if index & 1 == 0 { keys = random.next() }
            ClientTextFrames.append(frame, maskKey: UInt32(truncatingIfNeeded: index & 1 == 0 ? keys : keys >> 32), to: &buffer)
        }
        encoder.writeAndFlush(NIOAny(buffer), promise: nil)
    }
}

/// Hands text frames to a callback, answers pings, and reports the end of the socket once.
final class TextFrameHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let onFrames: @Sendable ([String]) -> Void
    let onClose: @Sendable () -> Void
    let closed = Atomic<Bool>(false)
    /// The text frames of the current read, passed on together when it completes.
    private var frames: [String] = []

    init(onFrames: @escaping @Sendable ([String]) -> Void, onClose: @escaping @Sendable () -> Void) {
        self.onFrames = onFrames
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            frames.append(String(buffer: frame.unmaskedData))
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            passFrames()
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        passFrames()
        context.fireChannelReadComplete()
    }

    private func passFrames() {
        guard !frames.isEmpty else { return }
        let batch = frames
        frames = []
        onFrames(batch)
    }

    func channelInactive(context: ChannelHandlerContext) {
        passFrames()
        if !closed.exchange(true, ordering: .relaxed) { onClose() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
