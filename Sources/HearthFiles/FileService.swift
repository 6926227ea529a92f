import Foundation
import HearthAccess
import HearthCore
import HearthRules
import HearthStorage
import HearthStorageRules
import Logging
import NIOCore
import Synchronization

/// Settings of the file service (Firebase Storage's and Cloud Storage's APIs).
///
/// For example:
/// ```swift
/// var files = FilesConfiguration()   // ServerConfiguration.files
/// files.maximumUploadBytes = 100 << 20
/// ```
public struct FilesConfiguration: Sendable {
    /// The largest object accepted, in bytes; nil for no limit (Cloud Storage's is 5 TiB).
    public var maximumUploadBytes: Int64?
    /// A resumable upload not finished within this time is abandoned (Cloud Storage: a week).
    public var uploadSessionLifetime: Duration = .seconds(7 * 24 * 3600)
    /// How often abandoned resumable uploads (older than ``uploadSessionLifetime``) are removed, bytes
    /// and all.
    public var uploadSweepInterval: Duration = .seconds(600)
    /// Resumable uploads one signed-in user may have open at once (the admin has no limit); one more
    /// start is answered 429.
    public var maximumOpenUploadsPerUser = 100
    /// Resumable uploads one client address may have open at once, signed in or not (the admin has
    /// no limit); one more start is answered 429. The address honours
    /// ``IdentityConfiguration/trustForwardedFor``.
    public var maximumOpenUploadsPerAddress = 100

    public init() {}
}

/// Who asks for a file operation, and whether a download token came with it.
struct FileRequester: Sendable {
    var identity: Identity
    /// `?token=` of a download URL.
    var downloadToken: String?
    /// The client's IP address, for the per-address limit on open uploads; nil when unknown.
    var address: String?

    /// The signed-in user's uid, for the per-user limit on open uploads.
    var uid: String? {
        if case .user(let auth) = identity, case .string(let uid)? = auth["uid"] { return uid }
        return nil
    }

    /// `request.auth` as storage rules see it: null, or the token's `auth` (uid, token claims).
    var ruleAuth: JSONValue {
        if case .user(let auth) = identity { return auth }
        return .null
    }
}

/// One page of a listing: objects and folded prefixes, with the token of the next page.
struct FileListing: Sendable {
    var prefixes: [String] = []
    var items: [StoredObject] = []
    var nextPageToken: String?
}

