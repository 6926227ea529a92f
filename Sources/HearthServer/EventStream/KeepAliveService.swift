import HearthAccess
import HearthEngine
import HearthProtocol
public import ServiceLifecycle

/// Sends `keep-alive` to every event stream at a fixed interval, so idle streams stay open through
/// proxies and dead connections are noticed.
public struct KeepAliveService: Service {
    let registry: DatabaseRegistry
    let interval: Duration
    let clock: ServerClock

    public init(registry: DatabaseRegistry, interval: Duration, clock: ServerClock = .system) {
        self.registry = registry
        self.interval = interval
        self.clock = clock
    }

    public func run() async throws {
        // Ends on graceful shutdown: sleeping is cancelled then.
        try? await cancelWhenGracefulShutdown {
            // On a schedule from the clock's origin, not from when this task happens to start.
            var deadline = Duration.zero
            while !Task.isCancelled {
                deadline = ServerClock.next(after: deadline, every: interval, now: clock.elapsed)
                try await clock.sleep(untilElapsed: deadline)
                for database in registry.openDatabases { database.hub.broadcast(.keepAlive) }
            }
        }
    }
}
