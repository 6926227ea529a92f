public import Foundation
public import HearthCore
import Logging
public import NIOSSL
import Synchronization

/// The certificate chain and private key the server serves TLS with, read from PEM files and read
/// again on ``reload()`` (SIGHUP, after a renewal); connections take the one current when they open.
///
/// For example:
/// ```swift
/// let certificate = try ServerCertificate(certificateFile: "/etc/hearth/fullchain.pem", keyFile: "/etc/hearth/key.pem")
/// var configuration = ServerConfiguration()
/// configuration.tls = certificate
/// ```
public final class ServerCertificate: Sendable {
    /// The PEM file of the certificate chain, the server's certificate first.
    public let certificateFile: String
    /// The PEM file of the private key (RSA or ECDSA).
    public let keyFile: String

    /// A loaded chain and key, ready for handshakes.
    struct Loaded {
        var context: NIOSSLContext
        /// When the server's certificate expires.
        var notValidAfter: Date
    }

    private let current: Mutex<Loaded>

    /// Reads both files; throws a ``ServerCertificateError`` naming the file that is missing,
    /// unreadable, not PEM, or whose key does not belong to the certificate.
    public init(certificateFile: String, keyFile: String) throws {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        current = Mutex(try Self.load(certificateFile: certificateFile, keyFile: keyFile))
    }

    /// The context new connections handshake with.
    var context: NIOSSLContext { current.withLock { $0.context } }

    /// When the certificate being served expires.
    public var notValidAfter: Date { current.withLock { $0.notValidAfter } }

    /// Reads both files again and serves what they hold from the next connection on. On any error the
    /// certificate served so far stays, and the error (naming the file) is thrown.
    public func reload() throws {
        let loaded = try Self.load(certificateFile: certificateFile, keyFile: keyFile)
        current.withLock { $0 = loaded }
    }

    static func load(certificateFile: String, keyFile: String) throws -> Loaded {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(Array(try readFile(certificateFile)))
        } catch let error as ServerCertificateError {
            throw error
        } catch {
            throw ServerCertificateError(file: certificateFile, problem: "not a PEM certificate (\(error))")
        }
        guard let leaf = chain.first else {
            throw ServerCertificateError(file: certificateFile, problem: "holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(try readFile(keyFile)), format: .pem)
        } catch let error as ServerCertificateError {
            throw error
        } catch {
            throw ServerCertificateError(file: keyFile, problem: "not a PEM private key (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)
        )
        // TLS 1.2 and 1.3 only; browsers and the SDKs all speak them.
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw ServerCertificateError(file: keyFile, problem: "does not hold the private key of the certificate in \(certificateFile) (\(error))")
        }
        return Loaded(context: context, notValidAfter: Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)))
    }

    private static func readFile(_ path: String) throws -> Data {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ServerCertificateError(file: path, problem: "does not exist")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ServerCertificateError(file: path, problem: "cannot be read (check its permissions)")
        }
        return data
    }
}

/// A certificate or key file that cannot serve TLS, and why.
public struct ServerCertificateError: HearthError {
    /// The file at fault.
    public var file: String
    public var problem: String

    public var message: String { "\(file): \(problem)" }
}
