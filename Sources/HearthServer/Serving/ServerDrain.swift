import Logging
import ServiceLifecycle

/// The first thing a stop does: `/readyz` turns 503 and, for ``ServerConfiguration/drainPeriod``,
/// everything else is still served, so a load balancer moves new clients elsewhere before the server
/// closes its port. Runs before the application in its service group, so it is stopped first.
///
/// ``cutShort()`` ends the drain at once — a second SIGTERM or SIGINT does (``HearthApplication``
/// listens to the signals, one sequence for the whole run); one that comes before the drain starts
/// is kept, and the drain then ends as soon as it starts.
struct ServerDrain: Service {
    let readiness: ServerReadiness
    let period: Duration
    let logger: Logger
    /// At most one pending request to end the drain; the drain runs once, so it has one reader.
    private let cut = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    init(readiness: ServerReadiness, period: Duration, logger: Logger) {
        self.readiness = readiness
        self.period = period
        self.logger = logger
    }

    /// Ends the drain now, or as soon as it starts.
    func cutShort() {
        cut.continuation.yield()
    }

    func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled: the server failed or is being torn down; nothing to drain
        }
        readiness.draining()
        guard period > .zero else { return }
        logger.info("Stopping: /readyz answers 503 for \(period.components.seconds) s while requests are still served (--drain-seconds)")
        let requests = cut.stream
        await withTaskGroup(of: Void.self) { drain in
            drain.addTask { try? await Task.sleep(for: period) }
            drain.addTask {
                for await _ in requests { return }
            }
            await drain.next()
            drain.cancelAll()
        }
    }
}
