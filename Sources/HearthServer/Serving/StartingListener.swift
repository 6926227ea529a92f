import NIOCore
import NIOPosix

/// Holds the server's port while it starts (its stored databases load, a cluster node joins), so that
/// probes get an answer instead of a refused connection: `/healthz` 200 `ok` (the process is alive),
/// everything else 503 `starting` with `Retry-After: 1`. Closed just before the server binds the port.
///
/// For example:
/// ```swift
/// let starting = try await StartingListener.open(host: "0.0.0.0", port: 443, certificate: certificate)
/// configuration.port = starting.port          // the port it got, for --port 0
/// let server = try await buildApplication(configuration: configuration, storage: storage, adminSecret: secret)
/// await starting.close()
/// try await server.runService()
/// ```
public final class StartingListener: Sendable {
    let channel: any Channel
    /// The port it listens on (the one picked, when asked for port 0).
    public let port: Int

    private init(channel: any Channel) {
        self.channel = channel
        port = channel.localAddress?.port ?? 0
    }

    /// Listens on `host`:`port`, with TLS when `certificate` is set.
    public static func open(host: String, port: Int, certificate: ServerCertificate?) async throws -> StartingListener {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // A connection gets one answer, within 5 s at most: one that sends nothing (or
                    // trickles its head) must not outlive the start, holding a socket for ever.
                    channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
                    let sync = channel.pipeline.syncOperations
                    if let certificate { try sync.addHandler(TLSPortSniffer(certificate: certificate)) }
                    try sync.addHandler(StartingResponder())
                }
            }
            .bind(host: host, port: port)
            .get()
        return StartingListener(channel: channel)
    }

    /// Stops listening (connections it accepted finish their one answer).
    public func close() async {
        try? await channel.close()
    }
}

/// Answers the first request of a connection from its request line alone, then closes it.
final class StartingResponder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var head = ByteBuffer()
    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        var bytes = unwrapInboundIn(data)
        head.writeBuffer(&bytes)
        let text = String(buffer: head)
        // The request line is enough; a head that never ends is cut off at 16 KiB.
        guard text.contains("\r\n") || head.readableBytes > 16 * 1024 else { return }
        answered = true
        let target = text.split(separator: " ", maxSplits: 2).dropFirst().first.map(String.init) ?? ""
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        let (status, body) = path == "/healthz" ? ("200 OK", "ok\n") : ("503 Service Unavailable", "starting\n")
        let response = "HTTP/1.1 \(status)\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
            + "Retry-After: 1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: response))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
