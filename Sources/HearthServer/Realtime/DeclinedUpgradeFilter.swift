import NIOCore
import NIOHTTP1

/// Takes the upgrade out of a connection's first request when the server will not upgrade it (another protocol such as `h2c`, a
/// path other than `/.ws`, a long poll's `/.ws?s=`), so it is served as the plain HTTP request it
/// also is.
///
/// Why: NIO's typed upgrade handler (swift-nio 2.101) holds back a request that asks for an upgrade
/// while it looks for an upgrader, and when none takes it, it runs the plain-HTTP set-up without
/// passing that request on: the client got no answer and the connection closed (`curl --http2
/// http://…` sends `Upgrade: h2c` on every request). Requests it would decline never reach it as
/// upgrades now.
///
/// For example:
/// ```swift
/// try pipeline.addHandler(DeclinedUpgradeFilter(), position: .after(decoder))
/// ```
final class DeclinedUpgradeFilter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Only a connection's first request can be upgraded (the upgrade handler leaves the pipeline after
        // it), so the filter leaves too: after a WebSocket upgrade, raw frames come this way.
        defer { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
        guard case .head(var head) = unwrapInboundIn(data), head.headers.contains(name: "upgrade"), !Self.upgrades(head) else {
            context.fireChannelRead(data)
            return
        }
        // The upgrade and what only it used go; of the Connection tokens, what decides keep-alive stays.
        let tokens = Set(head.headers[canonicalForm: "connection"].map { $0.lowercased() })
        for name in ["upgrade", "http2-settings", "connection"] { head.headers.remove(name: name) }
        if tokens.contains("close") {
            head.headers.add(name: "Connection", value: "close")
        } else if tokens.contains("keep-alive") {
            head.headers.add(name: "Connection", value: "keep-alive")
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// Whether the server takes this request's upgrade: a WebSocket at `/.ws` (not a long poll's).
    static func upgrades(_ head: HTTPRequestHead) -> Bool {
        let protocols = head.headers[canonicalForm: "upgrade"].map { $0.lowercased() }
        return protocols.contains("websocket") && RealtimeServerChannel.accepts(head)
    }
}
