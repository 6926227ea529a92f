import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// A throwaway certificate authority and a server certificate it signed for `localhost` and
/// `127.0.0.1`, made with the openssl command-line tool in a temporary folder.
struct TestCertificates {
    let folder: URL
    var caFile: URL { folder.appendingPathComponent("ca.pem") }
    var certificateFile: URL { folder.appendingPathComponent("server.pem") }
    var keyFile: URL { folder.appendingPathComponent("server-key.pem") }

    struct OpenSSLFailed: Error { var arguments: [String] }

    static func make() async throws -> TestCertificates {
        let certificates = TestCertificates(folder: FileManager.default.temporaryDirectory.appendingPathComponent("hearth-tls-\(UUID().uuidString)", isDirectory: true))
        try await certificates.generate()
        return certificates
    }

    private init(folder: URL) {
        self.folder = folder
    }

    private func generate() async throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
            basicConstraints = CA:FALSE
            keyUsage = digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = DNS:localhost, IP:127.0.0.1
            """.write(to: folder.appendingPathComponent("server.ext"), atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(["req", "-x509"] + ec + [
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Hearth Test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        try await openssl(["req"] + ec + ["-keyout", "server-key.pem", "-out", "server.csr", "-subj", "/CN=localhost"])
        try await openssl([
            "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "server.ext",
        ])
    }

    private func openssl(_ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = folder
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let finished = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in finished.continuation.finish() }
        try process.run()
        // Not waitUntilExit: that would block a thread of the shared pool other tests need.
        for await _ in finished.stream {}
        guard process.terminationStatus == 0 else { throw OpenSSLFailed(arguments: arguments) }
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }
}

/// Terminates TLS on a loopback port and forwards the plain bytes to a backend port: a Hearth
/// server behind `wss`/`https`, as a reverse proxy would put it.
final class TLSProxy: Sendable {
    let channel: any Channel
    var port: Int { channel.localAddress?.port ?? 0 }

    init(certificates: TestCertificates, backendPort: Int) async throws {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificates.certificateFile.path).map { .certificate($0) },
            privateKey: .file(certificates.keyFile.path)
        )
        configuration.minimumTLSVersion = .tlsv12
        let context = try NIOSSLContext(configuration: configuration)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        outbound.eventLoop.makeCompletedFuture {
                            try outbound.pipeline.syncOperations.addHandler(Forward(partner: inbound))
                        }
                    }
                    .connect(host: "127.0.0.1", port: backendPort)
                    .flatMapThrowing { outbound in
                        try inbound.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                        try inbound.pipeline.syncOperations.addHandler(Forward(partner: outbound))
                    }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    func stop() async {
        try? await channel.close()
    }

    /// Writes what one side reads to the other, and closes the other when one side ends.
    final class Forward: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let partner: any Channel

        init(partner: any Channel) { self.partner = partner }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            partner.close(promise: nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
