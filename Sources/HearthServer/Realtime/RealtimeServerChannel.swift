import HTTPTypes
import HearthAccess
import HearthCore
import HearthFiles
import HearthIdentity
import HearthProtocol
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import Synchronization

/// The server's child channel: HTTP/1.1 for REST and event streams, upgraded to a WebSocket at `/.ws`.
///
/// Upgraded connections are served entirely by ``RealtimeChannelHandler`` on their event loop; their
/// `handle` returns at once, so an idle connection costs its socket and a few small objects, no task.
/// On graceful shutdown the server's quiescing helper tells every connection to close.
public struct RealtimeServerChannel: ServerChildChannel, HTTPChannelHandler {
    enum Negotiated: Sendable {
        case websocket(RealtimeSession)
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    }

    public struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        public let channel: any Channel
    }

    public let responder: HTTPChannelHandler.Responder
    let services: RealtimeServices
    /// Set: every connection speaks TLS with the certificate current when it opens.
    let certificate: ServerCertificate?
    /// Set: plain HTTP connections send cached downloads as file regions (``FileRegionWriter``).
    let fileRegions: FileRegionDownloads?

    init(
        responder: @escaping HTTPChannelHandler.Responder, services: RealtimeServices, certificate: ServerCertificate?,
        fileRegions: FileRegionDownloads? = nil
    ) {
        self.responder = responder
        self.services = services
        self.certificate = certificate
        self.fileRegions = fileRegions
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let services = self.services
            let secure = certificate != nil
            let fileRegions = self.fileRegions
            let upgrader = NIOTypedWebSocketServerUpgrader<Negotiated>(
                maxFrameSize: 1 << 24,
                shouldUpgrade: { channel, head in
                    channel.eventLoop.makeSucceededFuture(RealtimeServerChannel.accepts(head) ? HTTPHeaders() : nil)
                },
                upgradePipelineHandler: { channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        let session = RealtimeServerChannel.session(for: head, channel: channel, services: services)
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 1,
                            maxAccumulatedFrameCount: 1 << 16,
                            maxAccumulatedFrameSize: 1 << 24
                        ))
                        try sync.addHandler(RealtimeChannelHandler(
                            session: session,
                            maximumMessageBytes: services.configuration.maximumRequestBytes
                        ))
                        return Negotiated.websocket(session)
                    }
                }
            )
            let upgradeConfiguration = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        // Downloads as file regions (sendfile); over TLS the process must encrypt the bytes.
                        if let fileRegions, !secure {
                            try channel.pipeline.syncOperations.addHandler(FileRegionWriter(downloads: fileRegions))
                        }
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: secure))
                        // Between requests, and while a request's head or body is read, silence longer than
                        // the read timeout closes the connection; a response that streams is not limited.
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: services.configuration.requestReadTimeout, logger: logger)
                        )
                        return Negotiated.http(try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true)
                        ))
                    }
                }
            )
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration(upgradeConfiguration: upgradeConfiguration)
            configuration.enablePipelining = false
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            configuration.decoderConfiguration = Self.headLimits
            let sync = channel.pipeline.syncOperations
            if let certificate {
                // First in the pipeline: TLS below HTTP and the WebSocket, for every path.
                try sync.addHandler(TLSPortSniffer(certificate: certificate))
            }
            let negotiated = try sync.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let decoder = try sync.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try sync.addHandler(MalformedRequestResponder(), position: .after(decoder))
            try sync.addHandler(DeclinedUpgradeFilter(), position: .after(decoder))
            try sync.addHandler(UnusedConnectionCloser(), position: .after(decoder))
            // The first request's head must arrive in time too: a client that trickles it (or sends
            // nothing) would otherwise hold the connection for ever.
            let timeout = TimeAmount(services.configuration.requestReadTimeout)
            let firstHead = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
            negotiated.whenComplete { _ in firstHead.cancel() }
            return Value(negotiated: negotiated, channel: channel)
        }
    }

    /// A request head may hold at most 64 KiB of URL and header fields, 32 KiB in one of them (the URL
    /// counts as one); past that the request is answered 431 and the connection closed.
    static let headLimits: NIOHTTPDecoderLimitConfiguration = {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 32 * 1024
        limits.maxHeaderListSize = 64 * 1024
        limits.maxHeaderFieldCount = 1000
        return limits
    }()

    /// Runs a connection's setup once on this thread, on an in-memory channel, with a plain HTTP request
    /// through it: the generic types of the connection path (the upgradable pipeline, the HTTP codec, the
    /// async channel) are instantiated before any real connection comes. Call before the server listens.
    ///
    /// Why: the Swift runtime (6.3.1 here) can crash when two threads instantiate the same generic type's
    /// metadata for the first time at once. It did when several clients connected together right after a
    /// start, and two event loops set up their first connections (`docs/decisions/0013-runtime-warm-up.md`).
    ///
    /// Returns whether the request took the plain-HTTP path (it always should).
    ///
    /// For example:
    /// ```swift
    /// RealtimeServerChannel.warmUp(services: realtime, logger: logger)
    /// ```
    @discardableResult
    static func warmUp(services: RealtimeServices, logger: Logger) -> Bool {
        // One at a time in a process: two servers started together (the test suites run many) warmed up
        // at once and met the same race inside the warm-up.
        warmUpLock.withLock { _ in warmUpOnce(services: services, logger: logger) }
    }

    private static let warmUpLock = Mutex(())

    private static func warmUpOnce(services: RealtimeServices, logger: Logger) -> Bool {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        let server = RealtimeServerChannel(responder: { _, _, _ in }, services: services, certificate: nil)
        final class Outcome: Sendable { let tookHTTP = Mutex(false) }
        let outcome = Outcome()
        server.setup(channel: channel, logger: logger).whenSuccess { value in
            value.negotiated.whenSuccess { negotiated in
                if case .http = negotiated { outcome.tookHTTP.withLock { $0 = true } }
            }
        }
        do {
            try channel.writeInbound(ByteBuffer(string: "GET /.json HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        } catch {
            logger.debug("The connection path's warm-up failed", metadata: ["hearth.error": "\(error)"])
        }
        return outcome.tookHTTP.withLock { $0 }
    }

    public func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .websocket(let session):
                // The upgrade is complete (the 101 response is out): the handshake may go now.
                session.start()
            case .http(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            }
        } catch {
            logger.debug("Connection setup failed", metadata: ["hearth.error": "\(error)"])
        }
    }

    /// Only `/.ws` upgrades; other paths stay plain HTTP. An upgrade of a long-polling connection
    /// (`s=<its id>`) is declined, so the client keeps its long polls (docs/decisions/0009-long-polling.md).
    static func accepts(_ head: HTTPRequestHead) -> Bool {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        guard parts.first == "/.ws" else { return false }
        return parts.count < 2 || queryParameters(String(parts[1]))["s"] == nil
    }

    /// A session for a new connection: its namespace (`ns=`, else the Host's first label, else the
    /// default), the host to echo in the handshake, and the previous session (`ls=`) closed at once.
    static func session(for head: HTTPRequestHead, channel: any Channel, services: RealtimeServices) -> RealtimeSession {
        let query = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
        let remote = channel.remoteAddress?.ipAddress
        let address = services.configuration.identity.trustForwardedFor
            ? RequestClient.lastForwardedAddress(head.headers[RequestClient.forwardedFor.canonicalName]) ?? remote : remote
        let entry = services.configuration.accessLog
            ? AccessLogEntry(method: "GET", path: "/.ws", query: query, client: address) : nil
        return session(
            transport: WebSocketRealtimeTransport(channel: channel), parameters: queryParameters(query),
            host: head.headers.first(name: "host"), clientAddress: address, accessLogEntry: entry, services: services
        )
    }

    /// The decoded parameters of a query string.
    static func queryParameters(_ query: String) -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard let name = parts.first else { continue }
            let raw = parts.count > 1 ? String(parts[1]) : ""
            parameters[String(name)] = PercentDecoding.decode(raw) ?? raw
        }
        return parameters
    }

    /// A session on any transport: its namespace (`ns=`, else the Host's first label, else the default),
    /// the host to echo in the handshake, and the previous session (`ls=`) closed at once.
    static func session(
        transport: any RealtimeTransport, id: String = RealtimeSession.makeID(), parameters: [String: String], host: String?,
        clientAddress: String? = nil, accessLogEntry: AccessLogEntry? = nil, services: RealtimeServices
    ) -> RealtimeSession {
        let configuration = services.configuration
        let host = host ?? "\(configuration.host):\(configuration.port)"
        var namespace = configuration.defaultNamespace
        if let ns = parameters["ns"], !ns.isEmpty {
            namespace = ns
        } else if let label = RESTController.namespaceLabel(host: host) {
            namespace = label
        }
        let session = RealtimeSession(
            transport: transport, id: id, namespace: namespace, host: host, clientAddress: clientAddress,
            accessLogEntry: accessLogEntry, services: services
        )
        services.sessions.add(session)
        if let previous = parameters["ls"].flatMap(services.sessions.session) {
            // The client reconnected: its old connection is dead; end it now so its onDisconnect writes fire
            // before this connection's requests.
            previous.replaced()
        }
        return session
    }
}
