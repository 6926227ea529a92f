import NIOCore
import NIOHTTP1

/// Answers a request the HTTP decoder refused — a head over the size limits (431), anything else
/// malformed (400) — and closes the connection. Without it the client got no answer and the connection
/// stayed open.
///
/// Sits right after the request decoder; it watches responses only to know whether one is under way
/// (then it can only close), and becomes a pass-through once the connection is upgraded to a WebSocket.
///
/// For example:
/// ```swift
/// try pipeline.addHandler(MalformedRequestResponder(), position: .after(decoder))
/// ```
final class MalformedRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var responding = false
    private var upgraded = false

    /// The status a decoding error is answered with.
    static func status(for error: HTTPParserError) -> HTTPResponseStatus {
        switch error {
        case .headerOverflow: .requestHeaderFieldsTooLarge
        default: .badRequest
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !upgraded, let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        if !responding {
            let status = Self.status(for: parserError)
            let body = ByteBuffer(string: #"{"error":"\#(Self.message(for: status))"}"#)
            let headers = HTTPHeaders([
                ("Connection", "close"), ("Content-Type", "application/json; charset=utf-8"), ("Content-Length", String(body.readableBytes)),
            ])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                // A lingering close: the client may still be sending the rest of its head, and closing
                // with unread bytes would reset the connection before it reads the answer.
                context.close(mode: .output, promise: nil)
                context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) { context.close(promise: nil) }
            }
        } else {
            context.close(promise: nil)
        }
    }

    /// How long the rest of a refused request is read (and dropped) before the connection closes.
    static let linger = TimeAmount.seconds(2)

    static func message(for status: HTTPResponseStatus) -> String {
        status == .requestHeaderFieldsTooLarge
            ? "The request's URL and headers are too large (at most 64 KiB together, 32 KiB for one)"
            : "Malformed HTTP request"
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if upgraded {
            context.write(data, promise: promise)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status == .switchingProtocols:
            // From here on the connection carries WebSocket frames, not HTTP parts.
            upgraded = true
        case .head(let head) where head.status.code >= 200:
            responding = true
        case .head, .body:
            break
        case .end:
            responding = false
        }
        context.write(data, promise: promise)
    }
}

@available(*, unavailable)
extension MalformedRequestResponder: Sendable {}
