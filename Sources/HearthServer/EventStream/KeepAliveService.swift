import HearthProtocol
public import ServiceLifecycle

/// Sends `keep-alive` to every event stream at a fixed interval, so idle streams stay open through
/// proxies and dead connections are noticed.
public struct KeepAliveService: Service {
    let registry: DatabaseRegistry
    let interval: Duration

    public init(registry: DatabaseRegistry, interval: Duration) {
        self.registry = registry
        self.interval = interval
    }

    public func run() async throws {
        // Ends on graceful shutdown: sleeping is cancelled then.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                for database in registry.openDatabases { database.hub.broadcast(.keepAlive) }
            }
        }
    }
}
