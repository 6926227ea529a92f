import NIOCore
import NIOHTTP1

/// Closes a connection whose first request head has not arrived when the server stops; it leaves the
/// pipeline with that head.
///
/// Why: until a connection's first request head arrives, nothing in the pipeline answers the server's
/// quiescing event. HTTP/1's handler takes it only after the upgrade handler decides between HTTP and a
/// WebSocket, which needs the head. A browser's preconnected socket, or a load balancer's TCP probe that
/// stays open, held a stop for the whole read timeout (60 s by default; measured 60.5 s with one silent
/// client). Closing such a connection loses nothing: no request on it has been dispatched.
///
/// For example:
/// ```swift
/// try pipeline.addHandler(UnusedConnectionCloser(), position: .after(decoder))
/// ```
final class UnusedConnectionCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A whole head: the handlers that serve the request (or the WebSocket) answer a stop from here.
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
