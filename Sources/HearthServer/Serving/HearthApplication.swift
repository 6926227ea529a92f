import Logging
public import ServiceLifecycle
public import UnixSignals

/// The server as `hearth serve` runs it: the HTTP application, the drain that comes before its stop,
/// and the certificate reload on SIGHUP.
///
/// For example:
/// ```swift
/// let server = try await buildApplication(configuration: configuration, storage: storage, adminSecret: secret)
/// try await server.runService()   // until SIGTERM or SIGINT
/// ```
public struct HearthApplication: Service {
    let application: any Service
    /// More listeners and the export on exit (emulator mode): stopped after the drain, before the
    /// application, so an export on exit sees every write and the ports close before the databases.
    let emulatorServices: [any Service]
    let drain: ServerDrain
    let reload: CertificateReloadService
    let logger: Logger

    /// Runs until cancelled or shut down gracefully (by a parent service group).
    public func run() async throws {
        try await group(signals: []).run()
    }

    /// Runs until one of `gracefulShutdownSignals` arrives, then stops: readiness off, the drain (which
    /// a second signal cuts short), then the server, its sessions and its databases, in that order.
    public func runService(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        try await group(signals: gracefulShutdownSignals).run()
    }

    private func group(signals: [UnixSignal]) -> ServiceGroup {
        // Stopped in reverse order: the drain first, while the application still serves.
        var drain = drain
        drain.signals = signals
        return ServiceGroup(
            configuration: .init(services: [application] + emulatorServices + [reload, drain], gracefulShutdownSignals: signals, logger: logger)
        )
    }
}
