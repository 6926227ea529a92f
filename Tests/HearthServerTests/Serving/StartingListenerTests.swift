import AsyncHTTPClient
import Foundation
@testable import HearthServer
import HearthTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing

/// While the server starts, its port answers: `/healthz` 200, everything else 503 `starting`; then
/// the port is free for the server to bind.
@Suite struct StartingListenerTests {
    static func get(_ url: String, trusting authority: URL? = nil) async throws -> (status: Int, body: String, retryAfter: String?) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let authority { tls.trustRoots = .file(authority.path) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
            try await client.shutdown()
            return (Int(response.status.code), body, response.headers.first(name: "Retry-After"))
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    @Test func probesGetAnAnswerWhileStartingAndThePortIsFreedAfter() async throws {
        let starting = try await StartingListener.open(host: "127.0.0.1", port: 0, certificate: nil)
        let base = "http://127.0.0.1:\(starting.port)"
        let health = try await Self.get("\(base)/healthz")
        #expect(health.status == 200 && health.body == "ok\n")
        for path in ["/readyz", "/users.json?ns=demo", "/.ws?v=5"] {
            let answer = try await Self.get(base + path)
            #expect(answer.status == 503 && answer.body == "starting\n", "\(path)")
            #expect(answer.retryAfter == "1")
        }
        await starting.close()
        // The server can take the same port at once.
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: starting.port).get()
        try await server.close()
    }

    @Test func aConnectionThatSendsNothingIsClosedWithinSeconds() async throws {
        let starting = try await StartingListener.open(host: "127.0.0.1", port: 0, certificate: nil)
        let started = ContinuousClock.now
        // exchange returns what was received once the server closes the connection, nil if still open.
        let received = try await RequestLimitTests.exchange(port: starting.port, sending: [], patience: .seconds(20))
        #expect(received == "")
        #expect(ContinuousClock.now - started < .seconds(15))
        await starting.close()
    }

    @Test func withACertificateItAnswersOverTLSOnly() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let certificate = try ServerCertificate(certificateFile: certificates.chainFile.path, keyFile: certificates.keyFile.path)
        let starting = try await StartingListener.open(host: "127.0.0.1", port: 0, certificate: certificate)
        let answer = try await Self.get("https://localhost:\(starting.port)/readyz", trusting: certificates.caFile)
        #expect(answer.status == 503 && answer.body == "starting\n")
        let plain = try await Self.get("http://127.0.0.1:\(starting.port)/readyz")
        #expect(plain.status == 400 && plain.body.contains("HTTPS only"))
        await starting.close()
    }
}
