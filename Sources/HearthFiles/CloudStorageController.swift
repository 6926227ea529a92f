import Foundation
import HearthAccess
import HearthCore
import HearthProtocol
import HearthStorage
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The subset of Google Cloud Storage's JSON API that `google-cloud-storage` and `firebase-admin`
/// use, so server code points at Hearth with `STORAGE_EMULATOR_HOST=http://host:port`:
///
/// - `/storage/v1/b[/{bucket}]`: list, get, create, delete buckets;
/// - `/storage/v1/b/{bucket}/o[/{object}]`: list, metadata, patch, delete, `copyTo`/`rewriteTo`;
/// - `/upload/storage/v1/b/{bucket}/o`: media, multipart and resumable uploads (`Content-Range`
///   chunks, `308 Resume Incomplete` until the last);
/// - `/download/storage/v1/b/{bucket}/o/{object}?alt=media`: bytes, with `Range`;
/// - on every object request, the version conditions (`ifGenerationMatch`, `ifGenerationNotMatch`,
///   `ifMetagenerationMatch`, `ifMetagenerationNotMatch`, `generation`; a copy's `ifSource…` and
///   `sourceGeneration`): 412 when they fail (304 for a read's "not match"), checked atomically with
///   the change they guard.
///
/// This is the admin's API: storage rules do not apply, and every request needs the admin secret
/// (`Authorization: Bearer <secret>`) — except in emulator mode, where it is open as the Storage
/// emulator's is.
///
/// For example:
/// ```swift
/// CloudStorageController(files: files, authenticator: authenticator, logger: logger).register(on: router)
/// ```
package struct CloudStorageController: Sendable {
    let files: FileService
    let authenticator: Authenticator
    let logger: Logger

    package init(files: FileService, authenticator: Authenticator, logger: Logger) {
        self.files = files
        self.authenticator = authenticator
        self.logger = logger
    }

    package func register(on router: Router<HearthRequestContext>) {
        for prefix in ["/storage/v1/b", "/storage/v1/b/**", "/upload/storage/v1/b/**", "/download/storage/v1/b/**"] {
            for method: HTTPRequest.Method in [.get, .head, .post, .put, .patch, .delete, .options] {
                router.on(RouterPath(prefix), method: method) { request, context in
                    await self.respond(to: request, connection: context.connection)
                }
            }
        }
    }

    /// Answers `request`; a download may leave as a file region on `connection` (``FileRegionDownloads``).
    func respond(to request: Request, connection: ObjectIdentifier? = nil) async -> Response {
        await FilesHTTP.respond(
            to: request, logger: logger, errorResponse: { FilesHTTP.json($0.cloudStorageBody, status: $0.code) },
            handle: { request in try await handle(request, connection: connection) }
        )
    }

    func handle(_ request: Request, connection: ObjectIdentifier?) async throws -> Response {
        let isAdmin = try FilesHTTP.identity(FilesHTTP.credential(request), authenticator).isAdmin
        guard files.emulatorMode || isAdmin else { throw FilesError.unauthenticated }
        let admin = FileRequester(identity: .admin)
        let query = try FilesHTTP.query(request.uri.query)
        let preconditions = try ObjectPreconditions(query: query)
        var segments = Array(request.uri.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst())
        let api = segments.first.map(String.init) ?? ""
        if api == "upload" || api == "download" { segments.removeFirst() }
        // storage / v1 / b [/ bucket [/ o [/ object [/ copyTo|rewriteTo / b / bucket / o / object]]]]
        guard segments.count >= 3, segments[0] == "storage", segments[1] == "v1", segments[2] == "b" else { throw notFound(request) }
        let rest = segments.dropFirst(3)
        let origin = FilesHTTP.origin(request)
        if rest.isEmpty || (rest.count == 1 && rest.first!.isEmpty) { return try await buckets(request) }
        let bucket = try FilesHTTP.segment(rest[rest.startIndex])
        let objectPart = rest.dropFirst()
        if objectPart.isEmpty { return try await bucketResource(request, bucket) }
        guard objectPart.first == "o" else { throw notFound(request) }
        let afterO = objectPart.dropFirst()
        if api == "upload" {
            return try await upload(request, bucket: bucket, query, preconditions: preconditions, origin: origin)
        }
        guard let rawName = afterO.first, !rawName.isEmpty else {
            guard request.method == .get else { throw FilesError(405, "Method not allowed.") }
            return try await list(bucket, query, origin: origin)
        }
        let name = try FilesHTTP.segment(rawName)
        let action = afterO.dropFirst()
        if let verb = action.first {
            guard verb == "copyTo" || verb == "rewriteTo", request.method == .post, action.count == 5, action[action.startIndex + 1] == "b",
                action[action.startIndex + 3] == "o"
            else {
                if verb == "acl" { return FilesHTTP.json(.object([("kind", .string("storage#objectAccessControl"))])) }
                throw notFound(request)
            }
            let targetBucket = try FilesHTTP.segment(action[action.startIndex + 2])
            let targetName = try FilesHTTP.segment(action[action.startIndex + 4])
            let body = try await FirebaseStorageController.jsonBody(request, allowEmpty: true)
            let copied = try await files.copy(
                from: (bucket, name), to: (targetBucket, targetName), patch: try ObjectMetadataPatch(json: body),
                sourcePreconditions: try ObjectPreconditions(query: query, source: true), preconditions: preconditions
            )
            let resource = ObjectMetadata.cloudStorage(copied, base: origin)
            if verb == "rewriteTo" {
                return FilesHTTP.json(.object([
                    ("kind", .string("storage#rewriteResponse")), ("totalBytesRewritten", .string(String(copied.size))),
                    ("objectSize", .string(String(copied.size))), ("done", .bool(true)), ("resource", resource),
                ]))
            }
            return FilesHTTP.json(resource)
        }
        switch request.method {
        case .get:
            let object = try await stored(bucket, name)
            try preconditions.check(object, isRead: true)
            if api == "download" || query["alt"] == "media" {
                return try await FilesHTTP.media(object, request, blobs: files.blobs, regions: files.regions, connection: connection) {
                    // The bytes changed under the read: the conditions decide on the new version.
                    let current = try await stored(bucket, name)
                    try preconditions.check(current, isRead: true)
                    return current
                }
            }
            return FilesHTTP.json(ObjectMetadata.cloudStorage(object, base: origin))
        case .patch, .put:
            _ = try await stored(bucket, name)
            let patch = try ObjectMetadataPatch(json: try await FirebaseStorageController.jsonBody(request))
            let updated = try await files.updateMetadata(bucket: bucket, name: name, patch: patch, preconditions: preconditions, admin)
            return FilesHTTP.json(ObjectMetadata.cloudStorage(updated, base: origin))
        case .delete:
            _ = try await stored(bucket, name)
            try await files.delete(bucket: bucket, name: name, preconditions: preconditions, admin)
            return Response(status: .noContent)
        default:
            throw FilesError(405, "Method not allowed.")
        }
    }

    func notFound(_ request: Request) -> FilesError {
        FilesError(404, "Not Found: \(request.method) \(request.uri.path) is not part of the Cloud Storage API Hearth serves.")
    }

    /// An object, or Cloud Storage's 404 ("No such object: bucket/name").
    func stored(_ bucket: String, _ name: String) async throws -> StoredObject {
        try await files.requireBucket(bucket)
        guard let object = try await files.catalog.object(bucket: bucket, name: name) else {
            throw FilesError(404, "No such object: \(bucket)/\(name)")
        }
        return object
    }

    func bucketJSON(_ bucket: BucketRecord) -> JSONValue {
        .object([
            ("kind", .string("storage#bucket")), ("id", .string(bucket.name)), ("name", .string(bucket.name)),
            ("projectNumber", .string("0")), ("metageneration", .string("1")), ("location", .string("US")),
            ("storageClass", .string("STANDARD")), ("etag", .string("CAE=")),
            ("timeCreated", .string(ObjectMetadata.timestamp(bucket.timeCreated))),
            ("updated", .string(ObjectMetadata.timestamp(bucket.timeCreated))),
        ])
    }

    /// `GET /storage/v1/b` lists buckets; `POST` creates one (`{"name": …}`).
    func buckets(_ request: Request) async throws -> Response {
        switch request.method {
        case .get:
            let buckets = try await files.catalog.buckets()
            return FilesHTTP.json(.object([("kind", .string("storage#buckets")), ("items", .array(buckets.map(bucketJSON)))]))
        case .post:
            let body = try await FirebaseStorageController.jsonBody(request)
            guard case .string(let name)? = body["name"] else { throw FilesError(400, "A bucket needs a \"name\".") }
            guard try await files.createBucket(name) else {
                throw FilesError(409, "Your previous request to create the named bucket succeeded and you already own it.")
            }
            let created = try await files.catalog.bucket(name) ?? BucketRecord(name: name, timeCreated: 0)
            return FilesHTTP.json(bucketJSON(created))
        default:
            throw FilesError(405, "Method not allowed.")
        }
    }

    func bucketResource(_ request: Request, _ name: String) async throws -> Response {
        switch request.method {
        case .get:
            // No auto-creation here, even in emulator mode: this is how clients ask whether a bucket exists.
            guard let bucket = try await files.catalog.bucket(name) else { throw FilesError(404, "The specified bucket does not exist.") }
            return FilesHTTP.json(bucketJSON(bucket))
        case .delete:
            guard try await files.deleteBucket(name) else { throw FilesError(404, "The specified bucket does not exist.") }
            return Response(status: .noContent)
        default:
            throw FilesError(405, "Method not allowed.")
        }
    }

    func list(_ bucket: String, _ query: [String: String], origin: String) async throws -> Response {
        let maxResults = try FirebaseStorageController.maxResults(query["maxResults"])
        let listing = try await files.list(
            bucket: bucket, prefix: query["prefix"] ?? "", delimiter: query["delimiter"], pageToken: query["pageToken"],
            maxResults: maxResults, FileRequester(identity: .admin), checkRules: false
        )
        var members: [(key: String, value: JSONValue)] = [
            ("kind", .string("storage#objects")),
            ("items", .array(listing.items.map { ObjectMetadata.cloudStorage($0, base: origin) })),
            ("prefixes", .array(listing.prefixes.map { .string($0) })),
        ]
        if let token = listing.nextPageToken { members.append(("nextPageToken", .string(token))) }
        return FilesHTTP.json(.object(members))
    }

    // MARK: - Uploads

    func upload(
        _ request: Request, bucket: String, _ query: [String: String], preconditions: ObjectPreconditions, origin: String
    ) async throws -> Response {
        let admin = FileRequester(identity: .admin)
        if let id = query["upload_id"] { return try await resumableChunk(request, id: id, origin: origin) }
        let uploadType = query["uploadType"] ?? "media"
        switch (request.method, uploadType) {
        case (.post, "multipart"):
            guard let boundary = request.headers[.contentType].flatMap(MultipartUpload<RequestBody>.boundary) else {
                throw FilesError(400, "A multipart upload needs 'Content-Type: multipart/related; boundary=…'.")
            }
            let stored = try await files.uploadMultipart(
                MultipartUpload(body: request.body, boundary: boundary), bucket: bucket, name: query["name"], preconditions: preconditions, admin,
                firebaseTokens: false
            )
            return FilesHTTP.json(ObjectMetadata.cloudStorage(stored, base: origin))
        case (.post, "resumable"):
            let metadata = try await FirebaseStorageController.jsonBody(request, allowEmpty: true)
            var name = query["name"]
            if name == nil, case .string(let named)? = metadata["name"] { name = named }
            guard let name else { throw FilesError(400, "Missing the object name: add ?name= or a \"name\" in the metadata.") }
            var json = metadata
            if let type = request.headers[HTTPField.Name("X-Upload-Content-Type")!], json["contentType"] == nil, case .object(var members) = json {
                members.append(("contentType", .string(type)))
                json = .object(members)
            }
            let size = request.headers[HTTPField.Name("X-Upload-Content-Length")!].flatMap { Int64($0) }
            let session = try await files.startUpload(
                bucket: bucket, name: name, metadata: json, expectedSize: size, preconditions: preconditions, admin, credential: nil, api: "gcs"
            )
            let location = "\(origin)/upload/storage/v1/b/\(PercentEncoding.component(bucket))/o?uploadType=resumable"
                + "&name=\(PercentEncoding.component(name))&upload_id=\(session.id)"
            return Response(status: .ok, headers: [.location: location, HTTPField.Name("X-GUploader-UploadID")!: session.id])
        case (.post, "media"):
            guard let name = query["name"] else { throw FilesError(400, "Missing the object name: add ?name=.") }
            let stored = try await files.upload(
                bucket: bucket, name: name, patch: ObjectMetadataPatch(), contentType: request.headers[.contentType], body: request.body,
                preconditions: preconditions, admin, firebaseTokens: false
            )
            return FilesHTTP.json(ObjectMetadata.cloudStorage(stored, base: origin))
        default:
            throw FilesError(400, "Unsupported upload: \(request.method) with uploadType=\(uploadType).")
        }
    }

    /// A `PUT` to a resumable session: `Content-Range: bytes a-b/total` (or `/*` while the size is
    /// unknown) appends; `bytes */total` finalizes or asks for the status. `308` with `Range` until
    /// complete, then the object.
    func resumableChunk(_ request: Request, id: String, origin: String) async throws -> Response {
        if request.method == .delete {
            try await files.cancelUpload(id)
            return Response(status: HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request"))
        }
        // A GET (or HEAD) of the session's URL must not append or finalize.
        guard request.method == .put || request.method == .post else { throw FilesError(405, "Method not allowed.") }
        let range = try ContentRange(request.headers[.contentRange])
        let session = try await files.uploadSession(id)
        if let generation = session.finalGeneration {
            guard let object = try await files.catalog.object(bucket: session.bucket, name: session.name), object.generation == generation else {
                throw FilesError(410, "The upload finished and its object has changed since.")
            }
            return FilesHTTP.json(ObjectMetadata.cloudStorage(object, base: origin))
        }
        let offset = range.first ?? session.received
        let total = range.total
        let hasBytes = range.first != nil
        let finalize: Bool
        if let total {
            finalize = (range.last.map { $0 + 1 } ?? session.received) == total
        } else {
            finalize = false
        }
        let outcome = try await files.appendUpload(
            id, body: hasBytes ? request.body : RequestBody(buffer: ByteBuffer()), offset: hasBytes ? offset : nil, finalize: finalize,
            finalSize: finalize ? total : nil, FileRequester(identity: .admin)
        )
        if let object = outcome.object { return FilesHTTP.json(ObjectMetadata.cloudStorage(object, base: origin)) }
        var headers: HTTPFields = [:]
        if outcome.session.received > 0 { headers[.range] = "bytes=0-\(outcome.session.received - 1)" }
        return Response(status: HTTPResponse.Status(code: 308, reasonPhrase: "Resume Incomplete"), headers: headers)
    }
}

/// `Content-Range: bytes a-b/total`, `bytes */total`, `bytes a-b/*` or `bytes */*`.
struct ContentRange: Equatable {
    var first: Int64?
    var last: Int64?
    var total: Int64?

    /// Parses the header; 400 for bounds that are out of order, negative or past what a size can be.
    init(_ header: String?) throws(FilesError) {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return }
        let spec = header.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return }
        total = Int64(parts[1])
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        if bounds.count == 2 {
            first = Int64(bounds[0])
            last = Int64(bounds[1])
        }
        let invalid = FilesError(400, "Content-Range must be 'bytes first-last/total' with 0 <= first <= last < total.")
        if let total, total < 0 { throw invalid }
        if let first, let last, first < 0 || last < first || last == .max { throw invalid }
        if let last, let total, last >= total { throw invalid }
    }
}
