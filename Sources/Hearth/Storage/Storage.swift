import Dispatch
import Foundation
import Synchronization

/// Files on a Hearth server, as FirebaseStorage's `Storage`: one bucket, reached through Firebase
/// Storage's REST API (`/v0/b/{bucket}/o/…`) on the server that serves the database (or the host
/// given to ``useEmulator(withHost:port:)``). Requests carry the signed-in user's ID token — the
/// database's ``Database/authTokenProvider``, which ``Auth`` sets — so storage rules see `request.auth`.
///
/// The default bucket is `<project>.appspot.com`, the project being the database's namespace
/// without a `-default-rtdb` suffix (`?ns=demo` → `demo.appspot.com`); name another with
/// ``storage(url:)`` (`gs://bucket`). A Hearth server's buckets are `<project>.appspot.com` and
/// `<project>.firebasestorage.app` for its `--project`; in emulator mode any bucket is created on first use.
///
/// For example:
/// ```swift
/// Database.configure(url: "http://127.0.0.1:9000?ns=demo")
/// let avatar = Storage.storage().reference(withPath: "avatars/ada.png")
/// let metadata = try await avatar.putDataAsync(png) { progress in print(progress?.fractionCompleted ?? 0) }
/// let url = try await avatar.downloadURL()
/// ```
public final class Storage: Sendable {
    /// The database whose server, credentials and callback queue the storage uses (Firebase's `app`).
    public let database: Database
    /// The bucket this instance reads and writes.
    public let bucket: String
    private let state: Mutex<State>

    private struct State {
        var emulatorOrigin: String?
        var callbackQueue: DispatchQueue?
        var maxUploadRetryTime: TimeInterval = 600
        var maxDownloadRetryTime: TimeInterval = 600
        var maxOperationRetryTime: TimeInterval = 120
        var uploadChunkSizeBytes: Int64 = 8 << 20
        var transport: (any HTTPTransport)?
    }

    /// One instance per database and bucket (each holds its database, so the identifiers stay unique).
    private static let instances = Mutex<[ObjectIdentifier: [String: Storage]]>([:])

    init(database: Database, bucket: String) {
        self.database = database
        self.bucket = bucket
        state = Mutex(State())
    }

    /// The storage of the default database (``Database/database()``) and its default bucket.
    public static func storage() -> Storage { storage(database: Database.database()) }

    /// The storage of the default database for a bucket named by a `gs://bucket` URL.
    public static func storage(url: String) -> Storage { storage(database: Database.database(), url: url) }

    /// The storage of a database's default bucket (Firebase's `storage(app:)`).
    public static func storage(database: Database) -> Storage {
        storage(database: database, bucket: defaultBucket(for: database))
    }

    /// The storage of a database for a bucket named by a `gs://bucket` URL (Firebase's
    /// `storage(app:url:)`). Any other URL stops the program, as in Firebase.
    public static func storage(database: Database, url: String) -> Storage {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "gs", let host = components.host, !host.isEmpty,
              components.path.isEmpty || components.path == "/" else {
            fatalError("Hearth: the storage URL must be gs://<bucket> with no path, not \(url)")
        }
        return storage(database: database, bucket: host)
    }

    private static func storage(database: Database, bucket: String) -> Storage {
        instances.withLock { instances in
            if let existing = instances[ObjectIdentifier(database)]?[bucket] { return existing }
            let storage = Storage(database: database, bucket: bucket)
            instances[ObjectIdentifier(database), default: [:]][bucket] = storage
            return storage
        }
    }

    /// `<project>.appspot.com`, the project being the namespace without `-default-rtdb`.
    static func defaultBucket(for database: Database) -> String {
        let namespace = database.repo.state.withLock { $0.info.namespace }
        let project = namespace.hasSuffix("-default-rtdb") ? String(namespace.dropLast("-default-rtdb".count)) : namespace
        return "\(project).appspot.com"
    }

    /// Sends storage calls to a local server or emulator instead of the database's host.
    public func useEmulator(withHost host: String, port: Int) {
        state.withLock { $0.emulatorOrigin = "http://\(host):\(port)" }
    }

    /// The queue observers and completion handlers run on; by default the database's callback queue.
    public var callbackQueue: DispatchQueue {
        get { state.withLock { $0.callbackQueue } ?? database.callbackQueue }
        set { state.withLock { $0.callbackQueue = newValue } }
    }

    /// How long an upload keeps retrying after network errors and server failures, in seconds (600).
    public var maxUploadRetryTime: TimeInterval {
        get { state.withLock { $0.maxUploadRetryTime } }
        set { state.withLock { $0.maxUploadRetryTime = newValue } }
    }

