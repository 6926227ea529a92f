import Foundation
import HearthAccess
import HearthCore
import HearthProtocol
import HearthStorage
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Firebase Storage's API, as the Firebase SDKs speak it: `/v0/b/{bucket}/o` (list, upload) and
/// `/v0/b/{bucket}/o/{object}` (metadata, download, update, delete), the object name one
/// percent-encoded segment. Storage rules decide every request but the admin's and those carrying
/// one of the object's download tokens.
///
/// Uploads come in three forms, chosen by headers: multipart (`X-Goog-Upload-Protocol: multipart`,
/// metadata then bytes), resumable (`X-Goog-Upload-Command: start`, then chunks to the returned
/// `X-Goog-Upload-URL`, with `query` to learn the offset after a dropped connection), and media (the
/// raw body).
///
/// For example:
/// ```swift
/// FirebaseStorageController(files: files, authenticator: authenticator, logger: logger).register(on: router)
/// ```
package struct FirebaseStorageController: Sendable {
    let files: FileService
    let authenticator: Authenticator
    let logger: Logger

    package init(files: FileService, authenticator: Authenticator, logger: Logger) {
        self.files = files
        self.authenticator = authenticator
        self.logger = logger
    }

    /// Chunks of a resumable upload are multiples of this (except the last); the emulator's value.
    static let chunkGranularity = "262144"

    /// The methods the API answers; the router refuses others.
    package static let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
    /// Every path of the API starts with this.
    package static let pathPrefix = "/v0/b/"

    /// Adds the API's routes. Returns what the routes run, behind the router's middlewares as the routes
    /// have them, for a caller that reaches the API without the router (``pathPrefix``, ``methods``).
    @discardableResult
    package func register(on router: Router<HearthRequestContext>) -> any HTTPResponder<HearthRequestContext> {
        let respond: @Sendable (Request, HearthRequestContext) async -> Response = { request, context in
            await self.respond(to: request, address: FilesHTTP.clientAddress(context: context), connection: context.connection)
        }
        for method in Self.methods {
            router.on("\(Self.pathPrefix)**", method: method) { request, context in await respond(request, context) }
        }
        return router.middlewares.constructResponder(finalResponder: CallbackResponder(callback: respond))
    }

    /// Answers `request`; `address` is the client's, for the per-address limit on open uploads; a
    /// download may leave as a file region on `connection` (``FileRegionDownloads``).
    func respond(to request: Request, address: String? = nil, connection: ObjectIdentifier? = nil) async -> Response {
        await FilesHTTP.respond(to: request, logger: logger, errorResponse: { error in
            var response = FilesHTTP.json(error.firebaseBody, status: error.code)
            // A resumable upload's client reads the upload status on errors too.
            if request.headers[Self.uploadCommand] != nil || request.headers[Self.uploadProtocol] == "resumable" {
                response.headers[Self.uploadStatus] = (error.endsUpload ?? (error.code == 403)) ? "final" : "active"
            }
            return response
        }, handle: { request in try await handle(request, address: address, connection: connection) })
    }

    static let uploadCommand = HTTPField.Name("X-Goog-Upload-Command")!
    static let uploadProtocol = HTTPField.Name("X-Goog-Upload-Protocol")!
    static let uploadStatus = HTTPField.Name("X-Goog-Upload-Status")!
    static let uploadURL = HTTPField.Name("X-Goog-Upload-URL")!
    static let uploadOffset = HTTPField.Name("X-Goog-Upload-Offset")!
    static let sizeReceived = HTTPField.Name("X-Goog-Upload-Size-Received")!

    func handle(_ request: Request, address: String?, connection: ObjectIdentifier?) async throws -> Response {
        // /v0/b/{bucket}/o[/{object}]
        // Split on the bytes: splitting a String on a Character walks grapheme clusters.
        let segments = request.uri.path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst(3).map(Substring.init)
        guard segments.count >= 2, segments[segments.startIndex + 1] == "o" else { throw FilesError.notFound }
        let bucket = try FilesHTTP.segment(segments[segments.startIndex])
        let rest = segments.dropFirst(2)
        guard rest.count <= 1 else { throw FilesError(400, "Object names are one percent-encoded path segment ('/' as %2F).") }
        let query = try FilesHTTP.query(request.uri.query)
        var object = try rest.first.flatMap { $0.isEmpty ? nil : try FilesHTTP.segment($0) }
        let credential = FilesHTTP.credential(request)
        let requester = FileRequester(
            identity: try FilesHTTP.identity(credential, authenticator), downloadToken: query["token"], address: address
        )
        var method = request.method
        if method == .put || method == .post, request.headers[HTTPField.Name("X-HTTP-Method-Override")!]?.uppercased() == "PATCH" {
            method = .patch
        }
        switch method {
        case .get:
            guard let object else { return try await list(bucket, query, requester) }
            let isMedia = query["alt"] == "media"
            let stored = try await isMedia ? files.object(bucket: bucket, name: object, requester) : files.metadata(bucket: bucket, name: object, requester)
            if isMedia {
                return try await FilesHTTP.media(stored, request, blobs: files.blobs, regions: files.regions, connection: connection) {
                    try await files.object(bucket: bucket, name: object, requester)
                }
            }
            guard FilesHTTP.answeringHead, stored.downloadTokens.isEmpty else {
                return FilesHTTP.json(ObjectMetadata.firebase(try await files.ensureDownloadToken(stored)))
            }
            // A HEAD changes nothing: the GET's answer, with the token it would make, is not saved.
            var preview = stored
            preview.downloadTokens = [UUID().uuidString.lowercased()]
            preview.metageneration += 1
            return FilesHTTP.json(ObjectMetadata.firebase(preview))
        case .post, .put:
            if let id = query["upload_id"] { return try await chunk(request, id: id, requester) }
            if object == nil { object = query["name"] }
            guard let object else { throw FilesError(400, "Missing the object name: add ?name=<path> or put it in the URL.") }
            if query["create_token"] != nil || query["delete_token"] != nil {
                return try await token(bucket, object, query, requester)
            }
            return try await upload(request, bucket: bucket, name: object, requester)
        case .patch:
            guard let object else { throw FilesError(400, "PATCH needs an object: /v0/b/{bucket}/o/{object}.") }
            let patch = try ObjectMetadataPatch(json: try await Self.jsonBody(request))
            let updated = try await files.updateMetadata(bucket: bucket, name: object, patch: patch, requester)
            return FilesHTTP.json(ObjectMetadata.firebase(updated, tokens: files.mayRead(updated, requester)))
        case .delete:
            guard let object else { throw FilesError(400, "DELETE needs an object: /v0/b/{bucket}/o/{object}.") }
            try await files.delete(bucket: bucket, name: object, requester)
            return Response(status: .noContent)
        default:
            throw FilesError(405, "Method not allowed.")
        }
    }

    func list(_ bucket: String, _ query: [String: String], _ requester: FileRequester) async throws -> Response {
        let prefix = query["prefix"] ?? ""
        guard prefix.isEmpty || prefix.hasSuffix("/") else {
            throw FilesError(400, "The prefix parameter is required to be empty or ends with a single / character.")
        }
        let maxResults = try Self.maxResults(query["maxResults"])
        let listing = try await files.list(
            bucket: bucket, prefix: prefix, delimiter: query["delimiter"], pageToken: query["pageToken"], maxResults: maxResults, requester
        )
        var members: [(key: String, value: JSONValue)] = [
            ("prefixes", .array(listing.prefixes.map { .string($0) })),
            ("items", .array(listing.items.map { .object([("name", .string($0.name)), ("bucket", .string($0.bucket))]) })),
        ]
        if let token = listing.nextPageToken { members.append(("nextPageToken", .string(token))) }
        return FilesHTTP.json(.object(members))
    }

    static func maxResults(_ text: String?) throws(FilesError) -> Int {
        guard let text else { return 1000 }
        guard let value = Int(text), value > 0 else { throw FilesError(400, "maxResults must be a positive integer.") }
        return min(value, 1000)
    }

    func upload(_ request: Request, bucket: String, name: String, _ requester: FileRequester) async throws -> Response {
        let command = request.headers[Self.uploadCommand]?.lowercased()
        let uploadProtocol = request.headers[Self.uploadProtocol]?.lowercased()
        if command != nil || uploadProtocol == "resumable" {
            guard command?.contains("start") ?? false else {
                throw FilesError(400, "A resumable upload starts with 'X-Goog-Upload-Command: start'.")
            }
            return try await startResumable(request, bucket: bucket, name: name, requester)
        }
        let contentType = request.headers[.contentType]
        if uploadProtocol == "multipart" || (contentType?.lowercased().hasPrefix("multipart/") ?? false) {
            guard let boundary = contentType.flatMap(MultipartUpload<RequestBody>.boundary) else {
                throw FilesError(400, "A multipart upload needs 'Content-Type: multipart/related; boundary=…'.")
            }
            let multipart = MultipartUpload(body: request.body, boundary: boundary)
            // The metadata part precedes the data, so it is known by the time the upload commits.
            let stored = try await files.uploadMultipart(
                multipart, bucket: bucket, name: name, declaredBodySize: request.headers[.contentLength].flatMap { Int64($0) }, requester,
                firebaseTokens: true
            )
            return FilesHTTP.json(ObjectMetadata.firebase(stored, tokens: files.mayRead(stored, requester)))
        }
        let stored = try await files.upload(
            bucket: bucket, name: name, patch: ObjectMetadataPatch(), contentType: contentType, body: request.body,
            declaredSize: request.headers[.contentLength].flatMap { Int64($0) }, requester, firebaseTokens: true
        )
        return FilesHTTP.json(ObjectMetadata.firebase(stored, tokens: files.mayRead(stored, requester)))
    }

    func startResumable(_ request: Request, bucket: String, name: String, _ requester: FileRequester) async throws
        -> Response
    {
        var metadata = try await Self.jsonBody(request, allowEmpty: true)
        let headerType = request.headers[HTTPField.Name("X-Goog-Upload-Header-Content-Type")!]
            ?? request.headers[HTTPField.Name("X-Goog-Upload-Content-Type")!]
        if let headerType, metadata["contentType"] == nil, case .object(var members) = metadata {
            members.append(("contentType", .string(headerType)))
            metadata = .object(members)
        }
        let announced = (request.headers[HTTPField.Name("X-Goog-Upload-Header-Content-Length")!]
            ?? request.headers[HTTPField.Name("X-Goog-Upload-Content-Length")!]).flatMap { Int64($0) }
        let session = try await files.startUpload(
            bucket: bucket, name: name, metadata: metadata, expectedSize: announced, requester,
            credential: FilesHTTP.storedStarter(try FilesHTTP.authentication(FilesHTTP.credential(request), authenticator)), api: "firebase"
        )
        let url = "\(FilesHTTP.origin(request))/v0/b/\(PercentEncoding.component(bucket))/o?name=\(PercentEncoding.component(name))"
            + "&upload_id=\(session.id)&upload_protocol=resumable"
        var headers: HTTPFields = [Self.uploadStatus: "active", Self.uploadURL: url]
        headers[HTTPField.Name("X-Goog-Upload-Chunk-Granularity")!] = Self.chunkGranularity
        headers[HTTPField.Name("X-Goog-Upload-Control-URL")!] = ""
        headers[HTTPField.Name("x-gupload-uploadid")!] = session.id
        return Response(status: .ok, headers: headers)
    }

    /// A request to a resumable upload's URL: `upload`, `upload, finalize`, `finalize`, `query`, `cancel`.
    func chunk(_ request: Request, id: String, _ requester: FileRequester) async throws -> Response {
        let command = (request.headers[Self.uploadCommand] ?? "upload").lowercased()
        let commands = Set(command.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let session: UploadSession
        do {
            session = try await files.uploadSession(id)
        } catch var error as FilesError where error.code == 404 {
            error.endsUpload = true
            throw error
        }
        if commands.contains("query") {
            return Response(status: .ok, headers: [
                Self.uploadStatus: session.finalGeneration == nil ? "active" : "final", Self.sizeReceived: String(session.received),
            ])
        }
        if commands.contains("cancel") {
            try await files.cancelUpload(id)
            return Response(status: .ok)
        }
        guard commands.contains("upload") || commands.contains("finalize") else {
            throw FilesError(400, "Unknown X-Goog-Upload-Command '\(command)'.")
        }
        let starter: FileRequester
        let outcome: FileService.ChunkOutcome
        do {
            // The rules see who started the upload.
            starter = FileRequester(identity: try FilesHTTP.starter(session.credential, authenticator))
            let offset = request.headers[Self.uploadOffset].flatMap { Int64($0) }
            outcome = try await files.appendUpload(
                id, body: commands.contains("upload") ? request.body : RequestBody(buffer: ByteBuffer()), offset: offset,
                finalize: commands.contains("finalize"), chunkLength: commands.contains("upload") ? request.headers[.contentLength].flatMap { Int64($0) } : 0,
                starter
            )
        } catch var error as FilesError {
            // Told as the upload is now: a refused or failed finalize has ended it (its session is gone), a
            // refused chunk has not; a starter whose credential ended cannot go on.
            let sessionGone = (try? await files.uploadSession(id)) == nil
            error.endsUpload = error.code == 401 || sessionGone
            throw error
        } catch {
            if (try? await files.uploadSession(id)) == nil {
                // Answered as a 500 that ends the upload: the cause is logged here, as for any other failure.
                logger.error("Files request failed", metadata: ["hearth.error": "\(error)", "hearth.path": "\(request.uri.path)"])
                throw FilesError(500, "The upload failed and is over; start it again.", endsUpload: true)
            }
            throw error
        }
        if let object = outcome.object {
            return FilesHTTP.json(ObjectMetadata.firebase(object, tokens: files.mayRead(object, starter)), headers: [Self.uploadStatus: "final"])
        }
        if outcome.session.finalGeneration != nil {
            // Finalized before, and replaced since: the upload is over either way.
            return Response(status: .ok, headers: [Self.uploadStatus: "final"])
        }
        return Response(status: .ok, headers: [Self.uploadStatus: "active", Self.sizeReceived: String(outcome.session.received)])
    }

    func token(_ bucket: String, _ name: String, _ query: [String: String], _ requester: FileRequester) async throws -> Response {
        guard requester.identity.isAdmin else { throw FilesError.adminRequired }
        if let create = query["create_token"], create != "true" { throw FilesError(400, "create_token must be \"true\".") }
        try await files.requireBucket(bucket)
        let updated = try await files.changeToken(bucket: bucket, name: name, add: query["create_token"] != nil, remove: query["delete_token"])
        return FilesHTTP.json(ObjectMetadata.firebase(updated))
    }

    /// A small JSON request body (metadata); at most 1 MiB.
    static func jsonBody(_ request: Request, allowEmpty: Bool = false) async throws -> JSONValue {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: 1 << 20)
        } catch {
            throw FilesError(413, "Metadata is limited to 1 MiB.")
        }
        if buffer.readableBytes == 0 {
            if allowEmpty { return .object([]) }
            throw FilesError(400, "The request body must be a JSON object.")
        }
        do {
            return try JSONValue(parsing: buffer.readableBytesView)
        } catch {
            throw FilesError(400, "The request body is not JSON: \(error.message)")
        }
    }
}
