import Foundation
import HearthCore
import Synchronization

/// An object's metadata, as FirebaseStorage's `StorageMetadata`: what the server reports (size,
/// hashes, generations, times) and what a client may set (content type, cache control, disposition,
/// encoding, language, custom metadata).
///
/// A class, as Firebase's: a `let` constant can be filled in, and every holder sees the change. Its
/// fields sit behind a lock, so it may cross threads. Metadata read from the server remembers what it
/// was, so ``StorageReference/updateMetadata(_:)`` sends only what changed and removes what was set to
/// `nil` (a custom key removed from `customMetadata` is deleted too).
///
/// For example:
/// ```swift
/// let metadata = StorageMetadata()
/// metadata.contentType = "image/jpeg"
/// metadata.customMetadata = ["owner": "ada"]
/// let stored = try await ref.putDataAsync(jpeg, metadata: metadata)
/// print(stored.size, stored.md5Hash ?? "", stored.timeCreated ?? Date())
/// ```
open class StorageMetadata: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: every field is read and written under `fields`' lock.
    let fields: Mutex<StorageMetadataFields>

    /// The bucket holding the object.
    public var bucket: String { fields.withLock { $0.bucket } }
    /// `Cache-Control` of downloads (`public, max-age=3600`, …).
    public var cacheControl: String? {
        get { fields.withLock { $0.cacheControl } }
        set { fields.withLock { $0.cacheControl = newValue } }
    }
    /// `Content-Disposition` of downloads (`inline` by default, `attachment`, …).
    public var contentDisposition: String? {
        get { fields.withLock { $0.contentDisposition } }
        set { fields.withLock { $0.contentDisposition = newValue } }
    }
    /// `Content-Encoding` of the stored bytes (`identity` by default, `gzip`, …).
    public var contentEncoding: String? {
        get { fields.withLock { $0.contentEncoding } }
        set { fields.withLock { $0.contentEncoding = newValue } }
    }
    /// `Content-Language` of downloads.
    public var contentLanguage: String? {
        get { fields.withLock { $0.contentLanguage } }
        set { fields.withLock { $0.contentLanguage = newValue } }
    }
    /// The MIME type (`application/octet-stream` when none was given).
    public var contentType: String? {
        get { fields.withLock { $0.contentType } }
        set { fields.withLock { $0.contentType = newValue } }
    }
    /// The object's custom metadata (`metadata` on the wire), string to string.
    public var customMetadata: [String: String]? {
        get { fields.withLock { $0.customMetadata } }
        set { fields.withLock { $0.customMetadata = newValue } }
    }
    /// The object's version: a new one for every upload.
    public var generation: Int64 { fields.withLock { $0.generation } }
    /// The metadata's version: incremented by every change of the metadata.
    public var metageneration: Int64 { fields.withLock { $0.metageneration } }
    /// Base64 MD5 of the bytes.
    public var md5Hash: String? { fields.withLock { $0.md5Hash } }
    /// The last path component of the object.
    public var name: String? { fields.withLock { $0.name } }
    /// The object's full path in its bucket.
    public var path: String? { fields.withLock { $0.path } }
    /// The object's size in bytes.
    public var size: Int64 { fields.withLock { $0.size } }
    /// When this generation was stored.
    public var timeCreated: Date? { fields.withLock { $0.timeCreated } }
    /// When the metadata last changed.
    public var updated: Date? { fields.withLock { $0.updated } }
    /// The object's reference, for metadata that came from the server.
    public var storageReference: StorageReference? { fields.withLock { $0.storageReference } }

    /// Always true: an object's metadata (Firebase's `isFile`).
    public var isFile: Bool { true }
    /// Always false (Firebase's `isFolder`).
    public var isFolder: Bool { false }

    /// Empty metadata, to fill in before an upload or an update.
    public init() { fields = Mutex(StorageMetadataFields()) }

    /// Metadata from a dictionary in the wire's shape (`contentType`, `metadata`, …), as Firebase's
    /// `StorageMetadata(dictionary:)`.
    public init(dictionary: [String: Any]) { fields = Mutex(StorageMetadataFields(dictionary: dictionary)) }

    /// Metadata from the server's JSON (Firebase's `/v0` shape: numbers as strings).
    init(json: JSONValue, storage: Storage?) { fields = Mutex(StorageMetadataFields(json: json, storage: storage)) }

    init(fields: StorageMetadataFields) { self.fields = Mutex(fields) }

    /// The metadata as a dictionary in the wire's shape (numbers as strings, times in RFC 3339).
    public func dictionaryRepresentation() -> [String: AnyHashable] { fields.withLock { $0.dictionaryRepresentation() } }

    public var description: String { fields.withLock { $0.description } }

    /// A separate copy, so that an upload's defaults never change the caller's object.
    func copied() -> StorageMetadata { StorageMetadata(fields: fields.withLock { $0 }) }
    var downloadTokens: [String] { fields.withLock { $0.downloadTokens } }
    func uploadJSON(name: String) -> JSONValue { fields.withLock { $0.uploadJSON(name: name) } }
    func patchJSON() -> JSONValue { fields.withLock { $0.patchJSON() } }
}

