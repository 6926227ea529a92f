import HearthProtocol
import Logging
import NIOCore
import NIOWebSocket

/// The NIO handler at the end of an upgraded WebSocket pipeline: WebSocket control frames, the
/// protocol's framing (fragment counts, keep-alives), ping/pong, and handing requests to the session.
/// Runs on the channel's event loop; holds no task while the connection is idle.
final class RealtimeChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let session: RealtimeSession
    private var assembler: WireFrameAssembler
    /// The requests of the current read, queued together when it completes.
    private var requests: [RealtimeSession.Job] = []

    init(session: RealtimeSession, maximumMessageBytes: Int) {
        self.session = session
        self.assembler = WireFrameAssembler(maximumMessageBytes: maximumMessageBytes)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        session.touch()
        switch frame.opcode {
        case .text:
            receive(String(buffer: frame.unmaskedData), context: context)
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            var data = context.channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .normalClosure)
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(close)).whenComplete { _ in channel.close(promise: nil) }
        default:
            // Binary frames are not part of the protocol; pongs need nothing.
            break
        }
    }

    private func receive(_ text: String, context: ChannelHandlerContext) {
        do throws(WireError) {
            switch try assembler.receive(text) {
            case .incomplete, .keepAlive:
                return
            case .message(let message):
                switch try ClientMessage(parsing: message) {
                case .ping: session.send(ServerMessage.pong)
                case .control: break
                case .request(let request): requests.append(.request(request, bytes: message.utf8.count))
                }
            }
        } catch {
            session.services.logger.info("Closing a WebSocket that broke the protocol", metadata: ["hearth.error": "\(error.message)"])
            session.close(code: .protocolError)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        queueRequests()
        context.fireChannelReadComplete()
    }

    private func queueRequests() {
        guard !requests.isEmpty else { return }
        let batch = requests
        requests = []
        session.enqueue(batch)
    }

    func channelInactive(context: ChannelHandlerContext) {
        queueRequests()
        session.closed()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { session.flush() }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            // Server shutdown: close; the SDKs reconnect to the restarted server.
            session.close(code: .goingAway)
        case ChannelEvent.inputClosed:
            // The client closed its side (the server allows half-closure for HTTP): the session is over.
            context.close(promise: nil)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
