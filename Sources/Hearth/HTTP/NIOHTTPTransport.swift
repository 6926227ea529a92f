import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTPS through SwiftNIO and swift-nio-ssl, trusting the certificate authorities in PEM files besides
/// the system's, as ``NIOWebSocketTransport`` does for `wss`. `URLSession` cannot add trust roots to
/// one session on Linux (see ``Database/trustedCertificateAuthorityFiles``), so Auth and Storage send
/// `https` requests this way when authorities are configured; other requests go to `fallback`.
///
/// It is a small HTTP/1.1 client: one connection per request (`Connection: close`), the whole body
/// in memory, no redirects, no proxy, no cookies or cache — what the SDK's REST calls need.
///
/// For example:
/// ```swift
/// let transport = NIOHTTPTransport(certificateAuthorityFiles: [URL(fileURLWithPath: "/etc/hearth/ca.pem")])
/// let (body, response) = try await transport.send(URLRequest(url: URL(string: "https://hearth.internal:9443/v0/b/demo.appspot.com/o")!))
/// ```
struct NIOHTTPTransport: HTTPTransport {
    let certificateAuthorityFiles: [URL]
    var group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    /// Where requests that are not `https` go.
    var fallback: any HTTPTransport = URLSessionHTTPTransport.shared

    init(certificateAuthorityFiles: [URL]) {
        self.certificateAuthorityFiles = certificateAuthorityFiles
    }

    func tlsConfiguration() -> TLSConfiguration {
        .hearthClient(trusting: certificateAuthorityFiles)
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let url = request.url, url.scheme?.lowercased() == "https", let host = url.host,
              let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return try await fallback.send(request)
        }
        let port = url.port ?? 443
        let tls = try NIOSSLContext(configuration: tlsConfiguration())
        // SNI and the certificate's name check use the host (not for IP addresses: SNI cannot carry them).
        let serverName = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil

        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
        for (name, value) in request.allHTTPHeaderFields ?? [:] where !value.isEmpty {
            headers.add(name: name, value: value)
        }
        let method = request.httpMethod ?? "GET"
        let body = request.httpBody ?? Data()
        if !body.isEmpty || !["GET", "HEAD", "DELETE"].contains(method) {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        }
        headers.replaceOrAdd(name: "Connection", value: "close")
        let head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: target, headers: headers)

        let answer = group.next().makePromise(of: HTTPExchange.Answer.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(30))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        try pipeline.addHTTPClientHandlers()
                        try pipeline.addHandler(HTTPExchange(head: head, body: body, answer: answer))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            answer.fail(error)
            throw error
        }
        let timeout = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(max(request.timeoutInterval, 1) * 1_000))) {
            answer.fail(URLError(.timedOut))
            channel.close(promise: nil)
        }
        defer { timeout.cancel() }
        let result = try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            answer.fail(CancellationError())
            channel.close(promise: nil)
        }
        let fields = Dictionary(result.head.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { "\($0), \($1)" })
        guard let response = HTTPURLResponse(url: url, statusCode: Int(result.head.status.code), httpVersion: "HTTP/1.1", headerFields: fields) else {
            throw URLError(.badServerResponse)
        }
        return (result.body, response)
    }
}

/// Writes one request when the connection is up, collects the response, and closes the connection.
/// Fails the answer when the connection ends or fails before the response's end.
private final class HTTPExchange: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    struct Answer: Sendable {
        var head: HTTPResponseHead
        var body: Data
    }

    let head: HTTPRequestHead
    let body: Data
    let answer: EventLoopPromise<Answer>
    private var responseHead: HTTPResponseHead?
    private var received = Data()

    init(head: HTTPRequestHead, body: Data, answer: EventLoopPromise<Answer>) {
        self.head = head
        self.body = body
        self.answer = answer
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            // Informational answers (100 Continue) precede the real one.
            if head.status.code >= 200 { responseHead = head }
        case .body(let buffer):
            received.append(contentsOf: buffer.readableBytesView)
        case .end:
            if let responseHead {
                answer.succeed(Answer(head: responseHead, body: received))
                self.responseHead = nil
                context.close(promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A no-op when the answer is already complete.
        answer.fail(URLError(.networkConnectionLost))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answer.fail(error)
        context.close(promise: nil)
    }
}