/// The fields of a ``StorageMetadata``, and their two wire shapes.
struct StorageMetadataFields: Sendable, CustomStringConvertible {
    /// The bucket holding the object.
    var bucket: String = ""
    /// `Cache-Control` of downloads (`public, max-age=3600`, …).
    var cacheControl: String?
    /// `Content-Disposition` of downloads (`inline` by default, `attachment`, …).
    var contentDisposition: String?
    /// `Content-Encoding` of the stored bytes (`identity` by default, `gzip`, …).
    var contentEncoding: String?
    /// `Content-Language` of downloads.
    var contentLanguage: String?
    /// The MIME type (`application/octet-stream` when none was given).
    var contentType: String?
    /// The object's custom metadata (`metadata` on the wire), string to string.
    var customMetadata: [String: String]?
    /// The object's version: a new one for every upload.
    var generation: Int64 = 0
    /// The metadata's version: incremented by every change of the metadata.
    var metageneration: Int64 = 0
    /// Base64 MD5 of the bytes.
    var md5Hash: String?
    /// The last path component of the object.
    var name: String?
    /// The object's full path in its bucket.
    var path: String?
    /// The object's size in bytes.
    var size: Int64 = 0
    /// When this generation was stored.
    var timeCreated: Date?
    /// When the metadata last changed.
    var updated: Date?
    /// The object's reference, for metadata that came from the server.
    var storageReference: StorageReference?

    /// The object's download tokens (never shown to rules-less clients by Firebase; used by `downloadURL()`).
    var downloadTokens: [String] = []
    /// The writable fields as the server last reported them: ``StorageReference/updateMetadata(_:)``
    /// sends the difference.
    var initial: Writable?

    init() {}

    init(dictionary: [String: Any]) {
        func text(_ key: String) -> String? {
            switch dictionary[key] {
            case let value as String: value
            case let value as Int64: String(value)
            case let value as Int: String(value)
            case let value as Double: String(value)
            default: nil
            }
        }
        readFields(text)
        customMetadata = dictionary["metadata"] as? [String: String]
        // As Firebase: an update of metadata made from a dictionary sends what changed since.
        initial = writable
    }

    func dictionaryRepresentation() -> [String: AnyHashable] {
        var result: [String: AnyHashable] = [:]
        if !bucket.isEmpty { result["bucket"] = bucket }
        if let path { result["name"] = path }
        if let cacheControl { result["cacheControl"] = cacheControl }
        if let contentDisposition { result["contentDisposition"] = contentDisposition }
        if let contentEncoding { result["contentEncoding"] = contentEncoding }
        if let contentLanguage { result["contentLanguage"] = contentLanguage }
        if let contentType { result["contentType"] = contentType }
        if let customMetadata { result["metadata"] = customMetadata }
        if let md5Hash { result["md5Hash"] = md5Hash }
        if generation != 0 { result["generation"] = String(generation) }
        if metageneration != 0 { result["metageneration"] = String(metageneration) }
        if size != 0 { result["size"] = size }
        if let timeCreated { result["timeCreated"] = Self.timestamp(timeCreated) }
        if let updated { result["updated"] = Self.timestamp(updated) }
        return result
    }

