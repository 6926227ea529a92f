import Foundation
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// `https`/`wss` database URLs against a live server behind a TLS-terminating proxy whose
/// certificate comes from a throwaway CA: trusted through `trustedCertificateAuthorityFiles`, and
/// refused without it.
@Suite struct LiveTLSTests {
    static func withTLSServer(
        identity: Bool = false,
        _ test: @Sendable (_ port: Int, _ certificates: TestCertificates) async throws -> Void
    ) async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        try await LiveServer.run(identity: identity) { url, _ in
            let backend = try #require(URLComponents(string: url)?.port)
            let proxy = try await TLSProxy(certificates: certificates, backendPort: backend)
            do {
                try await test(proxy.port, certificates)
            } catch {
                await proxy.stop()
                throw error
            }
            await proxy.stop()
        }
    }

    @Test(arguments: ["localhost", "127.0.0.1"])
    func aDatabaseAtAnHTTPSURLSyncsOverTLSWithATrustedCustomAuthority(host: String) async throws {
        try await Self.withTLSServer { port, certificates in
            let url = "https://\(host):\(port)?ns=demo"
            let writer = try makeClient(url)
            writer.trustedCertificateAuthorityFiles = [certificates.caFile]
            let reader = try makeClient(url)
            reader.trustedCertificateAuthorityFiles = [certificates.caFile]
            #expect(writer.reference(withPath: "x").url == "https://\(host):\(port)/x?ns=demo")
            let recorder = Recorder()
            recorder.observe(reader.reference(withPath: "messages"), .childAdded)
            try await writer.reference(withPath: "messages/m1").setValue("over tls")
            #expect(await recorder.wait(count: 1) == [#"added m1 prev=- "over tls""#])
            writer.goOffline()
            reader.goOffline()
        }
    }

    @Test func aServerCertificateFromAnUntrustedAuthorityIsRefused() async throws {
        try await Self.withTLSServer { port, certificates in
            let frames = Mutex<[String]>([])
            // Only the system's roots: the TLS handshake fails on the certificate and no frame arrives.
            await #expect(throws: (any Error).self) {
                _ = try await NIOWebSocketTransport().connect(
                    host: "localhost", port: port, secure: true, path: "/.ws?v=5&ns=demo",
                    onFrame: { frame in frames.withLock { $0.append(frame) } }, onClose: {}
                )
            }
            #expect(frames.withLock { $0.isEmpty })
            // The same connect trusting the CA opens the socket and receives the server's handshake.
            let transport = NIOWebSocketTransport().trusting(certificateAuthorityFiles: [certificates.caFile])
            let socket = try await transport.connect(
                host: "localhost", port: port, secure: true, path: "/.ws?v=5&ns=demo",
                onFrame: { frame in frames.withLock { $0.append(frame) } }, onClose: {}
            )
            await waitUntil { frames.withLock { $0.contains { $0.contains(#""t":"h""#) } } }
            socket.close()
        }
    }

    @Test func aClientWithoutTheAuthorityNeverConnectsAndKeepsItsWritesQueued() async throws {
        try await Self.withTLSServer { port, certificates in
            let untrusting = try Hearth.Database(url: "https://localhost:\(port)?ns=demo", transport: RecordingTransport(), clock: FastClock())
                .withRealisticConnectTimeout()
            untrusting.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
            let transport = try #require(untrusting.repo.transport as? RecordingTransport)
            withoutWaiting { untrusting.reference(withPath: "pending").setValue(1) }
            // Several attempts (1 ms apart on the fast clock) all fail in the TLS handshake.
            await waitUntil { transport.failedConnects >= 3 }
            #expect(transport.connectCount == 0)
            // The write waits for a connection (it is neither sent nor failed).
            #expect(untrusting.repo.state.withLock { $0.operations.count } == 1)
            untrusting.goOffline()
            _ = certificates
        }
    }
}
