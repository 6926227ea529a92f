/// A stored file: its bytes live in a blob file of the file store, this is everything else.
///
/// Times are milliseconds since 1970; `generation` identifies this version of the bytes (a new upload
/// gets a new one), `metageneration` counts metadata changes of that version, from 1.
///
/// For example:
/// ```swift
/// let photo = StoredObject(bucket: "demo.appspot.com", name: "photos/a.jpg", blob: "7f…", size: 48_213,
///                          md5Hash: "…", crc32c: 0x1234, generation: 1, time: 1_700_000_000_000)
/// ```
public struct StoredObject: Sendable, Equatable, Codable {
    public var bucket: String
    public var name: String
    /// The blob file holding the bytes (an opaque identifier chosen by the file store).
    public var blob: String
    public var size: Int64
    public var contentType: String?
    public var cacheControl: String?
    public var contentDisposition: String?
    public var contentEncoding: String?
    public var contentLanguage: String?
    /// Custom metadata (Firebase's `customMetadata`, GCS's `metadata`), without download tokens.
    public var metadata: [String: String]
    /// Base64 of the MD5 of the bytes.
    public var md5Hash: String
    public var crc32c: UInt32
    public var generation: Int64
    public var metageneration: Int64
    public var timeCreated: Int64
    public var updated: Int64
    /// Tokens that let anyone holding one download the bytes (`?alt=media&token=`).
    public var downloadTokens: [String]

    public init(
        bucket: String, name: String, blob: String, size: Int64, contentType: String? = nil,
        cacheControl: String? = nil, contentDisposition: String? = nil, contentEncoding: String? = nil,
        contentLanguage: String? = nil, metadata: [String: String] = [:], md5Hash: String, crc32c: UInt32,
        generation: Int64, metageneration: Int64 = 1, time: Int64, downloadTokens: [String] = []
    ) {
        self.bucket = bucket
        self.name = name
        self.blob = blob
        self.size = size
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.contentLanguage = contentLanguage
        self.metadata = metadata
        self.md5Hash = md5Hash
        self.crc32c = crc32c
        self.generation = generation
        self.metageneration = metageneration
        self.timeCreated = time
        self.updated = time
        self.downloadTokens = downloadTokens
    }
}

/// A bucket: a namespace of objects.
public struct BucketRecord: Sendable, Equatable, Codable {
    public var name: String
    public var timeCreated: Int64

    public init(name: String, timeCreated: Int64) {
        self.name = name
        self.timeCreated = timeCreated
    }
}

/// A resumable upload in progress: where it goes, what it will be, and how many bytes arrived.
///
/// The bytes received so far are in the file store's upload file named by `id`; a session survives a
/// restart, so a client resumes after a dropped connection or a server restart alike.
public struct UploadSession: Sendable, Equatable, Codable {
    public var id: String
    public var bucket: String
    public var name: String
    /// The metadata sent when the upload started (a JSON object, as text), applied at finalize.
    public var metadataJSON: String
    /// Who started the upload (`FilesHTTP.storedStarter`; before 2026-11-29 the start's raw
    /// credential): the rules see it at each chunk and at finalize.
    public var credential: String?
    /// Bytes received and durable.
    public var received: Int64
    /// The size the client announced, if it did.
    public var expectedSize: Int64?
    public var created: Int64
    /// Set once finalized: the object's generation (a repeated finalize answers with it).
    public var finalGeneration: Int64?
    /// Which API started it: "firebase" (v0) or "gcs".
    public var api: String
    /// Cloud Storage's conditions on the object the upload replaces, checked at the start and again
    /// when it finalizes (nil in sessions stored before 2026-11-29).
    public var preconditions: ObjectPreconditions?

    public init(
        id: String, bucket: String, name: String, metadataJSON: String, credential: String?, expectedSize: Int64?,
        created: Int64, api: String
    ) {
        self.id = id
        self.bucket = bucket
        self.name = name
        self.metadataJSON = metadataJSON
        self.credential = credential
        self.received = 0
        self.expectedSize = expectedSize
        self.created = created
        self.api = api
    }
}
