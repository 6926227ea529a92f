import Foundation

/// A throwaway certificate authority and a server certificate it signed for `localhost` and
/// `127.0.0.1`, made with the openssl command-line tool in a temporary folder.
///
/// For example:
/// ```swift
/// let certificates = try await TestCertificates.make(key: .rsa)
/// defer { certificates.remove() }
/// configuration.tls = try ServerCertificate(certificateFile: certificates.chainFile.path, keyFile: certificates.keyFile.path)
/// ```
public struct TestCertificates: Sendable {
    /// The server key's kind.
    public enum Key: Sendable {
        case ecdsa, rsa
    }

    public let folder: URL
    public var caFile: URL { folder.appendingPathComponent("ca.pem") }
    /// The server's certificate alone.
    public var certificateFile: URL { folder.appendingPathComponent("server.pem") }
    /// The server's certificate followed by the CA's, as `--tls-cert` takes a full chain.
    public var chainFile: URL { folder.appendingPathComponent("chain.pem") }
    public var keyFile: URL { folder.appendingPathComponent("server-key.pem") }

    struct OpenSSLFailed: Error { var arguments: [String] }

    /// `validDays`: how long the server's certificate is valid from now.
    public static func make(key: Key = .ecdsa, validDays: Int = 2) async throws -> TestCertificates {
        let certificates = TestCertificates(folder: FileManager.default.temporaryDirectory.appendingPathComponent("hearth-tls-\(UUID().uuidString)", isDirectory: true))
        try await certificates.generate(key: key, validDays: validDays)
        return certificates
    }

    private init(folder: URL) {
        self.folder = folder
    }

    private func generate(key: Key, validDays: Int) async throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
            basicConstraints = CA:FALSE
            keyUsage = digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = DNS:localhost, IP:127.0.0.1
            """.write(to: folder.appendingPathComponent("server.ext"), atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(["req", "-x509"] + ec + [
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "\(validDays + 1)", "-subj", "/CN=Hearth Test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        let serverKey = key == .ecdsa ? ec : ["-newkey", "rsa:2048", "-nodes"]
        try await openssl(["req"] + serverKey + ["-keyout", "server-key.pem", "-out", "server.csr", "-subj", "/CN=localhost"])
        try await openssl([
            "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "\(validDays)", "-extfile", "server.ext",
        ])
        let chain = try Data(contentsOf: certificateFile) + Data(contentsOf: caFile)
        try chain.write(to: chainFile)
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

    /// The live files a server is started with, as an ACME client keeps them (`live/fullchain.pem`,
    /// `live/privkey.pem` in this set's folder): ``install(into:)`` another set there to renew.
    public var liveChainFile: URL { folder.appendingPathComponent("live/fullchain.pem") }
    public var liveKeyFile: URL { folder.appendingPathComponent("live/privkey.pem") }

    /// Copies this set's chain and key over `certificates`' live files (made or replaced), as a renewal
    /// does; `only: .chain` or `.key` copies one of them (a renewal half done).
    public func install(into certificates: TestCertificates, only part: Part = .both) throws {
        let manager = FileManager.default
        try manager.createDirectory(at: certificates.liveChainFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        var pairs: [(URL, URL)] = []
        if part != .key { pairs.append((chainFile, certificates.liveChainFile)) }
        if part != .chain { pairs.append((keyFile, certificates.liveKeyFile)) }
        for (source, target) in pairs {
            if manager.fileExists(atPath: target.path) { try manager.removeItem(at: target) }
            try manager.copyItem(at: source, to: target)
        }
    }

    /// What ``install(into:only:)`` copies.
    public enum Part: Sendable {
        case both, chain, key
    }

    public func remove() { try? FileManager.default.removeItem(at: folder) }
}