/// The file service: durable uploads, reads, metadata, listing and storage rules, shared by the
/// Firebase (`/v0`) and Cloud Storage (`/storage/v1`) APIs and the `hearth storage` command.
///
/// An upload is acknowledged only when its bytes and its row are durable: the blob is written,
/// fsynced and renamed into place first, then the row is committed (SQLite, `synchronous=FULL`), and
/// only then is the replaced blob deleted. A crash at any point leaves either the old object or the
/// new one, and at worst an unreferenced file that ``start()`` removes.
///
/// For example:
/// ```swift
/// let files = try await FileService.open(directory: dataDirectory, catalog: catalog, project: "demo", emulatorMode: true)
/// ```
package final class FileService: Sendable {
    package let catalog: any ObjectCatalog
    let blobs: BlobStore
    /// Where downloads hand their file regions to the server's connections (``FileRegionDownloads``).
    let regions: FileRegionDownloads
    let project: String
    let emulatorMode: Bool
    let configuration: FilesConfiguration
    let clock: ServerClock
    let logger: Logger
    private let currentRules: Mutex<StorageRules>
    /// Rules for single buckets (firebase.json's per-bucket storage rules), in place of ``rules`` there.
    private let bucketRules = Mutex<[String: StorageRules]>([:])
    private let knownBuckets = Mutex<Set<String>>([])
    private let lastGeneration = Mutex<Int64>(0)
    /// Resumable uploads with a request in flight: a second concurrent chunk for one is refused.
    private let busyUploads = Mutex<Set<String>>([])
    /// Who started each open resumable upload (not the admin's), for the per-user and per-address
    /// limits. Kept in memory: sessions from before a restart are not counted (they still expire).
    private let uploadOwners = Mutex<[String: UploadOwner]>([:])
    /// The periodic sweep of abandoned uploads; cancelled when the service goes away.
    private let sweeper = Mutex<Task<Void, Never>?>(nil)

    struct UploadOwner: Sendable {
        var uid: String?
        var address: String?
    }

    /// Cloud Storage's limit on an object's custom metadata: keys and values together, in UTF-8 bytes.
    static let maximumCustomMetadataBytes = 8 * 1024

    /// The buckets every project has: `<project>.appspot.com` and `<project>.firebasestorage.app`.
    var defaultBuckets: [String] { ["\(project).appspot.com", "\(project).firebasestorage.app"] }

    var rules: StorageRules { currentRules.withLock { $0 } }

    private init(
        catalog: any ObjectCatalog, blobs: BlobStore, regions: FileRegionDownloads, project: String, emulatorMode: Bool,
        configuration: FilesConfiguration, clock: ServerClock, rules: StorageRules, logger: Logger
    ) {
        self.catalog = catalog
        self.blobs = blobs
        self.regions = regions
        self.project = project
        self.emulatorMode = emulatorMode
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        currentRules = Mutex(rules)
    }

    deinit {
        sweeper.withLock { $0?.cancel() }
    }

    /// Opens the service: removes what a crash left, creates the default buckets, loads the rules.
    /// Downloads are handed to `regions` as file regions for connections that send them.
    package static func open(
        directory: URL, catalog: any ObjectCatalog, project: String, emulatorMode: Bool,
        configuration: FilesConfiguration = FilesConfiguration(), clock: ServerClock = .system,
        regions: FileRegionDownloads = FileRegionDownloads(), logger: Logger
    ) async throws -> FileService {
        let blobs = try BlobStore(root: directory)
        let referenced = try await catalog.referencedBlobs()
        let uploads = try await catalog.uploads()
        let removed = try blobs.sweep(keeping: referenced, uploads: Set(uploads.map(\.id)))
        if removed > 0 { logger.notice("Removed files left by an interrupted upload", metadata: ["hearth.files.removed": "\(removed)"]) }
        var rules = StorageRules.defaults(open: emulatorMode)
        if let source = try await catalog.rules() {
            do {
                rules = try StorageRules(source: source)
            } catch {
                logger.error("Stored storage rules do not parse; files stay closed until new rules are set", metadata: ["hearth.error": "\(error)"])
                rules = StorageRules.defaults(open: false)
            }
        }
        let service = FileService(
            catalog: catalog, blobs: blobs, regions: regions, project: project, emulatorMode: emulatorMode, configuration: configuration, clock: clock,
            rules: rules, logger: logger
        )
        let now = Int64(clock.wallMilliseconds)
        for bucket in service.defaultBuckets { _ = try await catalog.createBucket(BucketRecord(name: bucket, timeCreated: now)) }
        let buckets = try await catalog.buckets().map(\.name)
        service.knownBuckets.withLock { $0 = Set(buckets) }
        // Sessions past their lifetime are abandoned, now and every sweep interval from now on.
        _ = try await service.sweepExpiredUploads()
        service.startSweeping()
        return service
    }

    // MARK: - Rules

    /// Replaces the storage rules (they apply to the next request) and records them in the history.
    package func setRules(_ source: String) async throws(RulesError) -> StorageRules {
        let rules = try StorageRules(source: source)
        do {
            try await catalog.saveRules(source, time: Int64(clock.wallMilliseconds))
        } catch {
            throw RulesError([Diagnostic(column: 1, message: "cannot store the rules: \(error)")])
        }
        currentRules.withLock { $0 = rules }
        return rules
    }

    /// Gives one bucket rules of its own (not stored: firebase.json's per-bucket rules are read again
    /// at every start).
    package func setRules(_ rules: StorageRules, forBucket bucket: String) {
        bucketRules.withLock { $0[bucket] = rules }
    }

    /// The rules that decide requests on `bucket`.
    func rules(for bucket: String) -> StorageRules {
        bucketRules.withLock { $0[bucket] } ?? rules
    }

    /// The saved versions of the storage rules, newest first.
    package func rulesHistory(limit: Int) async throws -> [RulesVersion] {
        try await catalog.rulesHistory(limit: limit)
    }

    /// Checks `method` on `name` against the rules; admin passes. Throws the Firebase denial.
    func authorize(
        _ method: StorageRuleMethod, bucket: String, name: String, _ requester: FileRequester,
        resource: StoredObject?, requestResource: StoredObject? = nil
    ) throws(FilesError) {
        if requester.identity.isAdmin { return }
        let request = StorageRuleRequest(
            method: method, bucket: bucket, path: name, auth: requester.ruleAuth, time: clock.wallMilliseconds / 1000,
            resource: resource.map(Self.ruleFields), requestResource: requestResource.map(Self.ruleFields)
        )
        let decision = rules(for: bucket).evaluate(request)
        guard decision.allowed else {
            logger.debug("Storage rules denied", metadata: ["hearth.files.method": "\(method.rawValue)", "hearth.files.why": "\(decision.explanation)"])
            switch method {
            case .get: throw FilesError.noRead
            case .list: throw FilesError.noList
            case .create, .update, .delete: throw FilesError.noWrite
            }
        }
    }

    static func ruleFields(_ object: StoredObject) -> StorageObjectFields {
        StorageObjectFields(
            name: object.name, bucket: object.bucket, size: object.size, contentType: object.contentType,
            contentDisposition: object.contentDisposition, contentEncoding: object.contentEncoding,
            contentLanguage: object.contentLanguage, cacheControl: object.cacheControl, metadata: object.metadata,
            md5Hash: object.md5Hash, crc32c: CRC32C.base64(object.crc32c), etag: ObjectMetadata.etag(object),
            generation: object.generation, metageneration: object.metageneration,
            timeCreated: Double(object.timeCreated) / 1000, updated: Double(object.updated) / 1000
        )
    }

    // MARK: - Buckets

    /// Throws 404 unless the bucket exists; in emulator mode any bucket is created on first use.
    func requireBucket(_ bucket: String) async throws -> Void {
        if knownBuckets.withLock({ $0.contains(bucket) }) { return }
        guard emulatorMode else { throw FilesError(404, "The bucket \(bucket) does not exist.") }
        _ = try await createBucket(bucket)
    }

    func createBucket(_ bucket: String) async throws -> Bool {
        guard Self.isValidBucketName(bucket) else { throw FilesError(400, "Invalid bucket name: '\(bucket)'.") }
        let created = try await catalog.createBucket(BucketRecord(name: bucket, timeCreated: Int64(clock.wallMilliseconds)))
        knownBuckets.withLock { _ = $0.insert(bucket) }
        return created
    }

    func deleteBucket(_ bucket: String) async throws -> Bool {
        do {
            let deleted = try await catalog.deleteBucket(bucket)
            knownBuckets.withLock { _ = $0.remove(bucket) }
            return deleted
        } catch ObjectCatalogError.bucketNotEmpty {
            throw FilesError(409, "The bucket you tried to delete is not empty.")
        }
    }

    static func isValidBucketName(_ name: String) -> Bool {
        (3...222).contains(name.utf8.count)
            && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E }
    }

    /// Object names: 1–1024 bytes of UTF-8, no carriage return or line feed (Cloud Storage's rules).
    static func checkName(_ name: String) throws(FilesError) {
        guard !name.isEmpty, name.utf8.count <= 1024 else { throw FilesError(400, "Object names must be 1 to 1024 bytes long.") }
        guard !name.utf8.contains(0x0A), !name.utf8.contains(0x0D) else {
            throw FilesError(400, "Object names must not contain carriage returns or line feeds.")
        }
    }

    /// Refuses custom metadata over Cloud Storage's 8 KiB (keys and values, UTF-8). Download tokens
    /// are the server's, not counted.
    static func checkCustomMetadata(_ metadata: [String: String]) throws(FilesError) {
        let size = metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= maximumCustomMetadataBytes else {
            throw FilesError(
                400, "Custom metadata is limited to \(maximumCustomMetadataBytes) bytes (keys and values, UTF-8); this object's would be \(size)."
            )
        }
    }

    // MARK: - Uploads

    /// A generation newer than every earlier one (microseconds since 1970, as Cloud Storage's are).
    func nextGeneration() -> Int64 {
        let now = Int64(clock.wallMilliseconds) * 1000
        return lastGeneration.withLock { last in
            last = max(last + 1, now)
            return last
        }
    }

    /// Stores `body` as `bucket/name` with `patch` applied to fresh metadata, if the rules allow.
    ///
    /// With the body's `declaredSize` (its `Content-Length`), a client the rules refuse is refused
    /// before any of it is stored, and the body cannot grow past what the rules saw. Without one, a
    /// client other than the admin must be allowed at any size (411 otherwise): the rules decide
    /// before the bytes are stored, or not at all.
    func upload<Body: AsyncSequence>(
        bucket: String, name: String, patch: ObjectMetadataPatch, contentType: String?, body: Body, declaredSize: Int64? = nil,
        preconditions: ObjectPreconditions = ObjectPreconditions(), _ requester: FileRequester, firebaseTokens: Bool
    ) async throws -> StoredObject where Body.Element == ByteBuffer {
        try Self.checkName(name)
        try await requireBucket(bucket)
        // Conditions that fail now fail before any byte is stored; they are checked again at the commit.
        if !preconditions.isEmpty { try preconditions.check(try await catalog.object(bucket: bucket, name: name)) }
        var limit = configuration.maximumUploadBytes
        if !requester.identity.isAdmin {
            let existing = try await catalog.object(bucket: bucket, name: name)
            func check(size: Int64) throws {
                var declared = StoredObject(
                    bucket: bucket, name: name, blob: "", size: size, contentType: contentType, md5Hash: "", crc32c: 0, generation: 0,
                    time: Int64(clock.wallMilliseconds)
                )
                patch.forRequester(requester).apply(to: &declared)
                if declared.contentType == nil { declared.contentType = "application/octet-stream" }
                try authorize(existing == nil ? .create : .update, bucket: bucket, name: name, requester, resource: existing, requestResource: declared)
            }
            if let declaredSize {
                try check(size: declaredSize)
                limit = min(limit ?? .max, declaredSize)
            } else {
                try Self.allowedAtAnySize(upTo: limit, check)
            }
        }
        let written: BlobStore.Written
        do {
            written = try await blobs.write(body, limit: limit)
        } catch BlobStore.Failure.tooLarge {
            if let declaredSize, limit == declaredSize, declaredSize < configuration.maximumUploadBytes ?? .max {
                throw FilesError(400, "The body is longer than its Content-Length (\(declaredSize) bytes).")
            }
            throw FilesError(413, "The object is larger than this server accepts (\(configuration.maximumUploadBytes ?? 0) bytes).")
        }
        return try await commit(
            written, bucket: bucket, name: name, patch: patch, contentType: contentType, preconditions: preconditions, requester,
            firebaseTokens: firebaseTokens
        )
    }

    /// Stores a multipart upload: the data part streams to disk, then the metadata part (which precedes
    /// it on the wire) decides the name when `name` is nil, and the metadata.
    ///
    /// With the body's `declaredBodySize` (its `Content-Length`), a client the rules refuse at both ends
    /// of what the data's size can be (the body less the bytes before the data and the closing
    /// delimiter) is refused as soon as the metadata part has arrived, before the data is stored; the
    /// rules decide again on the stored object.
    func uploadMultipart<Body: AsyncSequence & Sendable>(
        _ upload: MultipartUpload<Body>, bucket: String, name: String?, declaredBodySize: Int64? = nil,
        preconditions: ObjectPreconditions = ObjectPreconditions(), _ requester: FileRequester, firebaseTokens: Bool
    ) async throws -> StoredObject where Body.Element == ByteBuffer {
        if let name { try Self.checkName(name) }
        try await requireBucket(bucket)
        let written: BlobStore.Written
        let data = upload.data { [self] in
            guard !requester.identity.isAdmin else { return }
            // The data's size: the body less what came before it (which may count up to a boundary's worth
            // the parser held back) and the closing delimiter (`\r\n--B--`, perhaps with `\r\n`). Without
            // the body's length, anything up to the server's limit.
            let smallest: Int64
            let largest: Int64
            if let declaredBodySize {
                guard let before = upload.state.parts.withLock({ $0.bytesBeforeData }) else { return }
                largest = declaredBodySize - Int64(before)
                smallest = largest - Int64(upload.boundary.utf8.count + 8) - Int64(upload.boundary.utf8.count + 6)
            } else {
                (smallest, largest) = (0, configuration.maximumUploadBytes ?? .max)
            }
            let (json, partType) = try upload.metadataBeforeData()
            let patch = try ObjectMetadataPatch(json: json).forRequester(requester)
            guard let objectName = name ?? patch.name else { return }  // refused with its 400 once read
            try Self.checkName(objectName)
            let existing = try await catalog.object(bucket: bucket, name: objectName)
            func check(size: Int64) throws {
                var declared = StoredObject(
                    bucket: bucket, name: objectName, blob: "", size: size, contentType: partType, md5Hash: "", crc32c: 0, generation: 0,
                    time: Int64(clock.wallMilliseconds)
                )
                patch.apply(to: &declared)
                if declared.contentType == nil { declared.contentType = "application/octet-stream" }
                try authorize(existing == nil ? .create : .update, bucket: bucket, name: objectName, requester, resource: existing, requestResource: declared)
            }
            guard declaredBodySize != nil else {
                try Self.allowedAtAnySize(upTo: largest, check)
                return
            }
            // Refused only if refused at both ends of what the size can be.
            var refusal: (any Error)?
            for size in [max(smallest, 0), max(largest, 0)] {
                do {
                    try check(size: size)
                    return
                } catch {
                    refusal = error
                }
            }
            if let refusal { throw refusal }
        }
        do {
            written = try await blobs.write(data, limit: configuration.maximumUploadBytes)
        } catch BlobStore.Failure.tooLarge {
            throw FilesError(413, "The object is larger than this server accepts (\(configuration.maximumUploadBytes ?? 0) bytes).")
        }
        do {
            let (json, partType) = try upload.metadata()
            let patch = try ObjectMetadataPatch(json: json)
            guard let objectName = name ?? patch.name else {
                throw FilesError(400, "Missing the object name: add ?name=<path> or a \"name\" in the metadata part.")
            }
            try Self.checkName(objectName)
            return try await commit(
                written, bucket: bucket, name: objectName, patch: patch, contentType: partType, preconditions: preconditions, requester,
                firebaseTokens: firebaseTokens
            )
        } catch {
            await blobs.remove(written.blob)
            throw error
        }
    }

    /// Stores `object` while the object there (or none) is the one `decide` was shown: `decide` throws
    /// to refuse; when another version took its place meanwhile, it decides again on that one, a few
    /// times (then 409, with `conflict`). Returns the replaced object.
    private func put(
        _ object: StoredObject, conflict: String, decide: (StoredObject?) throws -> Void
    ) async throws -> StoredObject? {
        for _ in 0..<5 {
            let existing = try await catalog.object(bucket: object.bucket, name: object.name)
            try decide(existing)
            do {
                return try await catalog.put(object, ifGeneration: existing?.generation ?? 0, ifMetageneration: existing?.metageneration)
            } catch is ObjectChanged {
                continue
            }
        }
        throw FilesError(409, conflict)
    }

    /// Decides an upload of unknown size before its bytes are stored, by asking `check` at sizes from 0
    /// to the largest it can reach (`limit`, the server's, or any): allowed at all of them, it goes on
    /// (the rules decide again on the stored object); refused at all, it is refused (403); allowed at
    /// some, its size matters to the rules, so the client is asked for its length (411).
    static func allowedAtAnySize(upTo limit: Int64?, _ check: (Int64) throws -> Void) throws {
        let largest = limit ?? .max
        let sizes = ([0, 1, 1 << 10, 1 << 20, 10 << 20, 100 << 20, 1 << 30] as [Int64]).filter { $0 < largest } + [largest]
        var refusal: FilesError?
        var allowed = 0
        for size in sizes {
            do {
                try check(size)
                allowed += 1
            } catch let error as FilesError where error.code == 403 {
                refusal = error
            }
        }
        guard let refusal else { return }
        if allowed == 0 { throw refusal }
        throw FilesError(
            411, "The rules decide on this upload's size; send its Content-Length (an upload without one is taken only where any size is allowed)."
        )
    }

    /// Makes a written blob the object `bucket/name`: checks the claimed MD5, the rules and the
    /// request's `preconditions`, commits the row, deletes the replaced blob. On refusal the blob is deleted.
    private func commit(
        _ written: BlobStore.Written, bucket: String, name: String, patch: ObjectMetadataPatch, contentType: String?,
        preconditions: ObjectPreconditions, _ requester: FileRequester, firebaseTokens: Bool
    ) async throws -> StoredObject {
        do {
            if let claimed = patch.md5Hash, claimed != written.md5Hash {
                throw FilesError(400, "Provided MD5 hash \"\(claimed)\" doesn't match calculated MD5 hash \"\(written.md5Hash)\".")
            }
            let now = Int64(clock.wallMilliseconds)
            var object = StoredObject(
                bucket: bucket, name: name, blob: written.blob, size: written.size, contentType: contentType, md5Hash: written.md5Hash,
                crc32c: written.crc32c, generation: nextGeneration(), time: now
            )
            patch.forRequester(requester).apply(to: &object)
            try Self.checkCustomMetadata(object.metadata)
            if object.contentType == nil { object.contentType = "application/octet-stream" }
            if firebaseTokens, object.downloadTokens.isEmpty { object.downloadTokens = [UUID().uuidString.lowercased()] }
            let replaced: StoredObject?
            if requester.identity.isAdmin && preconditions.isEmpty {
                replaced = try await catalog.put(object)
            } else {
                // The rules and the conditions need what is there now (create or update, and `resource`).
                // Stored only while that is still what is there: two creates racing must not both pass a
                // create-only rule (or `ifGenerationMatch=0`). Decided again on what replaced it, a few times.
                replaced = try await put(object, conflict: "The object changed while this upload was stored; try again.") { existing in
                    try preconditions.check(existing)
                    if !requester.identity.isAdmin {
                        try authorize(
                            existing == nil ? .create : .update, bucket: bucket, name: name, requester, resource: existing, requestResource: object
                        )
                    }
                }
            }
            if let replaced, replaced.blob != object.blob { await blobs.remove(replaced.blob) }
            return object
        } catch {
            await blobs.remove(written.blob)
            throw error
        }
    }

    /// Starts a resumable upload. The rules decide at once (`create`, or `update` over an existing
    /// object) on the object as declared: its name, declared size (0 when none is declared), type and
    /// metadata; they decide again at finalize on what arrived. A denied start stores nothing. A
    /// non-admin requester may have only so many uploads open (per user, per address): 429 beyond.
    func startUpload(
        bucket: String, name: String, metadata: JSONValue, expectedSize: Int64?, preconditions: ObjectPreconditions = ObjectPreconditions(),
        _ requester: FileRequester, credential: String?, api: String
    ) async throws -> UploadSession {
        try Self.checkName(name)
        try await requireBucket(bucket)
        let patch = try ObjectMetadataPatch(json: metadata)
        if let expectedSize, expectedSize < 0 { throw FilesError(400, "The declared upload size must not be negative.") }
        if let limit = configuration.maximumUploadBytes, let expectedSize, expectedSize > limit {
            throw FilesError(413, "The object is larger than this server accepts (\(limit) bytes).")
        }
        let now = Int64(clock.wallMilliseconds)
        var declared = StoredObject(
            bucket: bucket, name: name, blob: "", size: expectedSize ?? 0, md5Hash: "", crc32c: 0, generation: 0, time: now
        )
        patch.apply(to: &declared)
        try Self.checkCustomMetadata(declared.metadata)
        if declared.contentType == nil { declared.contentType = "application/octet-stream" }
        let id = BlobStore.newIdentifier()
        // Conditions that fail now fail before any byte is sent; they are checked again at finalize.
        if !preconditions.isEmpty { try preconditions.check(try await catalog.object(bucket: bucket, name: name)) }
        if !requester.identity.isAdmin {
            let existing = try await catalog.object(bucket: bucket, name: name)
            try authorize(existing == nil ? .create : .update, bucket: bucket, name: name, requester, resource: existing, requestResource: declared)
            try reserveUploadSlot(id, for: UploadOwner(uid: requester.uid, address: requester.address))
        }
        var session = UploadSession(
            id: id, bucket: bucket, name: name, metadataJSON: metadata.jsonText, credential: credential, expectedSize: expectedSize,
            created: now, api: api
        )
        if !preconditions.isEmpty { session.preconditions = preconditions }
        do {
            try await catalog.saveUpload(session)
        } catch {
            releaseUploadSlot(id)
            throw error
        }
        return session
    }

    /// Counts a new upload against its starter's limits, or throws 429 when one is reached.
    private func reserveUploadSlot(_ id: String, for owner: UploadOwner) throws(FilesError) {
        let perUser = configuration.maximumOpenUploadsPerUser, perAddress = configuration.maximumOpenUploadsPerAddress
        let refusal: FilesError? = uploadOwners.withLock { owners in
            if let uid = owner.uid, owners.values.count(where: { $0.uid == uid }) >= perUser {
                return FilesError(429, "Too many resumable uploads are open for this user (at most \(perUser)); finish or cancel one first.")
            }
            if let address = owner.address, owners.values.count(where: { $0.address == address }) >= perAddress {
                return FilesError(
                    429, "Too many resumable uploads are open from this address (at most \(perAddress)); finish or cancel one first."
                )
            }
            owners[id] = owner
            return nil
        }
        if let refusal { throw refusal }
    }

    private func releaseUploadSlot(_ id: String) {
        _ = uploadOwners.withLock { $0.removeValue(forKey: id) }
    }

    private func isExpired(_ session: UploadSession, now: Int64) -> Bool {
        session.created + Int64(ServerClock.milliseconds(configuration.uploadSessionLifetime)) < now
    }

    /// Removes resumable uploads older than ``FilesConfiguration/uploadSessionLifetime`` (finished
    /// or not), with their bytes. Uploads with a chunk in flight are left for the next sweep.
    /// Returns how many were removed.
    func sweepExpiredUploads() async throws -> Int {
        let now = Int64(clock.wallMilliseconds)
        var removed = 0
        for session in try await catalog.uploads() where isExpired(session, now: now) {
            guard busyUploads.withLock({ $0.insert(session.id).inserted }) else { continue }
            defer { _ = busyUploads.withLock { $0.remove(session.id) } }
            try await removeSession(session.id)
            removed += 1
        }
        return removed
    }

    /// Drops every object, bucket and unfinished upload, as the Storage emulator's
    /// `POST /internal/reset` does; the rules stay. The default buckets are made again, empty.
    /// Uploads with a chunk in flight are removed when it ends (their session is gone).
    package func reset() async throws {
        for session in try await catalog.uploads() {
            guard busyUploads.withLock({ $0.insert(session.id).inserted }) else { continue }
            defer { _ = busyUploads.withLock { $0.remove(session.id) } }
            try await removeSession(session.id)
        }
        for bucket in try await catalog.buckets() {
            while true {
                let page = try await catalog.objects(bucket: bucket.name, prefix: "", after: nil, limit: 1000)
                if page.isEmpty { break }
                for object in page {
                    if let removed = try await catalog.remove(bucket: bucket.name, name: object.name) { await blobs.remove(removed.blob) }
                }
            }
            _ = try await deleteBucket(bucket.name)
        }
        for bucket in defaultBuckets { _ = try await createBucket(bucket) }
    }

    /// The session's place under the per-user and per-address limits is free once it is out of the
    /// catalog, before its bytes go: so whoever sees the bytes gone can start another upload.
    private func removeSession(_ id: String) async throws {
        try await catalog.removeUpload(id: id)
        releaseUploadSlot(id)
        await blobs.removeUpload(id)
    }

    /// Sweeps every ``FilesConfiguration/uploadSweepInterval`` on the service's clock, until the
    /// service goes away.
    private func startSweeping() {
        let interval = configuration.uploadSweepInterval
        let clock = self.clock
        let task = Task { [weak self] in
            var deadline = clock.elapsed + interval
            while true {
                do { try await clock.sleep(untilElapsed: deadline) } catch { return }
                guard let service = self else { return }
                do {
                    let removed = try await service.sweepExpiredUploads()
                    if removed > 0 {
                        service.logger.info("Removed abandoned resumable uploads", metadata: ["hearth.files.removed": "\(removed)"])
                    }
                } catch {
                    service.logger.error("Sweeping abandoned uploads failed", metadata: ["hearth.error": "\(error)"])
                }
                deadline = ServerClock.next(after: deadline, every: interval, now: clock.elapsed)
            }
        }
        sweeper.withLock { $0 = task }
    }

    /// An upload session; an expired one is gone (404), as if the sweep had already run.
    func uploadSession(_ id: String) async throws -> UploadSession {
        guard let session = try await catalog.upload(id: id), !isExpired(session, now: Int64(clock.wallMilliseconds)) else {
            throw FilesError(404, "No such upload.")
        }
        return session
    }

    /// What a chunk request did: the session as it is now, and the object once finalized.
    struct ChunkOutcome: Sendable {
        var session: UploadSession
        var object: StoredObject?
    }

    /// Appends a chunk at `offset` (which must be the bytes received so far) and, when `finalize`,
    /// makes the object. `requester` is who the start request came from.
    ///
    /// An upload that declared no size (Android's SDK declares none) is checked against the rules at
    /// each chunk with the size it would reach (`chunkLength`, the chunk's `Content-Length`) before the
    /// chunk is stored, and the chunk cannot grow past it; a non-admin's chunk without a length is
    /// refused (411).
    func appendUpload<Body: AsyncSequence>(
        _ id: String, body: Body, offset: Int64?, finalize: Bool, finalSize: Int64? = nil, chunkLength: Int64? = nil,
        _ requester: FileRequester
    ) async throws -> ChunkOutcome where Body.Element == ByteBuffer {
        let claimed = busyUploads.withLock { $0.insert(id).inserted }
        guard claimed else { throw FilesError(409, "Another request is writing to this upload; retry when it is done.") }
        defer { _ = busyUploads.withLock { $0.remove(id) } }
        var session = try await uploadSession(id)
        if let generation = session.finalGeneration {
            return ChunkOutcome(session: session, object: try await finishedObject(session, generation: generation))
        }
        if let offset, offset != session.received {
            throw FilesError(
                400, "The upload offset \(offset) does not match the \(session.received) bytes received; query the upload and resume from there."
            )
        }
        // Never past the declared size: the rules allowed the start for that size.
        let serverLimit = configuration.maximumUploadBytes
        var limit = [serverLimit, session.expectedSize].compactMap { $0 }.min()
        if session.expectedSize == nil, !requester.identity.isAdmin {
            guard let chunkLength, chunkLength >= 0 else { throw FilesError(411, "A chunk of an upload of undeclared size needs a Content-Length.") }
            let reaching = session.received + chunkLength
            var declared = StoredObject(
                bucket: session.bucket, name: session.name, blob: "", size: reaching, md5Hash: "", crc32c: 0, generation: 0,
                time: Int64(clock.wallMilliseconds)
            )
            try ObjectMetadataPatch(json: try JSONValue(parsing: session.metadataJSON)).forRequester(requester).apply(to: &declared)
            if declared.contentType == nil { declared.contentType = "application/octet-stream" }
            let existing = try await catalog.object(bucket: session.bucket, name: session.name)
            try authorize(existing == nil ? .create : .update, bucket: session.bucket, name: session.name, requester, resource: existing, requestResource: declared)
            limit = min(limit ?? .max, reaching)
        }
        do {
            session.received = try await blobs.append(upload: id, body, at: session.received, limit: limit)
        } catch BlobStore.Failure.uploadBytesGone {
            throw try await uploadBytesGone(id)
        } catch BlobStore.Failure.tooLarge {
            if let expected = session.expectedSize, expected == limit, expected < serverLimit ?? .max {
                throw FilesError(400, "The upload announced \(expected) bytes; this chunk goes past that. Nothing of it was kept.")
            }
            if session.expectedSize == nil, let limit, limit < serverLimit ?? .max {
                throw FilesError(400, "The chunk is longer than its Content-Length. Nothing of it was kept.")
            }
            throw FilesError(413, "The object is larger than this server accepts (\(serverLimit ?? 0) bytes).")
        }
        guard finalize else {
            try await catalog.saveUpload(session)
            return ChunkOutcome(session: session)
        }
        // The size declared at the start, or by the finalizing chunk (Cloud Storage's `Content-Range`).
        if let expected = session.expectedSize ?? finalSize, expected != session.received {
            try await catalog.saveUpload(session)
            throw FilesError(400, "The upload announced \(expected) bytes but \(session.received) arrived.")
        }
        let written: BlobStore.Written
        do {
            written = try await blobs.finishUpload(id, size: session.received)
        } catch BlobStore.Failure.uploadBytesGone {
            throw try await uploadBytesGone(id)
        }
        let metadata = try JSONValue(parsing: session.metadataJSON)
        let patch = try ObjectMetadataPatch(json: metadata)
        do {
            let object = try await commit(
                written, bucket: session.bucket, name: session.name, patch: patch, contentType: nil,
                preconditions: session.preconditions ?? ObjectPreconditions(), requester, firebaseTokens: session.api == "firebase"
            )
            session.finalGeneration = object.generation
            try await catalog.saveUpload(session)
            releaseUploadSlot(id)
            return ChunkOutcome(session: session, object: object)
        } catch {
            // A refused upload is over: its bytes are gone (commit deleted the blob).
            try? await catalog.removeUpload(id: id)
            releaseUploadSlot(id)
            throw error
        }
    }

    /// The upload's bytes are gone (the server stopped while it made them an object): the session ends,
    /// and the client is told to start the upload again rather than have zeros stored in their place.
    private func uploadBytesGone(_ id: String) async throws -> FilesError {
        try await removeSession(id)
        return FilesError(404, "The bytes of this upload were lost when the server stopped; start the upload again.")
    }

    private func finishedObject(_ session: UploadSession, generation: Int64) async throws -> StoredObject? {
        let object = try await catalog.object(bucket: session.bucket, name: session.name)
        return object?.generation == generation ? object : nil
    }

    func cancelUpload(_ id: String) async throws {
        // Not while a chunk is written: it would bring the session back over the removed file.
        let claimed = busyUploads.withLock { $0.insert(id).inserted }
        guard claimed else { throw FilesError(409, "Another request is writing to this upload; retry when it is done.") }
        defer { _ = busyUploads.withLock { $0.remove(id) } }
        let session = try await uploadSession(id)
        if session.finalGeneration != nil { throw FilesError(400, "The upload is already finalized.") }
        try await removeSession(id)
    }

    // MARK: - Reads and changes

    /// The object, if the requester may read it (a download token of the object is enough).
    func object(bucket: String, name: String, _ requester: FileRequester) async throws -> StoredObject {
        try await requireBucket(bucket)
        let object = try await catalog.object(bucket: bucket, name: name)
        if let token = requester.downloadToken, let object, object.downloadTokens.contains(token) { return object }
        try authorize(.get, bucket: bucket, name: name, requester, resource: object)
        guard let object else { throw FilesError.notFound }
        return object
    }

    /// The object's metadata as the requester may see it: whole when the rules let them read it; with
    /// only their own download token when that token alone lets them (so holding one token does not
    /// reveal the others, and deleting one ends what it gave).
    func metadata(bucket: String, name: String, _ requester: FileRequester) async throws -> StoredObject {
        guard let token = requester.downloadToken else { return try await object(bucket: bucket, name: name, requester) }
        var ruled = requester
        ruled.downloadToken = nil
        do {
            return try await object(bucket: bucket, name: name, ruled)
        } catch let error as FilesError where error.code == 403 || error.code == 401 {
            var object = try await object(bucket: bucket, name: name, requester)
            guard object.downloadTokens.contains(token) else { throw error }
            object.downloadTokens = [token]
            return object
        }
    }

    /// Gives the object a download token if it has none (objects uploaded through Cloud Storage's API).
    func ensureDownloadToken(_ object: StoredObject) async throws -> StoredObject {
        guard object.downloadTokens.isEmpty else { return object }
        let updated = try await catalog.update(bucket: object.bucket, name: object.name) { stored in
            guard stored.downloadTokens.isEmpty else { return }
            stored.downloadTokens = [UUID().uuidString.lowercased()]
            stored.metageneration += 1
        }
        return updated ?? object
    }

    func updateMetadata(
        bucket: String, name: String, patch: ObjectMetadataPatch, preconditions: ObjectPreconditions = ObjectPreconditions(),
        _ requester: FileRequester
    ) async throws -> StoredObject {
        try await requireBucket(bucket)
        guard let existing = try await catalog.object(bucket: bucket, name: name) else {
            try authorize(.update, bucket: bucket, name: name, requester, resource: nil)
            throw FilesError.notFound
        }
        let patch = patch.forRequester(requester)
        var decidedOn = existing
        var attempt = 0
        while true {
            try preconditions.check(decidedOn)
            var proposed = decidedOn
            patch.apply(to: &proposed)
            try authorize(.update, bucket: bucket, name: name, requester, resource: decidedOn, requestResource: proposed)
            try Self.checkCustomMetadata(proposed.metadata)
            let now = Int64(clock.wallMilliseconds)
            let (generation, metageneration) = (decidedOn.generation, decidedOn.metageneration)
            do {
                // Applied only to the version the rules decided on: else decided again on the new one.
                let updated = try await catalog.update(bucket: bucket, name: name) { object in
                    guard object.generation == generation, object.metageneration == metageneration else { throw ObjectChanged() }
                    patch.apply(to: &object)
                    object.metageneration += 1
                    object.updated = now
                }
                guard let updated else { throw FilesError.notFound }
                return updated
            } catch is ObjectChanged {
                attempt += 1
                guard attempt < 5, let current = try await catalog.object(bucket: bucket, name: name) else {
                    throw attempt < 5 ? FilesError.notFound : FilesError(409, "The object changed while its metadata was updated; try again.")
                }
                decidedOn = current
            }
        }
    }

    func delete(bucket: String, name: String, preconditions: ObjectPreconditions = ObjectPreconditions(), _ requester: FileRequester) async throws {
        try await requireBucket(bucket)
        // Removed only while the object is the version the rules decided on: else decided again on the
        // one that replaced it.
        for _ in 0..<5 {
            let existing = try await catalog.object(bucket: bucket, name: name)
            try authorize(.delete, bucket: bucket, name: name, requester, resource: existing)
            guard let existing else { throw FilesError.notFound }
            try preconditions.check(existing)
            do {
                let removal = try await catalog.remove(
                    bucket: bucket, name: name, ifGeneration: existing.generation, ifMetageneration: existing.metageneration
                )
                guard let removed = removal else {
                    throw FilesError.notFound
                }
                await blobs.remove(removed.blob)
                return
            } catch is ObjectChanged {
                continue
            }
        }
        throw FilesError(409, "The object changed while it was deleted; try again.")
    }

    /// Copies an object (admin: the Cloud Storage API's `copyTo`/`rewriteTo`), optionally changing
    /// metadata, if the source meets `sourcePreconditions` and the target `preconditions`.
    func copy(
        from source: (bucket: String, name: String), to target: (bucket: String, name: String), patch: ObjectMetadataPatch,
        sourcePreconditions: ObjectPreconditions = ObjectPreconditions(), preconditions: ObjectPreconditions = ObjectPreconditions()
    ) async throws -> StoredObject {
        try await requireBucket(source.bucket)
        try await requireBucket(target.bucket)
        try Self.checkName(target.name)
        guard let found = try await catalog.object(bucket: source.bucket, name: source.name) else { throw FilesError.notFound }
        try sourcePreconditions.check(found)
        if !preconditions.isEmpty { try preconditions.check(try await catalog.object(bucket: target.bucket, name: target.name)) }
        let (original, blob) = try await Self.copyBlob(of: found, blobs: blobs) {
            try await catalog.object(bucket: source.bucket, name: source.name)
        }
        do {
            try sourcePreconditions.check(original)
        } catch {
            await blobs.remove(blob)
            throw error
        }
        let now = Int64(clock.wallMilliseconds)
        var object = original
        object.bucket = target.bucket
        object.name = target.name
        object.blob = blob
        object.generation = nextGeneration()
        object.metageneration = 1
        object.timeCreated = now
        object.updated = now
        patch.apply(to: &object)
        do {
            try Self.checkCustomMetadata(object.metadata)
            var replaced: StoredObject?
            if preconditions.isEmpty {
                replaced = try await catalog.put(object)
            } else {
                // Stored only while the target is the version the conditions held for.
                replaced = try await put(object, conflict: "The target changed while it was copied to; try again.") { existing in
                    try preconditions.check(existing)
                }
            }
            if let replaced, replaced.blob != object.blob { await blobs.remove(replaced.blob) }
        } catch {
            await blobs.remove(blob)
            throw error
        }
        return object
    }

    /// A copy of `object`'s blob, and the object it is of. An overwrite or a delete can unlink the blob
    /// between the object's lookup and the copy: the object is then looked up once more (`lookAgain`),
    /// so the copy is of the object as it is now, or not found, instead of a 500.
    static func copyBlob(
        of object: StoredObject, blobs: BlobStore, lookAgain: () async throws -> StoredObject?
    ) async throws -> (object: StoredObject, blob: String) {
        do {
            return (object, try await blobs.copy(object.blob))
        } catch BlobStore.Failure.io(_, ENOENT) {
            guard let current = try await lookAgain() else { throw FilesError.notFound }
            return (current, try await blobs.copy(current.blob))
        }
    }

    /// Whether `requester` may read `object` (the admin, or the rules' `get`): only such a client is
    /// shown its download tokens, which read it.
    func mayRead(_ object: StoredObject, _ requester: FileRequester) -> Bool {
        (try? authorize(.get, bucket: object.bucket, name: object.name, requester, resource: object)) != nil
    }

    /// Adds a download token (admin only) or removes one; removing the last creates a replacement.
    func changeToken(bucket: String, name: String, add: Bool, remove token: String?) async throws -> StoredObject {
        let now = Int64(clock.wallMilliseconds)
        let updated = try await catalog.update(bucket: bucket, name: name) { object in
            if add { object.downloadTokens.append(UUID().uuidString.lowercased()) }
            if let token { object.downloadTokens.removeAll { $0 == token } }
            if object.downloadTokens.isEmpty { object.downloadTokens = [UUID().uuidString.lowercased()] }
            object.metageneration += 1
            object.updated = now
        }
        guard let updated else { throw FilesError.notFound }
        return updated
    }

    /// Lists `prefix` (empty, or ending in the delimiter), folding deeper names into prefixes when a
    /// delimiter is given. Pages hold up to `maxResults` entries, items and prefixes together.
    func list(
        bucket: String, prefix: String, delimiter: String?, pageToken: String?, maxResults: Int, _ requester: FileRequester,
        checkRules: Bool = true
    ) async throws -> FileListing {
        try await requireBucket(bucket)
        if checkRules {
            let folder = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
            try authorize(.list, bucket: bucket, name: folder, requester, resource: nil)
        }
        var listing = FileListing()
        var after = pageToken.flatMap(Self.decodePageToken)
        // The rules allowed listing this folder, not the folders below it: whoever the rules decide for
        // gets them folded (as the SDKs always ask), never their names. The admin lists as asked.
        let delimiter = checkRules && !requester.identity.isAdmin ? "/" : delimiter.flatMap { $0.isEmpty ? nil : $0 }
        var count = 0
        var exhausted = false
        scan: while !exhausted {
            // One more than fits, to know whether another page follows.
            let requested = maxResults - count + 1
            let batch = try await catalog.objects(bucket: bucket, prefix: prefix, after: after, limit: requested)
            exhausted = batch.count < requested
            for object in batch {
                if count == maxResults {
                    listing.nextPageToken = Self.encodePageToken(after ?? "")
                    break scan
                }
                // On the UTF-8 bytes, as the catalog orders names: counted in characters, a combining mark
                // right after the prefix joined it, and the folder found was not one.
                let rest = object.name.utf8.dropFirst(prefix.utf8.count)
                if let delimiter, let end = Self.endOfFirst(delimiter, in: rest) {
                    let folder = prefix + String(Substring(rest[..<end]))
                    listing.prefixes.append(folder)
                    count += 1
                    // Skip the folder's contents: all of it sorts before this.
                    after = folder + ObjectNames.pastEveryName
                    exhausted = false
                    continue scan
                }
                listing.items.append(object)
                count += 1
                after = object.name
            }
        }
        return listing
    }

    /// The end of the first `delimiter` in `bytes`, if there is one.
    static func endOfFirst(_ delimiter: String, in bytes: Substring.UTF8View) -> Substring.UTF8View.Index? {
        let pattern = Array(delimiter.utf8)
        guard let first = pattern.first else { return nil }
        var index = bytes.startIndex
        while let found = bytes[index...].firstIndex(of: first) {
            let end = bytes.index(found, offsetBy: pattern.count, limitedBy: bytes.endIndex)
            if let end, bytes[found..<end].elementsEqual(pattern) { return end }
            index = bytes.index(after: found)
        }
        return nil
    }

    /// Page tokens are opaque to clients: base64 of the last name listed.
    static func encodePageToken(_ name: String) -> String { Data(name.utf8).base64EncodedString() }
    static func decodePageToken(_ token: String) -> String? {
        Data(base64Encoded: token).map { String(decoding: $0, as: UTF8.self) }
    }
}
