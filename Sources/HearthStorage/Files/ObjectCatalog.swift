/// Durable storage of file metadata: objects, buckets, resumable upload sessions and storage rules.
///
/// Every mutating call is atomic and durable: when it returns the change survives `kill -9`; when it
/// throws nothing changed. The bytes are not here: the file store keeps them in blob files and
/// writes a row only once its blob is durable, so a row never names a missing blob.
///
/// Implementation: `SQLiteObjectCatalog` (`files.sqlite` in the data directory).
///
/// For example:
/// ```swift
/// let catalog: any ObjectCatalog = try SQLiteObjectCatalog(directory: dataDirectory)
/// let replaced = try await catalog.put(object)   // the previous version, whose blob can go
/// ```
/// Object names (Cloud Storage's: 1 to 1024 bytes of UTF-8) and bounds in their byte order.
public enum ObjectNames {
    public static let maximumBytes = 1024

    /// Sorts after every name of at most ``maximumBytes`` that starts with whatever it is appended
    /// to: U+10FFFF is the greatest UTF-8 sequence (F4 8F BF BF), and this is longer than any name.
    /// (One U+10FFFF was not enough: a name may go on after it.)
    public static let pastEveryName = String(repeating: "\u{10FFFF}", count: maximumBytes / 4 + 1)
}

/// A conditional change found another version of the object than the one it was decided on.
public struct ObjectChanged: Error, Equatable {
    public init() {}
}

public protocol ObjectCatalog: Sendable {
    func object(bucket: String, name: String) async throws -> StoredObject?
    /// Stores `object`, replacing any object of the same bucket and name; returns the replaced one.
    /// With `ifGeneration`, only while the object there has that generation (0: while there is none),
    /// and with `ifMetageneration` that metageneration; else nothing changes and it throws
    /// ``ObjectChanged``.
    func put(_ object: StoredObject, ifGeneration: Int64?, ifMetageneration: Int64?) async throws -> StoredObject?
    /// Changes an object in one transaction; nil when there is none. `change` may throw to abandon.
    func update(bucket: String, name: String, _ change: @escaping @Sendable (inout StoredObject) throws -> Void) async throws
        -> StoredObject?
    /// Deletes an object; returns it, or nil when there was none. With `ifGeneration` (and
    /// `ifMetageneration`), only while the object there has that generation (and metageneration); else
    /// nothing changes and it throws ``ObjectChanged``.
    func remove(bucket: String, name: String, ifGeneration: Int64?, ifMetageneration: Int64?) async throws -> StoredObject?
    /// Up to `limit` objects of `bucket` whose names start with `prefix` and sort after `after`, by name
    /// (byte order).
    func objects(bucket: String, prefix: String, after: String?, limit: Int) async throws -> [StoredObject]
    /// Every blob an object names (to find orphans after a crash).
    func referencedBlobs() async throws -> Set<String>

    func buckets() async throws -> [BucketRecord]
    func bucket(_ name: String) async throws -> BucketRecord?
    /// Creates a bucket; false when it already exists.
    func createBucket(_ bucket: BucketRecord) async throws -> Bool
    /// Deletes an empty bucket; throws ``ObjectCatalogError/bucketNotEmpty`` otherwise; false when missing.
    func deleteBucket(_ name: String) async throws -> Bool

    func upload(id: String) async throws -> UploadSession?
    func saveUpload(_ session: UploadSession) async throws
    func removeUpload(id: String) async throws
    func uploads() async throws -> [UploadSession]

    /// The current storage rules source, if any were set, and the history of earlier ones (newest first).
    func rules() async throws -> String?
    func saveRules(_ source: String, time: Int64) async throws
    func rulesHistory(limit: Int) async throws -> [RulesVersion]
}

public enum ObjectCatalogError: Error, Sendable, Equatable {
    case bucketNotEmpty
    case unavailable(String)
}

extension ObjectCatalog {
    /// Deletes whatever object is there; returns it, or nil when there was none.
    public func remove(bucket: String, name: String) async throws -> StoredObject? {
        try await remove(bucket: bucket, name: name, ifGeneration: nil, ifMetageneration: nil)
    }

    /// Deletes the object while it has generation `ifGeneration`.
    public func remove(bucket: String, name: String, ifGeneration: Int64?) async throws -> StoredObject? {
        try await remove(bucket: bucket, name: name, ifGeneration: ifGeneration, ifMetageneration: nil)
    }

    /// Stores `object` whatever is there; returns the replaced one.
    public func put(_ object: StoredObject) async throws -> StoredObject? {
        try await put(object, ifGeneration: nil, ifMetageneration: nil)
    }

    /// Stores `object` while the object there has generation `ifGeneration` (0: while there is none).
    public func put(_ object: StoredObject, ifGeneration: Int64?) async throws -> StoredObject? {
        try await put(object, ifGeneration: ifGeneration, ifMetageneration: nil)
    }
}
