import Logging
import ServiceLifecycle
import UnixSignals

/// The first thing a stop does: `/readyz` turns 503 and, for ``ServerConfiguration/drainPeriod``,
/// everything else is still served, so a load balancer moves new clients elsewhere before the server
/// closes its port. Runs before the application in its service group, so it is stopped first.
struct ServerDrain: Service {
    let readiness: ServerReadiness
    let period: Duration
    let logger: Logger
    /// The signals that began the stop: another one ends the drain at once.
    var signals: [UnixSignal] = []

    func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled: the server failed or is being torn down; nothing to drain
        }
        // Trapped before /readyz turns 503: a second signal sent as soon as the drain shows must not
        // be lost (the sequence buffers what arrives before it is iterated).
        let secondSignal = period > .zero && !signals.isEmpty ? await UnixSignalsSequence(trapping: signals) : nil
        readiness.draining()
        guard period > .zero else { return }
        logger.info("Stopping: /readyz answers 503 for \(period.components.seconds) s while requests are still served (--drain-seconds)")
        await withTaskGroup(of: Void.self) { drain in
            drain.addTask { try? await Task.sleep(for: period) }
            if let secondSignal {
                drain.addTask {
                    for await _ in secondSignal { return }
                }
            }
            await drain.next()
            drain.cancelAll()
        }
    }
}
