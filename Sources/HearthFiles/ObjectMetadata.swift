import Crypto
import Foundation
import HearthAccess
import HearthCore
import HearthProtocol
import HearthStorage

/// A change to an object's metadata, as a client sends it: on upload (the metadata part or the start
/// of a resumable upload) and in `PATCH`. A field set to `null` is removed; `metadata` merges key by
/// key (a `null` value removes the key, `metadata: null` removes them all); non-string custom values
/// are stringified; the custom key `firebaseStorageDownloadTokens` adds download tokens (a comma list).
///
/// For example:
/// ```swift
/// let patch = try ObjectMetadataPatch(json: JSONValue(parsing: #"{"contentType": "image/png", "metadata": {"owner": "ada"}}"#))
/// patch.apply(to: &object)
/// ```
struct ObjectMetadataPatch: Sendable {
    enum Field: Sendable, Equatable {
        case keep
        case unset
        case set(String)

        func apply(to value: inout String?) {
            switch self {
            case .keep: break
            case .unset: value = nil
            case .set(let text): value = text
            }
        }
    }

    var name: String?
    var contentType = Field.keep
    var cacheControl = Field.keep
    var contentDisposition = Field.keep
    var contentEncoding = Field.keep
    var contentLanguage = Field.keep
    /// Base64 MD5 the client claims the bytes have (checked at upload).
    var md5Hash: String?
    var clearsMetadata = false
    var metadata: [(key: String, value: String?)] = []
    var downloadTokens: [String]?

    static let downloadTokensKey = "firebaseStorageDownloadTokens"

    init() {}

    init(json: JSONValue) throws(FilesError) {
        guard case .object(let members) = json else { throw FilesError(400, "Metadata must be a JSON object.") }
        for (key, value) in members {
            switch key {
            case "name": name = try Self.string(value, key)
            case "contentType": contentType = try Self.field(value, key)
            case "cacheControl": cacheControl = try Self.field(value, key)
            case "contentDisposition": contentDisposition = try Self.field(value, key)
            case "contentEncoding": contentEncoding = try Self.field(value, key)
            case "contentLanguage": contentLanguage = try Self.field(value, key)
            case "md5Hash": md5Hash = try Self.string(value, key)
            case "metadata", "customMetadata":
                switch value {
                case .null: clearsMetadata = true
                case .object(let entries):
                    for (name, entry) in entries {
                        let text: String?
                        switch entry {
                        case .null: text = nil
                        case .string(let string): text = string
                        default: text = entry.jsonText
                        }
                        if name == Self.downloadTokensKey {
                            downloadTokens = (text ?? "").split(separator: ",").map { String($0.trimmingCharacters(in: .whitespaces)) }
                                .filter { !$0.isEmpty }
                        } else {
                            metadata.append((name, text))
                        }
                    }
                default: throw FilesError(400, "\"\(key)\" must be an object of strings.")
                }
            default: continue  // read-only fields (size, generation, …) are ignored, as Cloud Storage does
            }
        }
    }

    /// The change as `requester` may make it: download tokens (`firebaseStorageDownloadTokens`) only
    /// from the admin. A token read the object, and the rules never see this key: a client that may
    /// change metadata but not read would otherwise give itself read access.
    func forRequester(_ requester: FileRequester) -> ObjectMetadataPatch {
        guard !requester.identity.isAdmin, downloadTokens != nil else { return self }
        var patch = self
        patch.downloadTokens = nil
        return patch
    }

    /// Applies the change. Download tokens are added, never removed here.
    func apply(to object: inout StoredObject) {
        contentType.apply(to: &object.contentType)
        cacheControl.apply(to: &object.cacheControl)
        contentDisposition.apply(to: &object.contentDisposition)
        contentEncoding.apply(to: &object.contentEncoding)
        contentLanguage.apply(to: &object.contentLanguage)
        if clearsMetadata { object.metadata = [:] }
        for (key, value) in metadata { object.metadata[key] = value }
        for token in downloadTokens ?? [] where !object.downloadTokens.contains(token) { object.downloadTokens.append(token) }
    }

    private static func string(_ value: JSONValue, _ key: String) throws(FilesError) -> String? {
        switch value {
        case .null: return nil
        case .string(let text): return text
        default: throw FilesError(400, "\"\(key)\" must be a string.")
        }
    }

    private static func field(_ value: JSONValue, _ key: String) throws(FilesError) -> Field {
        switch value {
        case .null: return .unset
        case .string(let text): return .set(text)
        default: throw FilesError(400, "\"\(key)\" must be a string.")
        }
    }
}

