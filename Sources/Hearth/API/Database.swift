import Dispatch
import Foundation
import HearthCore
import Synchronization

/// An identifier for an observer, returned by `observe` and passed to `removeObserver(withHandle:)`.
public typealias DatabaseHandle = UInt

/// A Hearth database: the entry point, as FirebaseDatabase's `Database`.
///
/// One instance (and one WebSocket) exists per URL. Configure it (`useEmulator`, `callbackQueue`,
/// `authTokenProvider`) before the first reference is used.
///
/// For example:
/// ```swift
/// let database = Database.database(url: "http://127.0.0.1:9000?ns=demo")
/// database.callbackQueue = DispatchQueue(label: "events")
/// database.reference(withPath: "messages").childByAutoId().setValue(["text": "hi"])
/// ```
public final class Database: Sendable {
    let repo: Repo


    private static let instances = Mutex<[String: Database]>([:])
    private static let defaultURL = Mutex<String?>(nil)

    /// A separate instance with its own connection and cache, like a second `FirebaseApp`: for tests,
    /// tools and servers that act as several clients. Most apps use ``database(url:)``.
    ///
    /// ```swift
    /// let alice = try Database(url: "http://127.0.0.1:9000?ns=demo")
    /// ```
    public init(
        url: String,
        transport: any WebSocketTransport = NIOWebSocketTransport(),
        clock: any HearthClock = SystemClock()
    ) throws {
        repo = Repo(info: try RepoInfo(url: url), transport: transport, clock: clock)
        repo.owner.withLock { $0 = self }
    }

    /// The shared instance for a database URL such as `https://demo.firebaseio.com` or
    /// `http://127.0.0.1:9000?ns=demo`. An invalid URL stops the program, as in Firebase.
    public static func database(url: String) -> Database {
        instances.withLock { instances in
            if let existing = instances[url] { return existing }
            do {
                let database = try Database(url: url)
                instances[url] = database
                return database
            } catch {
                fatalError("Hearth: \(error)")
            }
        }
    }

    /// The instance for the URL given to ``configure(url:)``.
    public static func database() -> Database {
        guard let url = defaultURL.withLock({ $0 }) else {
            fatalError("Hearth: call Database.configure(url:) before Database.database()")
        }
        return database(url: url)
    }

    /// Sets the URL ``database()`` uses (Hearth's stand-in for `FirebaseApp.configure()`).
    public static func configure(url: String) {
        defaultURL.withLock { $0 = url }
    }

    /// Accepted for compatibility; the SDK does not log yet.
    public static func setLoggingEnabled(_ enabled: Bool) {}

    /// The SDK's version.
    public static func sdkVersion() -> String { "0.1.0" }

    /// Connects to a local server or emulator instead of the URL's host; the namespace stays. Call
    /// before using any reference.
    public func useEmulator(withHost host: String, port: Int) {
        repo.state.withLock { state in
            precondition(!state.started, "Hearth: useEmulator must be called before the database is used")
            state.info.host = host
            state.info.port = port
            state.info.secure = false
        }
    }

    /// PEM files of certificate authorities to trust for `https`/`wss` besides the system's roots: a
    /// self-hosted server whose certificate comes from its own CA. Set it before the database is
    /// first used. The database's WebSocket, and Auth's and Storage's `https` requests, trust them.
    ///
    /// `URLSession` cannot add trust roots to one session on Linux: swift-corelibs-foundation has
    /// libcurl verify the server against the system's CA bundle and gives the session's delegate no
    /// server-trust challenge. So while this list is not empty, Auth and Storage send `https`
    /// requests through SwiftNIO and swift-nio-ssl instead of `URLSession`, on every platform (one
    /// connection per request, no redirects, no proxy); with the list empty they use `URLSession`
    /// (docs/decisions/0015-sdk-http-layer.md).
    ///
    /// ```swift
    /// let database = Database.database(url: "https://hearth.internal:9443?ns=demo")
    /// database.trustedCertificateAuthorityFiles = [URL(fileURLWithPath: "/etc/hearth/ca.pem")]
    /// ```
    public var trustedCertificateAuthorityFiles: [URL] {
        get { repo.state.withLock { $0.certificateAuthorityFiles } }
        set {
            repo.state.withLock { state in
                precondition(!state.started, "Hearth: trustedCertificateAuthorityFiles must be set before the database is used")
                state.certificateAuthorityFiles = newValue
            }
        }
    }

