public import Foundation
import HearthAccess
import HearthEngine
import HearthFiles
import HearthIdentity
/// Settings of a Hearth server, independent of where data is stored.
///
/// For example:
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.port = 9001
/// configuration.emulatorMode = true
/// ```
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 9000
    /// Firebase-emulator compatibility: new databases are open, and `Bearer owner` is admin.
    public var emulatorMode = false
    /// The namespace used when a request names none (`?ns=` or a `<ns>.host` Host header).
    public var defaultNamespace = "default"
    /// How often idle event streams get a `keep-alive` event.
    public var keepAliveInterval: Duration = .seconds(30)
    /// Events queued for one stream before it counts as a slow consumer and is cut off.
    public var eventStreamBufferLimit = 4096
    /// The largest request body accepted (Firebase's REST limit is 256 MB).
    public var maximumRequestBytes = 256 * 1024 * 1024
    /// Require `.indexOn` for `orderBy` on a child or `$value`, as Firebase does.
    public var enforceIndexes = true
    /// Bytes queued for one WebSocket client, beyond its largest message, before it counts as a slow
    /// consumer and is disconnected (a single message may be larger: a read of a large location).
    public var realtimeOutboundLimit = 16 * 1024 * 1024
    /// Long-polling connections open at once (`/.lp`); more are refused with 503 until some close.
    public var maximumLongPollConnections = 10_000
    /// A WebSocket client that sends nothing for this long is disconnected (clients send a keep-alive
    /// every 45 s).
    public var realtimeIdleTimeout: Duration = .seconds(120)
    /// The time everything time-dependent runs on (timeouts, keep-alives, token expiry, `now`); tests
    /// replace it with a clock they drive.
    public var clock: ServerClock = .system
    /// The identity service (Firebase Authentication's API): project, API keys, password hashing.
    public var identity = IdentityConfiguration()
    /// The file service (Firebase Storage's and Cloud Storage's APIs).
    public var files = FilesConfiguration()
    /// A stored database at least this large (bytes on disk) answers reads from its file while it
    /// loads after a start, instead of waiting for the load; writes and listens wait for it.
    public var warmStartBytes = 8 * 1024 * 1024
    /// Databases stay in their files and only what writes change is held in memory, dropped when the
    /// process is over this limit (SQLite storage on one node; ignored elsewhere). Nil: whole trees in
    /// memory, the fastest.
    public var memoryLimit: MemoryLimit?
    /// Whether the reference apps are served (`/apps/…`) and their namespaces' rules installed on a
    /// fresh server. `hearth serve` turns them off on a non-loopback address unless asked for: their
    /// rules let anyone write (docs/security.md).
    public var referenceApps = true
    /// How long a connection may take to send a request head (from its first byte, or from the end of
    /// the previous response), and how long a request body may stay silent; past it the connection is
    /// closed (slow-client attacks, docs/security.md). Responses that stream (event streams, long polls)
    /// are not limited by it.
    public var requestReadTimeout: Duration = .seconds(60)
    /// Set: the server speaks only TLS (https, wss) on its port, with this certificate (`--tls-cert`,
    /// `--tls-key`); plain HTTP requests are answered 400.
    public var tls: ServerCertificate?
    /// After SIGTERM or SIGINT, how long `/readyz` answers 503 while everything else is still served,
    /// so load balancers stop sending new clients before the server stops (`--drain-seconds`).
    public var drainPeriod: Duration = .zero
    /// Log every HTTP request at info level under the label `hearth.access` (`--access-log`): method,
    /// path, redacted query, status, duration, bytes, client address; never credentials or values.
    public var accessLog = false

    public init() {}

    /// `https` when the server serves TLS, else `http`.
    /// After a user's tokens are revoked by a new `validSince` (a password or email change, an admin's
    /// revocation), how long its open WebSocket sessions may sign in again with a newer token before
    /// they are told theirs expired. The SDK that made the change sends its new token within
    /// milliseconds; told at once, the official web SDK refreshed with the refresh token the change had
    /// just revoked and signed its user out. Disabled and deleted users are told at once.
    public var reauthenticationGrace: Duration = .seconds(10)

    /// The Firebase Emulator Suite drop-in (emulator mode, from firebase.json): more ports, watched
    /// rules files, an import at start and an export on exit.
    public var emulatorSuite = EmulatorSuiteOptions()

    public var scheme: String { tls == nil ? "http" : "https" }

    /// What the database engine reads of these settings.
    public var engine: EngineConfiguration {
        var engine = EngineConfiguration()
        engine.clock = clock
        engine.emulatorMode = emulatorMode
        engine.eventStreamBufferLimit = eventStreamBufferLimit
        engine.warmStartBytes = warmStartBytes
        engine.memoryLimit = memoryLimit
        return engine
    }
}

/// What `hearth serve --emulator` takes from a Firebase project (``EmulatorSetup``) and its flags.
///
/// For example:
/// ```swift
/// configuration.emulatorSuite.additionalListeners = [.init(host: "127.0.0.1", port: 9099)]
/// configuration.emulatorSuite.exportOnExit = URL(fileURLWithPath: "seed")
/// ```
public struct EmulatorSuiteOptions: Sendable {
    /// An address served besides ``ServerConfiguration/host`` and ``ServerConfiguration/port``.
    public struct Listener: Sendable, Equatable {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    public var additionalListeners: [Listener] = []
    /// Where each emulator of firebase.json listens (`database`, `auth`, `storage`, `hub`), for the
    /// hub's `GET /emulators`.
    public var emulators: [String: Listener] = [:]
    /// Loaded before the server serves (one that does not load stops the start), then watched.
    public var rulesFiles: [WatchedRulesFile] = []
    /// An emulators:export directory loaded before the server serves.
    public var importDirectory: URL?
    /// Lets the import replace data the storage already holds (otherwise it is refused).
    public var replaceOnImport = false
    /// Where to write an export when the server is stopped by a signal.
    public var exportOnExit: URL?

    public init() {}
}