/// How objects look on the wire: Firebase's `/v0` JSON and Cloud Storage's `storage#object`.
enum ObjectMetadata {
    /// Firebase Storage's metadata: numbers as strings, `downloadTokens` a comma-joined string.
    /// Firebase Storage's metadata of `object`; its download tokens only with `tokens` (for a client
    /// that may read the object).
    static func firebase(_ object: StoredObject, tokens: Bool = true) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(object.name)),
            ("bucket", .string(object.bucket)),
            ("generation", .string(String(object.generation))),
            ("metageneration", .string(String(object.metageneration))),
            ("contentType", .string(object.contentType ?? "application/octet-stream")),
            ("timeCreated", .string(timestamp(object.timeCreated))),
            ("updated", .string(timestamp(object.updated))),
            ("storageClass", .string("STANDARD")),
            ("size", .string(String(object.size))),
            ("md5Hash", .string(object.md5Hash)),
            ("crc32c", .string(CRC32C.base64(object.crc32c))),
            ("etag", .string(etag(object))),
            ("contentEncoding", .string(object.contentEncoding ?? "identity")),
            ("contentDisposition", .string(object.contentDisposition ?? "inline")),
        ]
        if let cacheControl = object.cacheControl { members.append(("cacheControl", .string(cacheControl))) }
        if let language = object.contentLanguage { members.append(("contentLanguage", .string(language))) }
        if tokens, !object.downloadTokens.isEmpty { members.append(("downloadTokens", .string(object.downloadTokens.joined(separator: ",")))) }
        if !object.metadata.isEmpty { members.append(("metadata", customMetadata(object.metadata))) }
        return .object(members)
    }

    /// Cloud Storage's `storage#object`, with links built on `base` (scheme://host:port).
    static func cloudStorage(_ object: StoredObject, base: String) -> JSONValue {
        let bucket = PercentEncoding.component(object.bucket), name = PercentEncoding.component(object.name)
        var members: [(key: String, value: JSONValue)] = [
            ("kind", .string("storage#object")),
            ("id", .string("\(object.bucket)/\(object.name)/\(object.generation)")),
            ("selfLink", .string("\(base)/storage/v1/b/\(bucket)/o/\(name)")),
            ("mediaLink", .string("\(base)/download/storage/v1/b/\(bucket)/o/\(name)?generation=\(object.generation)&alt=media")),
            ("name", .string(object.name)),
            ("bucket", .string(object.bucket)),
            ("generation", .string(String(object.generation))),
            ("metageneration", .string(String(object.metageneration))),
            ("contentType", .string(object.contentType ?? "application/octet-stream")),
            ("storageClass", .string("STANDARD")),
            ("size", .string(String(object.size))),
            ("md5Hash", .string(object.md5Hash)),
            ("crc32c", .string(CRC32C.base64(object.crc32c))),
            ("etag", .string(etag(object))),
            ("timeCreated", .string(timestamp(object.timeCreated))),
            ("updated", .string(timestamp(object.updated))),
            ("timeStorageClassUpdated", .string(timestamp(object.timeCreated))),
        ]
        if let value = object.cacheControl { members.append(("cacheControl", .string(value))) }
        if let value = object.contentDisposition { members.append(("contentDisposition", .string(value))) }
        if let value = object.contentEncoding { members.append(("contentEncoding", .string(value))) }
        if let value = object.contentLanguage { members.append(("contentLanguage", .string(value))) }
        var metadata = object.metadata
        if !object.downloadTokens.isEmpty { metadata[ObjectMetadataPatch.downloadTokensKey] = object.downloadTokens.joined(separator: ",") }
        if !metadata.isEmpty { members.append(("metadata", customMetadata(metadata))) }
        return .object(members)
    }

    static func customMetadata(_ metadata: [String: String]) -> JSONValue {
        .object(metadata.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
    }

    /// Base64 SHA-1 of "generation/metageneration", without padding: changes whenever either does.
    static func etag(_ object: StoredObject) -> String {
        let digest = Insecure.SHA1.hash(data: Array("\(object.generation)/\(object.metageneration)".utf8))
        // Without the padding, which only ends a base64 string (Foundation's replacingOccurrences cost
        // 3 % of a download).
        var etag = Data(digest).base64EncodedString()
        while etag.utf8.last == UInt8(ascii: "=") { etag.removeLast() }
        return etag
    }

    /// RFC 3339 in UTC with milliseconds, as Cloud Storage writes times.
    static func timestamp(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int(milliseconds % 1000)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}
