import HearthAccess
import HearthEngine
import Logging
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// What every WebSocket connection shares: the databases, the authenticator, the settings, and the
/// directory of open sessions (so a reconnecting client's `ls=` can close its previous session at once).
final class RealtimeServices: Sendable {
    let registry: DatabaseRegistry
    let authenticator: Authenticator
    let configuration: ServerConfiguration
    let logger: Logger
    /// Where `--access-log` lines go (WebSocket connections as they close).
    let accessLogger = Logger(label: AccessLogMiddleware<HearthRequestContext>.label)
    let activity: ServerActivity
    /// Counts wrong admin secrets sent in `auth` messages against the client's address, as on HTTP.
    let adminSecretGuard: AdminSecretGuard
    let sessions = SessionDirectory()
    /// Open long-polling connections (they hold no socket between polls, so nothing else bounds them).
    let longPolls = Atomic<Int>(0)
    /// The clock time (elapsed nanoseconds) of the idle reaper's latest sweep; -1 before the first.
    /// Tests wait for a sweep after advancing the clock.
    let lastIdleSweep = Atomic<Int64>(-1)

    init(
        registry: DatabaseRegistry, authenticator: Authenticator, configuration: ServerConfiguration, activity: ServerActivity,
        adminSecretGuard: AdminSecretGuard? = nil, logger: Logger
    ) {
        self.registry = registry
        self.adminSecretGuard = adminSecretGuard ?? AdminSecretGuard(configuration: configuration)
        self.activity = activity
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

    var all: [RealtimeSession] { sessions.withLock { Array($0.values) } }

    /// Closes the sessions whose client has sent nothing since `cutoff` (elapsed nanoseconds), and
    /// pings those that have sent nothing since `pingCutoff`.
    func closeIdle(silentSince cutoff: Int64, pingSince pingCutoff: Int64) {
        for session in sessions.withLock({ Array($0.values) }) {
            session.closeIfSilent(since: cutoff)
            session.pingIfQuiet(since: pingCutoff)
        }
    }

    /// Closes every session (server shutdown).
    func closeAll() {
        for session in sessions.withLock({ Array($0.values) }) { session.close(code: .goingAway) }
    }
}

/// Keeps the databases running until every WebSocket session has ended on shutdown.
///
/// Upgraded connections are not tasks of the HTTP server, so the server stops before they have closed.
/// This service shuts down after the server and before the databases (services stop in reverse order):
/// it closes what is left and waits (at most `timeout`) for every session to end, so their onDisconnect
/// writes are queued while the writers still run.
struct RealtimeShutdownService: Service {
    let services: RealtimeServices
    var timeout: Duration = .seconds(5)

    func run() async throws {
        try? await gracefulShutdown()
        services.sessions.closeAll()
        let deadline = ContinuousClock.now + timeout
        while services.sessions.count > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// Closes WebSocket connections whose client has sent nothing for
/// ``ServerConfiguration/realtimeIdleTimeout`` (clients send a keep-alive every 45 s).
///
/// One task serves every connection: each records when it last received a frame, and this sweeps them
/// every quarter of the timeout, so a silent connection is closed between 1 and 1.25 timeouts after its
/// last frame and an idle connection costs no timer of its own. It sleeps on the server's clock, so
/// tests advance time to make it act.
struct IdleConnectionReaper: Service {
    let services: RealtimeServices

    func run() async throws {
        let clock = services.configuration.clock
        let timeout = services.configuration.realtimeIdleTimeout
        let interval = timeout / 4
        let timeoutNanoseconds = Int64(ServerClock.milliseconds(timeout) * 1_000_000)
        try? await cancelWhenGracefulShutdown {
            // On a schedule from the clock's origin, not from when this task happens to start.
            var deadline = Duration.zero
            while !Task.isCancelled {
                deadline = ServerClock.next(after: deadline, every: interval, now: clock.elapsed)
                try await clock.sleep(untilElapsed: deadline)
                let now = clock.elapsedNanoseconds
                // Half the timeout without a frame from the client: a ping, which a live client answers.
                services.sessions.closeIdle(silentSince: now - timeoutNanoseconds, pingSince: now - timeoutNanoseconds / 2)
                services.lastIdleSweep.store(now, ordering: .releasing)
            }
        }
    }
}
