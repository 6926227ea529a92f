import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Reads the TLS certificate and key again on SIGHUP (after a renewal: `systemctl reload hearth`).
/// Connections open then keep the certificate they shook hands with; new ones get the new one. A file
/// that cannot be used keeps the old certificate, and says why.
///
/// Without TLS, a SIGHUP is logged and ignored rather than ending the process (its default).
struct CertificateReloadService: Service {
    let certificate: ServerCertificate?
    let logger: Logger

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            for await _ in hangups {
                reload()
            }
        }
    }

    func reload() {
        guard let certificate else {
            logger.info("SIGHUP: nothing to reload (no --tls-cert)")
            return
        }
        do {
            try certificate.reload()
            logger.info(
                "Reloaded the TLS certificate",
                metadata: ["file": "\(certificate.certificateFile)", "expires": "\(certificate.notValidAfter.formatted(.iso8601))"]
            )
        } catch {
            logger.warning("Kept the previous TLS certificate: \(error)")
        }
    }
}