    /// The HTTP transport of Auth and Storage: `URLSession`, or while
    /// ``trustedCertificateAuthorityFiles`` names authorities, SwiftNIO for `https` requests.
    var httpTransport: any HTTPTransport {
        let authorities = trustedCertificateAuthorityFiles
        return authorities.isEmpty ? URLSessionHTTPTransport.shared : NIOHTTPTransport(certificateAuthorityFiles: authorities)
    }

    /// The queue callbacks (events, completions) run on; the main queue by default. Use a serial
    /// queue: events arrive in order only on one.
    public var callbackQueue: DispatchQueue {
        get { repo.callbacks.withLock { $0.queue } }
        set { repo.setCallbackQueue(newValue) }
    }

    /// Supplies the credential sent on each connection (the hook for an Auth client). A JWT goes as
    /// `auth`; anything else (such as an emulator's `owner`) as `gauth`.
    public var authTokenProvider: (@Sendable () async -> String?)? {
        get { repo.state.withLock { $0.tokenProvider } }
        set { repo.state.withLock { $0.tokenProvider = newValue } }
    }

    /// Sends a new credential on the open connection (after sign-in, sign-out or a refresh).
    public func updateAuthToken(_ token: String?) {
        repo.updateAuthToken(token)
    }

    /// Keeps what the client knows on disk (a SQLite file per database): the data of the locations it
    /// listened to, so a launch without a connection shows its last data, and the writes the server
    /// has not confirmed, so a write made offline reaches the server even if the app is closed first.
    /// Set it before the database is first used, as in Firebase.
    ///
    /// ```swift
    /// let database = Database.database(url: "http://127.0.0.1:9000?ns=demo")
    /// database.isPersistenceEnabled = true
    /// database.reference(withPath: "drafts/1").setValue("written offline")
    /// ```
    public var isPersistenceEnabled: Bool {
        get { repo.state.withLock { $0.persistenceEnabled } }
        set {
            repo.state.withLock { state in
                precondition(!state.started, "Hearth: isPersistenceEnabled must be set before the database is used")
                state.persistenceEnabled = newValue
            }
        }
    }

    /// The folder persistence keeps its files in (one subfolder per database); by default the
    /// platform's application-support folder (`~/.local/share/hearth` on Linux). Set it before the
    /// database is first used.
    public var persistenceDirectory: URL {
        get { repo.state.withLock { $0.persistenceRoot } }
        set {
            repo.state.withLock { state in
                precondition(!state.started, "Hearth: persistenceDirectory must be set before the database is used")
                state.persistenceRoot = newValue
            }
        }
    }

    /// The size the persisted cache of server data is kept under (1 MB … 100 MB, 10 MB by default):
    /// beyond it, the least recently updated locations that no observer holds are evicted.
    public var persistenceCacheSizeBytes: UInt {
        get { UInt(repo.state.withLock { $0.cacheSizeBytes }) }
        set { repo.state.withLock { $0.cacheSizeBytes = Int(min(max(newValue, 1024 * 1024), 100 * 1024 * 1024)) } }
    }

    /// A reference to the root.
    public func reference() -> DatabaseReference {
        DatabaseReference(database: self, path: .root)
    }

    /// A reference to a slash-separated path such as `users/ada`. `.info/connected` and
    /// `.info/serverTimeOffset` are local values about the connection. An invalid path stops the program.
    public func reference(withPath path: String) -> DatabaseReference {
        DatabaseReference(database: self, path: Database.parsePath(path))
    }

    /// A reference from a full URL of this database, such as `http://127.0.0.1:9000/users/ada?ns=demo`.
    public func reference(fromURL url: String) -> DatabaseReference {
        guard let components = URLComponents(string: url) else { fatalError("Hearth: invalid URL \(url)") }
        let path = components.percentEncodedPath.removingPercentEncoding ?? components.path
        return reference(withPath: path)
    }

    /// Cancels every write the server has not confirmed: local data rolls back (with events) and
    /// their completions fail with ``DatabaseError/Code/writeCanceled``.
    public func purgeOutstandingWrites() { repo.purgeOutstandingWrites() }

    /// Reconnects after ``goOffline()``.
    public func goOnline() { repo.goOnline() }

    /// Closes the connection (the server runs this client's onDisconnect operations). Writes made
    /// while offline queue and are sent after ``goOnline()``.
    public func goOffline() { repo.goOffline() }

    static func parsePath(_ string: String) -> DatabasePath {
        let segments = string.split(separator: "/", omittingEmptySubsequences: true)
        if segments.first == ".info" {
            return DatabasePath(keys: segments.map { Key(String($0)) })
        }
        do {
            return try DatabasePath(string)
        } catch {
            fatalError("Hearth: \(error.message)")
        }
    }
}
