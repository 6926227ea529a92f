import Crypto
import Foundation
import HTTPTypes
import HearthAccess
import HearthCore
import HearthProtocol
import Hummingbird
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// `GET /.lp`: the long-polling transport of the realtime protocol (``LongPollTransport``).
///
/// - `?start=t&ser=…&cb=<digits>&v=5&ns=…[&ls=…]` opens a connection: a session like a WebSocket's,
///   answered with `pLPCommand<cb>("start", id, pw)` and the handshake as response 0.
/// - `?id=…&pw=…&ser=…[&seg0=…&ts0=…&d0=……]` is a poll: it carries the client's messages and waits
///   for the server's.
/// - `?dframe=t&id=…&pw=…` is the page's disconnect frame: held open, so a page that goes away ends
///   its connection at once (onDisconnect writes fire) instead of after the idle timeout.
///
/// An upgrade of a long-polling connection to a WebSocket (`/.ws?…&s=<id>`) is declined: the client
/// stays on long polling (see docs/decisions/0009-long-polling.md).
struct LongPollController: Sendable {
    let services: RealtimeServices

    static let scriptHeaders: HTTPFields = [
        .contentType: "application/javascript; charset=utf-8",
        .cacheControl: "no-cache, no-store",
        .accessControlAllowOrigin: "*",
    ]

    func register<Context: RequestContext>(on router: Router<Context>) {
        router.get("/.lp") { request, _ in await self.respond(request) }
    }

    func respond(_ request: Request) async -> Response {
        let parameters = RealtimeServerChannel.queryParameters(request.uri.query ?? "")
        if parameters["start"] == "t" { return await start(parameters, host: request.head.authority) }
        guard let id = parameters["id"], let password = parameters["pw"], let transport = transport(id, password) else {
            // The script fails to load: the client closes this connection and opens a new one.
            return script("/* unknown or closed connection */", status: .notFound)
        }
        if parameters["dframe"] == "t" { return disconnectFrame(transport) }
        var segments: [(number: Int, total: Int, data: Substring)] = []
        var index = 0
        while let number = parameters["seg\(index)"].flatMap({ Int($0) }), let total = parameters["ts\(index)"].flatMap({ Int($0) }),
            let data = parameters["d\(index)"]
        {
            segments.append((number, total, Substring(data)))
            index += 1
        }
        do {
            // A held poll must not keep a stopping server waiting: the connection closes, the client reconnects.
            let body = try await withGracefulShutdownHandler {
                try await transport.poll(segments: segments)
            } onGracefulShutdown: {
                transport.close(code: .goingAway)
            }
            guard let body else { return script("", status: .notFound) }
            return script(body)
        } catch let error as LongPollError {
            services.logger.info("Closing a long-polling connection that broke the protocol", metadata: ["hearth.error": "\(error.description)"])
            transport.close(code: .protocolError)
            return script("/* \(error.description) */", status: .badRequest)
        } catch {
            return script("", status: .notFound)
        }
    }

    private func start(_ parameters: [String: String], host: String?) async -> Response {
        guard let callback = parameters["cb"], (1...16).contains(callback.count), callback.allSatisfy(\.isASCII), callback.allSatisfy(\.isNumber) else {
            return script("/* cb must be the page's callback number */", status: .badRequest)
        }
        if let version = parameters["v"], version != "5" {
            return script("parent.pLPCommand\(callback)(\"close\",0); /* only protocol version 5 */", status: .badRequest)
        }
        let services = self.services
        guard services.longPolls.wrappingAdd(1, ordering: .relaxed).newValue <= services.configuration.maximumLongPollConnections else {
            services.longPolls.wrappingSubtract(1, ordering: .relaxed)
            return script("/* too many long-polling connections; try again later */", status: .serviceUnavailable)
        }
        let transport = LongPollTransport(
            callback: callback, outboundLimit: services.configuration.realtimeOutboundLimit,
            maximumMessageBytes: services.configuration.maximumRequestBytes, clock: services.configuration.clock
        ) { services.longPolls.wrappingSubtract(1, ordering: .relaxed) }
        let session = RealtimeServerChannel.session(
            transport: transport, parameters: parameters, host: host, clientAddress: RequestClient.current?.address, services: services
        )
        transport.attach(session)
        session.start()
        // The handshake is flushed on the connection's event loop: once that has run, it is response 0.
        try? await transport.eventLoop.submit {}.get()
        return script(transport.startScript(id: session.id))
    }

    /// The connection `id` if `password` is its password (compared in constant time).
    private func transport(_ id: String, _ password: String) -> LongPollTransport? {
        guard let transport = services.sessions.session(id)?.transport as? LongPollTransport, !transport.isClosed else { return nil }
        let expected = SHA256.hash(data: Data(transport.password.utf8))
        let given = SHA256.hash(data: Data(password.utf8))
        return expected == given ? transport : nil
    }

    /// Held open with a space every few seconds: when a write fails, the page is gone.
    private func disconnectFrame(_ transport: LongPollTransport) -> Response {
        let clock = services.configuration.clock
        return Response(
            status: .ok,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache, no-store"],
            body: ResponseBody { writer in
                do {
                    try await withGracefulShutdownHandler {
                        try await writer.write(ByteBuffer(string: "<!doctype html><html><body>"))
                        while !transport.isClosed {
                            try await clock.sleep(for: .seconds(5))
                            try await writer.write(ByteBuffer(string: " "))
                        }
                    } onGracefulShutdown: {
                        transport.close(code: .goingAway)
                    }
                    try await writer.finish(nil)
                } catch {
                    transport.close(code: .goingAway)
                    throw error
                }
            }
        )
    }

    private func script(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: Self.scriptHeaders, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
