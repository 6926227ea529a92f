import Foundation
@testable import Hearth
import HearthCore
import HearthServer
import HearthTestSupport
import Synchronization
import Testing

/// `https`/`wss` database URLs against a live server serving TLS itself (`--tls-cert`) with a
/// certificate from a throwaway CA: trusted through `trustedCertificateAuthorityFiles` (by the
/// WebSocket, and by Auth's and Storage's HTTP), and refused without it.
@Suite struct LiveTLSTests {
    static func withTLSServer(
        identity: Bool = false,
        files: Bool = false,
        _ test: @Sendable (_ port: Int, _ certificates: TestCertificates) async throws -> Void
    ) async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let tls = try ServerCertificate(certificateFile: certificates.chainFile.path, keyFile: certificates.keyFile.path)
        try await LiveServer.run(identity: identity, files: files, tls: tls) { url, _ in
            #expect(url.hasPrefix("https://"))
            try await test(try #require(URLComponents(string: url)?.port), certificates)
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

    @Test func authAndStorageOverHTTPSTrustTheDatabasesAuthorities() async throws {
        try await Self.withTLSServer(identity: true, files: true) { port, certificates in
            let database = try makeClient("https://localhost:\(port)?ns=demo")
            database.trustedCertificateAuthorityFiles = [certificates.caFile]
            let user = try await Auth.auth(database: database).createUser(withEmail: "tls@example.com", password: "correct horse").user
            #expect(!user.uid.isEmpty)
            let storage = Storage.storage(database: database)
            storage.maxOperationRetryTime = 20
            storage.maxUploadRetryTime = 20
            storage.maxDownloadRetryTime = 20
            let object = storage.reference(withPath: "tls/hello.txt")
            // One multipart request, and a resumable upload (over 256 KiB), whose session URL the server
            // builds `https` from its own TLS.
            let bytes = Data(repeating: 7, count: 200_000)
            let metadata = try await object.putDataAsync(bytes)
            #expect(metadata.size == 200_000)
            #expect(try await object.data(maxSize: 1 << 20) == bytes)
            let large = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0) })
            let resumable = try await storage.reference(withPath: "tls/large.bin").putDataAsync(large)
            #expect(resumable.size == 700_000)
            #expect(try await storage.reference(withPath: "tls/large.bin").data(maxSize: 1 << 21) == large)
            database.goOffline()
        }
    }

    @Test func authAndStorageRefuseAServerWhoseAuthorityIsNotTrusted() async throws {
        try await Self.withTLSServer(identity: true, files: true) { port, _ in
            let database = try makeClient("https://localhost:\(port)?ns=demo")
            do {
                try await Auth.auth(database: database).signInAnonymously()
                Issue.record("expected a network error")
            } catch let error as AuthError {
                #expect(error.code == .networkError)
            }
            let storage = Storage.storage(database: database)
            storage.maxOperationRetryTime = 0.5
            do {
                _ = try await storage.reference(withPath: "tls/hello.txt").getMetadata()
                Issue.record("expected retryLimitExceeded")
            } catch let error as StorageError {
                #expect(error.code == .retryLimitExceeded)
            }
            database.goOffline()
        }
    }
}
