import NIOCore
import NIOSSL

/// The first handler of a connection on a TLS port: a TLS handshake goes on to a TLS handler with the
/// current certificate; anything else (plain HTTP sent to the https port) is answered 400 with a
/// short explanation, as nginx does, and closed before a byte reaches the HTTP handlers.
final class TLSPortSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A TLS record of the handshake type: every ClientHello of TLS 1.0 and later starts with it.
    static let handshakeRecord: UInt8 = 0x16

    static let plainHTTPAnswer: String = {
        let body = "This port serves HTTPS only: use https:// (and wss:// for WebSockets).\n"
        return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    }()

    let certificate: ServerCertificate
    private var decided = false

    init(certificate: ServerCertificate) {
        self.certificate = certificate
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else {
            // Bytes that follow a refused plain request: dropped, the connection is closing.
            return
        }
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return }
        decided = true
        if first == Self.handshakeRecord {
            do {
                let sync = context.pipeline.syncOperations
                try sync.addHandler(NIOSSLServerHandler(context: certificate.context), position: .after(self))
                context.fireChannelRead(data)
                sync.removeHandler(context: context, promise: nil)
            } catch {
                context.close(promise: nil)
            }
        } else {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: Self.plainHTTPAnswer))).whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }
}
