import AsyncHTTPClient
import Foundation
import HearthServer
import HearthTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing

/// The server's own TLS (`--tls-cert`): every API on the one port over https, nothing over plain
/// HTTP, TLS 1.2 at least, and a reload serving the renewed certificate to new connections.
@Suite struct TLSServingTests {
    /// Runs `body` with a client trusting `authority` (nil: the system's roots), shut down after.
    static func withClient<T>(
        trusting authority: URL?, maximumVersion: TLSVersion? = nil, _ body: (HTTPClient) async throws -> T
    ) async throws -> T {
        let client = client(trusting: authority, maximumVersion: maximumVersion)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func client(trusting authority: URL?, maximumVersion: TLSVersion? = nil) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let authority { tls.trustRoots = .file(authority.path) }
        if let maximumVersion {
            tls.minimumTLSVersion = .tlsv1
            tls.maximumTLSVersion = maximumVersion
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
    }

    static func send(_ client: HTTPClient, _ method: HTTPMethod, _ url: String, _ body: String? = nil) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(TestServer.secret)")
        // A new connection for every request: each one shakes hands with the certificate of the moment.
        request.headers.add(name: "Connection", value: "close")
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: bytes))
    }

    @Test(arguments: [TestCertificates.Key.ecdsa, .rsa])
    func restAndHealthAnswerOverHTTPSWithATrustedAuthority(key: TestCertificates.Key) async throws {
        let certificates = try await TestCertificates.make(key: key)
        defer { certificates.remove() }
        let tls = try ServerCertificate(certificateFile: certificates.chainFile.path, keyFile: certificates.keyFile.path)
        try await TestServer(configure: { $0.tls = tls }).runLive { _, port, _ in
            let base = "https://localhost:\(port)"
            try await Self.withClient(trusting: certificates.caFile) { client in
                let written = try await Self.send(client, .PUT, "\(base)/greeting.json?ns=demo", #""over tls""#)
                #expect(written.status == 200)
                let read = try await Self.send(client, .GET, "\(base)/greeting.json?ns=demo")
                #expect(read.status == 200 && read.body == #""over tls""#)
                let health = try await Self.send(client, .GET, "\(base)/healthz")
                #expect(health.status == 200 && health.body == "ok\n")
                let readiness = try await Self.send(client, .GET, "\(base)/readyz")
                #expect(readiness.status == 200 && readiness.body == "ready\n")
            }
            // Only the system's roots: the handshake fails on the certificate.
            try await Self.withClient(trusting: nil) { untrusting in
                await #expect(throws: (any Error).self) { _ = try await Self.send(untrusting, .GET, "\(base)/healthz") }
            }
            // TLS 1.1 and older are refused.
            try await Self.withClient(trusting: certificates.caFile, maximumVersion: .tlsv11) { old in
                await #expect(throws: (any Error).self) { _ = try await Self.send(old, .GET, "\(base)/healthz") }
            }
        }
    }

    @Test func plainHTTPOnTheTLSPortIsToldToUseHTTPSAndGetsNoData() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let tls = try ServerCertificate(certificateFile: certificates.chainFile.path, keyFile: certificates.keyFile.path)
        try await TestServer(configure: { $0.tls = tls }).runLive { _, port, _ in
            try await Self.withClient(trusting: certificates.caFile) { client in
                _ = try await Self.send(client, .PUT, "https://localhost:\(port)/secret.json?ns=demo", #""s3cr3t-value""#)
            }
            // The same client for plain http (it trusts nothing it will use).
            try await Self.withClient(trusting: nil) { plain in
                let answer = try await Self.send(plain, .GET, "http://127.0.0.1:\(port)/secret.json?ns=demo")
                #expect(answer.status == 400)
                #expect(answer.body.contains("HTTPS only"))
                #expect(!answer.body.contains("s3cr3t"))
            }
        }
    }

    @Test func aReloadServesTheRenewedCertificateToNewConnections() async throws {
        let first = try await TestCertificates.make()
        // Renewed under another authority, so which certificate a connection got shows in whom it must trust.
        let renewed = try await TestCertificates.make(key: .rsa)
        defer {
            first.remove()
            renewed.remove()
        }
        try first.install(into: first)
        let tls = try ServerCertificate(certificateFile: first.liveChainFile.path, keyFile: first.liveKeyFile.path)
        try await TestServer(configure: { $0.tls = tls }).runLive { _, port, _ in
            let url = "https://localhost:\(port)/healthz"
            try await Self.withClient(trusting: first.caFile) { trustsFirst in
                try await Self.withClient(trusting: renewed.caFile) { trustsRenewed in
                    #expect(try await Self.send(trustsFirst, .GET, url).status == 200)
                    await #expect(throws: (any Error).self) { _ = try await Self.send(trustsRenewed, .GET, url) }

                    try renewed.install(into: first)
                    try tls.reload()
                    #expect(try await Self.send(trustsRenewed, .GET, url).status == 200)
                    await #expect(throws: (any Error).self) { _ = try await Self.send(trustsFirst, .GET, url) }
                }
            }
        }
    }
}
