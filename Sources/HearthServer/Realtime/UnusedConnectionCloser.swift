import NIOCore

/// Closes a connection that has sent nothing yet when the server stops; it leaves the pipeline at the
/// connection's first bytes.
///
/// Why: until a connection's first request arrives, nothing in the pipeline answers the server's
/// quiescing event. HTTP/1's handler takes it only after the upgrade handler decides between HTTP and a
/// WebSocket, which needs a request head. A browser's preconnected socket, or a load balancer's TCP
/// probe that stays open, held a stop for the whole read timeout (60 s by default; measured 60.5 s
/// with one silent client).
///
/// For example:
/// ```swift
/// try pipeline.addHandler(UnusedConnectionCloser(), position: .before(decoder))
/// ```
final class UnusedConnectionCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Bytes arrived: a request is on its way, and the handlers that serve it also answer a stop.
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
