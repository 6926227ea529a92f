import Foundation
import NIOSSL

extension TLSConfiguration {
    /// The SDK's TLS client settings, for `wss` and for `https` when certificate authorities are
    /// added: TLS 1.2 or newer, full certificate and host name checks, and the system's roots plus
    /// the authorities in `certificateAuthorityFiles` (PEM; ``Database/trustedCertificateAuthorityFiles``).
    ///
    /// For example:
    /// ```swift
    /// let context = try NIOSSLContext(configuration: .hearthClient(trusting: [URL(fileURLWithPath: "ca.pem")]))
    /// ```
    static func hearthClient(trusting certificateAuthorityFiles: [URL]) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        configuration.additionalTrustRoots = certificateAuthorityFiles.map { .file($0.path) }
        return configuration
    }
}
