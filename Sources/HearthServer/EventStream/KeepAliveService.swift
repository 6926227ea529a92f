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
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            for database in registry.openDatabases { database.hub.broadcast(.keepAlive) }
        }
    }
}