    /// How long a download keeps retrying, in seconds (600).
    public var maxDownloadRetryTime: TimeInterval {
        get { state.withLock { $0.maxDownloadRetryTime } }
        set { state.withLock { $0.maxDownloadRetryTime = newValue } }
    }

    /// How long other calls (metadata, list, delete) keep retrying, in seconds (120).
    public var maxOperationRetryTime: TimeInterval {
        get { state.withLock { $0.maxOperationRetryTime } }
        set { state.withLock { $0.maxOperationRetryTime = newValue } }
    }

    /// The largest chunk of a resumable upload, in bytes (8 MiB). Chunks start at 256 KiB and
    /// double after each one the server accepted, up to this size.
    public var uploadChunkSizeBytes: Int64 {
        get { state.withLock { $0.uploadChunkSizeBytes } }
        set { state.withLock { $0.uploadChunkSizeBytes = max(newValue, 256 << 10) } }
    }

    /// A reference to the bucket's root.
    public func reference() -> StorageReference {
        StorageReference(storage: self, bucket: bucket, path: "")
    }

    /// A reference to a slash-separated path in the bucket, such as `images/ada.png`.
    public func reference(withPath path: String) -> StorageReference {
        reference().child(path)
    }

    /// A reference from a `gs://bucket/path` URL or a download URL
    /// (`http(s)://host/v0/b/{bucket}/o/{encoded path}`). An invalid URL, or one naming another
    /// bucket, stops the program, as in Firebase.
    public func reference(forURL url: String) -> StorageReference {
        do {
            return try parsedReference(url)
        } catch {
            fatalError("Hearth: \(error.message)")
        }
    }

    /// A reference from a `gs://bucket/path` or download URL, as ``reference(forURL:)``, throwing
    /// ``StorageError/pathError(message:)`` for a URL that names no object and
    /// ``StorageError/bucketMismatch(message:)`` for one in another bucket.
    ///
    /// ```swift
    /// let ref = try Storage.storage().reference(for: URL(string: "gs://demo.appspot.com/images/ada.png")!)
    /// ```
    public func reference(for url: URL) throws -> StorageReference {
        try parsedReference(url.absoluteString)
    }

    private func parsedReference(_ url: String) throws(StorageError) -> StorageReference {
        let invalid = StorageError.pathError(message: "Internal error: URL scheme must be one of gs://, http://, or https://, not \(url)")
        let (bucket, path): (String, String)
        if url.lowercased().hasPrefix("gs://") {
            // gs://bucket/path, the path as written (not percent-encoded).
            let rest = url.dropFirst(5)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            bucket = String(rest[..<slash])
            path = slash == rest.endIndex ? "" : String(rest[rest.index(after: slash)...])
            guard !bucket.isEmpty else { throw invalid }
        } else if let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" {
            // /v0/b/{bucket}/o/{object}, each one percent-encoded segment.
            let segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            guard segments.count >= 3, segments.first == "v0", segments.dropFirst().first == "b",
                  let name = segments.dropFirst(2).first?.removingPercentEncoding else {
                throw invalid
            }
            let rest = Array(segments.dropFirst(3))
            guard rest.isEmpty || rest[0] == "o" else { throw invalid }
            bucket = name
            path = rest.count >= 2 ? (rest[1].removingPercentEncoding ?? String(rest[1])) : ""
        } else {
            throw invalid
        }
        guard bucket == self.bucket else {
            throw .bucketMismatch(message: "Provided bucket: `\(bucket)` does not match the Storage bucket of the current instance: `\(self.bucket)`")
        }
        return reference().child(path)
    }

    // MARK: Internals

    /// `scheme://host:port` of the file service.
    var origin: String {
        if let origin = state.withLock({ $0.emulatorOrigin }) { return origin }
        let info = database.repo.state.withLock { $0.info }
        let defaultPort = info.secure ? 443 : 80
        return "\(info.secure ? "https" : "http")://\(info.host)\(info.port == defaultPort ? "" : ":\(info.port)")"
    }

    /// The transport requests go through: the database's (``Database/httpTransport``) unless a test
    /// replaces it.
    var transport: any HTTPTransport {
        get { state.withLock { $0.transport } ?? database.httpTransport }
        set { state.withLock { $0.transport = newValue } }
    }

    var client: StorageClient { StorageClient(storage: self) }

    /// The credential for requests: the database's token provider (the signed-in user's ID token,
    /// refreshed first if it is about to expire), or none.
    func authToken() async -> String? {
        guard let provider = database.authTokenProvider else { return nil }
        return await provider()
    }
}
