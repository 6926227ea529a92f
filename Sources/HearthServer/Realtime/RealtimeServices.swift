import Logging
import Synchronization

/// What every WebSocket connection shares: the databases, the authenticator, the settings, and the
/// directory of open sessions (so a reconnecting client's `ls=` can close its previous session at once).
final class RealtimeServices: Sendable {
    let registry: DatabaseRegistry
    let authenticator: Authenticator
    let configuration: ServerConfiguration
    let logger: Logger
    let sessions = SessionDirectory()

    init(registry: DatabaseRegistry, authenticator: Authenticator, configuration: ServerConfiguration, logger: Logger) {
        self.registry = registry
        self.authenticator = authenticator
        self.configuration = configuration
        self.logger = logger
    }
}

/// The open WebSocket sessions by id.
final class SessionDirectory: Sendable {
    private let sessions = Mutex<[String: RealtimeSession]>([:])

    func add(_ session: RealtimeSession) {
        sessions.withLock { $0[session.id] = session }
    }

    func remove(_ session: RealtimeSession) {
        sessions.withLock { sessions in
            if sessions[session.id] === session { sessions.removeValue(forKey: session.id) }
        }
    }

    func session(_ id: String) -> RealtimeSession? {
        sessions.withLock { $0[id] }
    }

    var count: Int { sessions.withLock { $0.count } }
}
