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
        try await group().run()
    }

    /// Runs until one of `gracefulShutdownSignals` arrives, then stops: readiness off, the drain (which
    /// a second signal cuts short), then the server, its sessions and its databases, in that order.
    ///
    /// The signals are trapped here, in one sequence for the whole run, rather than by the service
    /// group: the group would stop listening after the first, and a drain that trapped them again
    /// itself could miss a second one sent as soon as `/readyz` showed the drain.
    public func runService(gracefulShutdownSignals signals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        let group = group()
        guard !signals.isEmpty else {
            try await group.run()
            return
        }
        let stopSignals = await UnixSignalsSequence(trapping: signals)
        enum Ended { case group, signals }
        try await withThrowingTaskGroup(of: Ended.self) { tasks in
            tasks.addTask {
                try await group.run()
                return .group
            }
            tasks.addTask { [drain] in
                var first = true
                for await _ in stopSignals {
                    if first {
                        first = false
                        await group.triggerGracefulShutdown()
                    } else {
                        drain.cutShort()
                    }
                }
                return .signals
            }
            // Until the group ends (the signals' task then ends when it is cancelled).
            while let ended = try await tasks.next() {
                if ended == .group {
                    tasks.cancelAll()
                    return
                }
            }
        }
    }

    private func group() -> ServiceGroup {
        // Stopped in reverse order: the drain first, while the application still serves.
        ServiceGroup(
            configuration: .init(services: [application] + emulatorServices + [reload, drain], gracefulShutdownSignals: [], logger: logger)
        )
    }
}