    var description: String {
        "StorageMetadata(\(path ?? "-"), \(size) bytes, \(contentType ?? "no type"), generation \(generation)/\(metageneration))"
    }

    // MARK: The wire

    /// The fields a client may write.
    struct Writable: Sendable, Equatable {
        var cacheControl: String?
        var contentDisposition: String?
        var contentEncoding: String?
        var contentLanguage: String?
        var contentType: String?
        var customMetadata: [String: String]?
    }

    var writable: Writable {
        Writable(
            cacheControl: cacheControl, contentDisposition: contentDisposition, contentEncoding: contentEncoding,
            contentLanguage: contentLanguage, contentType: contentType, customMetadata: customMetadata
        )
    }

    /// Metadata from the server's JSON (Firebase's `/v0` shape: numbers as strings).
    init(json: JSONValue, storage: Storage?) {
        func text(_ key: String) -> String? { json.text(key) }
        readFields(text)
        if case .object(let members)? = json["metadata"] {
            var custom: [String: String] = [:]
            for (key, value) in members {
                switch value {
                case .string(let string): custom[key] = string
                case .null: continue
                default: custom[key] = value.jsonText
                }
            }
            customMetadata = custom
        }
        downloadTokens = (text("downloadTokens") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        if let storage, let path { storageReference = StorageReference(storage: storage, bucket: bucket, path: path) }
        initial = writable
    }

    /// The fields both wire shapes name alike (all but the custom metadata), read through `text`.
    private mutating func readFields(_ text: (String) -> String?) {
        bucket = text("bucket") ?? ""
        cacheControl = text("cacheControl")
        contentDisposition = text("contentDisposition")
        contentEncoding = text("contentEncoding")
        contentLanguage = text("contentLanguage")
        contentType = text("contentType")
        generation = text("generation").flatMap { Int64($0) } ?? 0
        metageneration = text("metageneration").flatMap { Int64($0) } ?? 0
        md5Hash = text("md5Hash")
        path = text("name")
        name = path.map { String($0.split(separator: "/").last ?? Substring($0)) }
        size = text("size").flatMap { Int64($0) } ?? 0
        timeCreated = text("timeCreated").flatMap(Self.date)
        updated = text("updated").flatMap(Self.date)
    }

    /// The metadata an upload sends (the set fields).
    func uploadJSON(name: String) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("name", .string(name))]
        let fields = writable
        for (key, value) in [
            ("contentType", fields.contentType), ("cacheControl", fields.cacheControl), ("contentDisposition", fields.contentDisposition),
            ("contentEncoding", fields.contentEncoding), ("contentLanguage", fields.contentLanguage),
        ] {
            if let value { members.append((key, .string(value))) }
        }
        if let custom = fields.customMetadata {
            members.append(("metadata", .object(custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        }
        return .object(members)
    }

    /// The body of a metadata update: for metadata read from the server, only what changed since (a
    /// field or custom key set to `nil` becomes JSON `null`, which removes it); for new metadata, the
    /// fields that are set.
    func patchJSON() -> JSONValue {
        let now = writable
        guard let before = initial else {
            var members: [(key: String, value: JSONValue)] = []
            if case .object(let fields) = uploadJSON(name: "") { members = fields.filter { $0.key != "name" } }
            return .object(members)
        }
        var members: [(key: String, value: JSONValue)] = []
        for (key, old, new) in [
            ("contentType", before.contentType, now.contentType), ("cacheControl", before.cacheControl, now.cacheControl),
            ("contentDisposition", before.contentDisposition, now.contentDisposition),
            ("contentEncoding", before.contentEncoding, now.contentEncoding), ("contentLanguage", before.contentLanguage, now.contentLanguage),
        ] where old != new {
            members.append((key, new.map(JSONValue.string) ?? .null))
        }
        let oldCustom = before.customMetadata ?? [:], newCustom = now.customMetadata ?? [:]
        var custom: [(key: String, value: JSONValue)] = []
        for key in Set(oldCustom.keys).union(newCustom.keys).sorted() where oldCustom[key] != newCustom[key] {
            custom.append((key, newCustom[key].map(JSONValue.string) ?? .null))
        }
        if !custom.isEmpty { members.append(("metadata", .object(custom))) }
        return .object(members)
    }

    static func date(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
