import Foundation
import HearthAccess
import HearthCore
import HearthProtocol
import HearthStorage
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// What both files APIs share on the wire: query parsing, credentials, JSON answers, CORS, and
/// streaming an object's bytes with `Range` support.
enum FilesHTTP {
    /// Query parameters, percent-decoded once, `+` as a space (form encoding, as `google-cloud-storage`
    /// sends; Firebase's SDKs encode `+` as `%2B`). Nil for a malformed escape.
    static func query(_ text: String?) throws(FilesError) -> [String: String] {
        var result: [String: String] = [:]
        // Split on the bytes: splitting a String on a Character walks grapheme clusters.
        for pair in (text ?? "").utf8.split(separator: UInt8(ascii: "&")) {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            guard let key = PercentDecoding.decodeFormComponent(Substring(pair[..<(equals ?? pair.endIndex)])),
                let value = equals.map({ PercentDecoding.decodeFormComponent(Substring(pair[pair.index(after: $0)...])) }) ?? ""
            else {
                throw FilesError(400, "The URL has a malformed percent escape.")
            }
            result[key] = value
        }
        return result
    }

    /// `text` without the whitespace (`CharacterSet.whitespaces`) around it. ASCII text, where that is
    /// the space and the tab, is trimmed on its bytes; Foundation's trimming (which converts the
    /// string) showed in every download's profile.
    static func trimmingWhitespace(_ text: Substring) -> String {
        let utf8 = text.utf8
        guard utf8.allSatisfy({ $0 < 0x80 }) else { return text.trimmingCharacters(in: .whitespaces) }
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(Substring(utf8[first...last]))
    }

    /// One path segment, percent-decoded exactly once (Firebase's emulator decodes twice, which breaks
    /// names containing `%`).
    static func segment(_ raw: Substring) throws(FilesError) -> String {
        guard let decoded = PercentDecoding.decode(String(raw)) else { throw FilesError(400, "The URL has a malformed percent escape.") }
        return decoded
    }

    /// The credential of `Authorization: Firebase <token>` or `Bearer <token>` (the scheme in any case).
    /// Other schemes are no credential: a proxy's `Basic` login passed through is not a guess at the
    /// admin secret, which would count against the client's address.
    static func credential(_ request: Request) -> String? {
        // On the bytes, and a single field as it is (the subscript joins even one): every download asks,
        // and joining and splitting were 1 µs of a 64 KiB download's 60 (issue 30).
        guard let header = request.headers.value(of: .authorization) else { return nil }
        let utf8 = header.utf8
        guard let scheme = utf8.firstIndex(where: { $0 != UInt8(ascii: " ") }),
            let space = utf8[scheme...].firstIndex(of: UInt8(ascii: " "))
        else { return nil }
        // `byte | 0x20` lowercases an ASCII letter, and maps no other byte onto one of these.
        let name = utf8[scheme..<space]
        guard name.elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) || name.elementsEqual("firebase".utf8, by: { $0 | 0x20 == $1 })
        else { return nil }
        let token = trimmingWhitespace(Substring(utf8[utf8.index(after: space)...]))
        return token.isEmpty ? nil : token
    }

    /// Who sends `credential`: admin, a user, or nobody. A bad or expired token is a 401.
    static func identity(_ credential: String?, _ authenticator: Authenticator) throws(FilesError) -> Identity {
        try authentication(credential, authenticator).identity
    }

    /// The same, with the console session the credential is, if it is one.
    static func authentication(_ credential: String?, _ authenticator: Authenticator) throws(FilesError) -> Authentication {
        guard let credential else { return Authentication(identity: .anonymous) }
        do {
            return try authenticator.authenticate(credential, override: nil)
        } catch .expired {
            throw FilesError(401, "The auth token has expired; sign in again or refresh the token.", reason: "authError")
        } catch .tooManyGuesses {
            throw FilesError(429, Authenticator.tooManyGuessesMessage, reason: "rateLimitExceeded")
        } catch {
            throw FilesError(401, "Invalid credentials: the auth token is not valid for this server.", reason: "authError")
        }
    }

    /// How a resumable upload keeps who started it: the identity the start's credential resolved to
    /// (never the credential itself, which may be the admin secret), so its chunks are checked as
    /// that identity even after the starter's ID token expires.
    /// A console session is kept as its hash, so its chunks stop being the admin's once it ends.
    static func storedStarter(_ authentication: Authentication) -> String {
        let value: JSONValue = switch authentication.identity {
        case .admin:
            authentication.consoleSession.map { .object([(key: "console", value: .string($0.base64EncodedString()))]) } ?? .string("admin")
        case .anonymous: .string("anonymous")
        case .user(let auth): .object([(key: "user", value: auth)])
        }
        return storedStarterPrefix + value.jsonText
    }

    static let storedStarterPrefix = "identity:"

    /// Who started a resumable upload, from what ``storedStarter(_:)`` stored. Sessions started before
    /// it kept the start's credential, which is authenticated again.
    static func starter(_ stored: String?, _ authenticator: Authenticator) throws(FilesError) -> Identity {
        guard let stored, stored.hasPrefix(storedStarterPrefix) else { return try identity(stored, authenticator) }
        let ended = FilesError(401, "The credential that started this upload is no longer valid; start the upload again.", reason: "authError")
        switch try? JSONValue(parsing: String(stored.dropFirst(storedStarterPrefix.count))) {
        case .string("admin")?: return .admin
        case .string("anonymous")?: return .anonymous
        case .object(let members)? where members.count == 1 && members[0].key == "console":
            // A console session's upload is the admin's only while the session lasts.
            guard case .string(let hash) = members[0].value, let data = Data(base64Encoded: hash),
                authenticator.consoleSessions?.isLive(hash: data) == true
            else { throw ended }
            return .admin
        case .object(let members)? where members.count == 1 && members[0].key == "user":
            // A user's upload outlives the ID token that started it, not a revocation (disabled, deleted,
            // tokens revoked).
            if authenticator.tokens?.revocations?.isRevoked(members[0].value["token"]) == true { throw ended }
            return .user(members[0].value)
        default: throw FilesError(500, "The upload's starter could not be read; start the upload again.")
        }
    }

    static let exposedHeaders = [
        "content-type", "content-length", "content-range", "etag", "x-firebase-storage-version", "x-goog-upload-size-received",
        "x-goog-upload-url", "x-goog-upload-command", "x-gupload-uploadid", "x-goog-upload-header-content-length",
        "x-goog-upload-header-content-type", "x-goog-upload-protocol", "x-goog-upload-status", "x-goog-upload-chunk-granularity",
        "x-goog-upload-control-url", "x-goog-generation", "x-goog-metageneration", "x-goog-hash", "location",
    ].joined(separator: ", ")

    /// CORS for a browser's request: its origin allowed, the upload protocol's headers readable.
    static func addCORS(_ response: inout Response, origin: String?) {
        guard let origin else { return }
        response.headers[.accessControlAllowOrigin] = origin
        response.headers[.accessControlExposeHeaders] = exposedHeaders
        response.headers[.vary] = "Origin"
    }

    /// Whether the request being answered is a HEAD, answered as its GET (``respond(to:logger:errorResponse:handle:)``):
    /// a download then reads nothing.
    @TaskLocal static var answeringHead = false

    /// Answers a files request: CORS preflights, `handle`'s answer, or the error in the API's own
    /// shape (`errorResponse`); unexpected errors are logged and answered 500. CORS headers on all.
    ///
    /// A HEAD is answered as its GET would be (the same status, headers and `Content-Length`) without
    /// the body, as RFC 9110 asks of every server and as Cloud Storage and the Storage emulator do:
    /// clients ask a download URL's size and type this way.
    static func respond(
        to request: Request, logger: Logger, errorResponse: (FilesError) -> Response, handle: (Request) async throws -> Response
    ) async -> Response {
        if request.method == .head {
            let response = await $answeringHead.withValue(true) {
                await respond(to: HeadRequest.get(asking: request), logger: logger, errorResponse: errorResponse, handle: handle)
            }
            return response.withoutBody()
        }
        if request.method == .options { return preflight(request) }
        var response: Response
        do {
            response = try await handle(request)
        } catch let error as FilesError where error.code == 304 {
            response = Response(status: .notModified)
        } catch let error as FilesError {
            response = errorResponse(error)
        } catch let error as HTTPParserError {
            // The client went away mid-body (a cancelled upload): not the server's failure.
            logger.debug("Files request ended early", metadata: ["hearth.error": "\(error)", "hearth.path": "\(request.uri.path)"])
            response = errorResponse(FilesError(400, "The request body ended early."))
        } catch {
            logger.error("Files request failed", metadata: ["hearth.error": "\(error)", "hearth.path": "\(request.uri.path)"])
            response = errorResponse(FilesError(500, "Internal error; the server log has the details."))
        }
        addCORS(&response, origin: request.headers.value(of: .origin))
        // JSON answers and errors too: nothing a files URL returns may run as a page of this origin.
        if !response.headers.contains(.contentSecurityPolicy) { addDownloadProtection(&response.headers) }
        return response
    }

    static func preflight(_ request: Request) -> Response {
        var headers: HTTPFields = [
            .accessControlAllowOrigin: request.headers[.origin] ?? "*",
            .accessControlAllowMethods: "GET, POST, PUT, PATCH, DELETE, OPTIONS",
            .accessControlMaxAge: "86400",
            .vary: "Origin",
        ]
        if let requested = request.headers[.accessControlRequestHeaders] { headers[.accessControlAllowHeaders] = requested }
        return Response(status: .noContent, headers: headers)
    }

    static func json(_ value: JSONValue, status: Int = 200, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: HTTPResponse.Status(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: value.jsonText)))
    }

    /// A requested byte range, or nil for the whole object. Throws 416 when it cannot be satisfied.
    static func range(_ header: String?, size: Int64) throws(FilesError) -> ClosedRange<Int64>? {
        // An empty object has no byte to range over: the whole (empty) object, 200, as Cloud Storage answers.
        guard let header, size > 0, header.lowercased().hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let first = Int64(parts[0]), last = Int64(parts[1])
        let notSatisfiable = FilesError(416, "The requested range cannot be satisfied.")
        switch (parts[0].isEmpty, parts[1].isEmpty) {
        case (true, false):  // the last N bytes; more digits than an Int64 holds are more than the object
            let isNumber = parts[1].utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            guard let count = last ?? (isNumber ? Int64.max : nil), count > 0, size > 0 else { throw notSatisfiable }
            return max(0, size - count)...(size - 1)
        case (false, _):
            guard let start = first, start < size else { throw notSatisfiable }
            let end = min(last ?? (size - 1), size - 1)
            guard end >= start else { throw notSatisfiable }
            return start...end
        default:
            return nil
        }
    }

    /// The `Range` to answer, or nil for the whole object: with `If-Range` (a client resuming a
    /// download) only while the object is still the one it names, else the new object's bytes would be
    /// joined to the old one's (RFC 9110 §13.1.5). A date there never matches: the object's
    /// modification time has no ETag's precision.
    static func rangeHeader(_ request: Request, etag: String) -> String? {
        guard let range = request.headers.value(of: .range) else { return nil }
        guard let condition = request.headers[.ifRange] else { return range }
        return trimmingWhitespace(condition[...]) == etag ? range : nil
    }

    /// Streams an object's bytes (all, or `Range`), with Cloud Storage's download headers.
    ///
    /// An overwrite or a delete can unlink the object's blob between its lookup and the open. The
    /// object is then looked up once more (`lookAgain`), so the download gets the new object or a 404
    /// instead of a 500.
    ///
    /// On a `connection` that sends file regions, a GET of at least ``BlobStore/regionMinimum`` bytes, all
    /// in the kernel's caches, leaves as a file region (``FileRegionDownloads``): from the page cache to
    /// the socket, not through the process.
    static func media(
        _ object: StoredObject, _ request: Request, blobs: BlobStore, regions: FileRegionDownloads?, connection: ObjectIdentifier?,
        lookAgain: () async throws -> StoredObject
    ) async throws -> Response {
        do {
            return try await media(object, request, blobs: blobs, regions: regions, connection: connection)
        } catch BlobStore.Failure.io(_, ENOENT) {
            return try await media(try await lookAgain(), request, blobs: blobs, regions: regions, connection: connection)
        }
    }

    private static func media(
        _ object: StoredObject, _ request: Request, blobs: BlobStore, regions: FileRegionDownloads?, connection: ObjectIdentifier?
    ) async throws -> Response {
        let range: ClosedRange<Int64>?
        let etag = "\"\(ObjectMetadata.etag(object))\""
        do {
            range = try Self.range(Self.rangeHeader(request, etag: etag), size: object.size)
        } catch {
            var response = json(error.firebaseBody, status: error.code)
            response.headers[.contentRange] = "bytes */\(object.size)"
            return response
        }
        let start = range?.lowerBound ?? 0
        let end = (range?.upperBound).map { $0 + 1 } ?? object.size
        // Appended, each name once, into room made up front: setting a field by name searches the
        // fields before it, and the names are made once (`DownloadHeader`).
        var headers = HTTPFields()
        headers.reserveCapacity(20)
        headers.append(HTTPField(name: .contentType, value: object.contentType ?? "application/octet-stream"))
        headers.append(DownloadHeader.acceptRanges)
        headers.append(HTTPField(name: .eTag, value: etag))
        headers.append(HTTPField(name: .contentDisposition, value: contentDisposition(object)))
        addDownloadProtection(&headers)
        headers.append(HTTPField(name: DownloadHeader.generation, value: String(object.generation)))
        headers.append(HTTPField(name: DownloadHeader.metageneration, value: String(object.metageneration)))
        headers.append(DownloadHeader.standardStorage)
        headers.append(HTTPField(name: DownloadHeader.hash, value: "crc32c=\(CRC32C.base64(object.crc32c)),md5=\(object.md5Hash)"))
        headers.append(HTTPField(name: DownloadHeader.storedContentLength, value: String(object.size)))
        if let encoding = object.contentEncoding, encoding != "identity" {
            headers.append(HTTPField(name: .contentEncoding, value: encoding))
            headers.append(HTTPField(name: DownloadHeader.storedContentEncoding, value: encoding))
        }
        if let cacheControl = object.cacheControl { headers.append(HTTPField(name: .cacheControl, value: cacheControl)) }
        if let language = object.contentLanguage { headers.append(HTTPField(name: .contentLanguage, value: language)) }
        if let range { headers.append(HTTPField(name: .contentRange, value: "bytes \(range.lowerBound)-\(range.upperBound)/\(object.size)")) }
        let status: HTTPResponse.Status = range == nil ? .ok : .partialContent
        if answeringHead {
            // The GET's answer without its bytes, none of which are read.
            headers[.contentLength] = String(end - start)
            return Response(status: status, headers: headers)
        }
        // A GET here: a HEAD returned above, and nothing else asks for the bytes.
        if end - start >= BlobStore.regionMinimum, let regions, let connection,
           let body = regionBody(object.blob, from: start, to: end, blobs: blobs, regions: regions, connection: connection) {
            return Response(status: status, headers: headers, body: body)
        }
        if end - start <= BlobStore.wholeReadLimit {
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: try await blobs.read(object.blob, from: start, to: end)))
        }
        // Closed when the body lets it go, written or not (`BlobReader.OpenFile`).
        let reader = try await blobs.open(object.blob)
        let body = ResponseBody(contentLength: Int(end - start)) { writer in
            try await reader.stream(from: start, to: end) { chunk in try await writer.write(chunk) }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// A body of `[start, end)` of the blob sent as a file region on `connection`; nil if the bytes are
    /// not all cached or the connection sends no regions (TLS, in-process tests).
    private static func regionBody(
        _ blob: String, from start: Int64, to end: Int64, blobs: BlobStore, regions: FileRegionDownloads, connection: ObjectIdentifier
    ) -> ResponseBody? {
        guard regions.sendsRegions(connection), let region = blobs.cachedRegion(blob, from: start, to: end) else { return nil }
        guard let token = regions.hand(region, to: connection) else {
            try? region.fileHandle.close()
            return nil
        }
        return ResponseBody(contentLength: Int(end - start)) { writer in
            do {
                try await writer.write(token)
            } catch {
                // Not written: the region is still waiting on the connection, unless it closed with it.
                if let region = regions.take(token, on: connection) { try? region.fileHandle.close() }
                throw error
            }
            try await writer.finish(nil)
        }
    }

    /// `inline` or the stored disposition, with the file name (RFC 5987) so a saved download keeps it.
    /// Active content (``isActiveContent(_:)``) is always an `attachment`, keeping the stored
    /// disposition's parameters (its file name): the browser saves it instead of rendering it.
    static func contentDisposition(_ object: StoredObject) -> String {
        var stored = object.contentDisposition ?? "inline"
        if isActiveContent(object.contentType) {
            // Replace the disposition type, keep what follows it (`; filename=…`).
            let parameters = stored.firstIndex(of: ";").map { stored[$0...] } ?? ""
            stored = "attachment" + parameters
        }
        // Only a disposition stored with the object can name a file (most objects have none).
        if object.contentDisposition != nil, stored.lowercased().contains("filename") { return stored }
        // The last segment that is not empty (`photos/` names `photos`); a name of slashes names itself.
        let trimmed = object.name.utf8.lastIndex { $0 != UInt8(ascii: "/") }.map { object.name[...$0] } ?? ""
        let file = trimmed.isEmpty ? object.name : String(trimmed.utf8.lastIndex(of: UInt8(ascii: "/")).map { trimmed[trimmed.utf8.index(after: $0)...] } ?? trimmed)
        return "\(stored); filename*=utf-8''\(PercentEncoding.component(file))"
    }

    /// The policy every files answer carries: nothing loads, nothing runs, and the document gets an
    /// opaque origin (`sandbox` without `allow-same-origin`), so an uploaded page or SVG opened
    /// directly cannot reach the console's or the apps' storage on this origin. Images and media stay
    /// viewable when opened directly (the browser's own image and media documents); `style-src
    /// 'unsafe-inline'` is for those documents' built-in styling, as GitHub's raw files allow.
    static let downloadContentSecurityPolicy = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox"

    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    /// The names, and the fields that never change, of a download's headers (Cloud Storage's and the
    /// download protection's).
    enum DownloadHeader {
        // Fields whose values never change, made once: a field checks its value when it is made.
        static let noSniff = HTTPField(name: contentTypeOptions, value: "nosniff")
        static let sandbox = HTTPField(name: .contentSecurityPolicy, value: downloadContentSecurityPolicy)
        static let acceptRanges = HTTPField(name: .acceptRanges, value: "bytes")
        static let standardStorage = HTTPField(name: storageClass, value: "STANDARD")

        static let generation = HTTPField.Name("x-goog-generation")!
        static let metageneration = HTTPField.Name("x-goog-metageneration")!
        static let storageClass = HTTPField.Name("x-goog-storage-class")!
        static let hash = HTTPField.Name("x-goog-hash")!
        static let storedContentLength = HTTPField.Name("x-goog-stored-content-length")!
        static let storedContentEncoding = HTTPField.Name("x-goog-stored-content-encoding")!
    }

    /// `nosniff` (the declared type is the type) and the sandboxing policy.
    static func addDownloadProtection(_ headers: inout HTTPFields) {
        headers[contentTypeOptions] = nil
        headers[.contentSecurityPolicy] = nil
        headers.append(DownloadHeader.noSniff)
        headers.append(DownloadHeader.sandbox)
    }

    /// Whether a browser would run script or markup from content of this type: HTML, XHTML, SVG and
    /// every XML type (XSLT, XHTML, SVG can script), JavaScript, PDF (it can carry scripts and
    /// forms, and Chromium will not render it in a sandboxed document anyway), Flash, and
    /// `multipart/x-mixed-replace`. Parameters and case do not matter.
    ///
    /// For example: `isActiveContent("image/svg+xml; charset=utf-8")` is true, `isActiveContent("image/png")` false.
    static func isActiveContent(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = normalizedMediaType(contentType)
        // Anything but one `type/subtype` is active: a browser takes the last of a list
        // (`image/png, text/html`), and a control character becomes a space in the header it sends.
        guard isSingleMediaType(mediaType) else { return true }
        if mediaType.hasSuffix("/xml") || mediaType.hasSuffix("+xml") { return true }
        if mediaType.hasSuffix("javascript") || mediaType.hasSuffix("ecmascript") || mediaType.hasSuffix("/jscript") { return true }
        return activeMediaTypes.contains(mediaType)
    }

    /// Whether `mediaType` is one `type/subtype` of token characters (RFC 9110 §5.6.2).
    static func isSingleMediaType(_ mediaType: String) -> Bool {
        var slashes = 0
        var segment = 0
        for byte in mediaType.utf8 {
            if byte == UInt8(ascii: "/") {
                guard segment > 0 else { return false }
                slashes += 1
                segment = 0
                continue
            }
            guard isTokenByte(byte) else { return false }
            segment += 1
        }
        return slashes == 1 && segment > 0
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The media type of a `Content-Type`, without parameters and whitespace, in lower case. Checked
    /// on the bytes first: a type stored as `image/png` is its own answer, with nothing to copy.
    static func normalizedMediaType(_ contentType: String) -> String {
        let isPlain = contentType.utf8.allSatisfy { byte in
            byte > UInt8(ascii: " ") && byte < 0x80 && byte != UInt8(ascii: ";") && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        if isPlain { return contentType }
        return trimmingWhitespace(contentType.split(separator: ";", maxSplits: 1).first ?? "").lowercased()
    }

    static let activeMediaTypes: Set<String> = [
        "text/html", "application/xhtml+xml", "image/svg+xml", "text/xsl", "application/xslt+xml", "application/pdf",
        "application/x-pdf", "application/x-shockwave-flash", "multipart/x-mixed-replace",
    ]

    /// The client's IP address, as ``RequestClientMiddleware`` found it (honouring
    /// `--trust-forwarded-for`), else the connection's peer.
    static func clientAddress(context: HearthRequestContext) -> String? {
        RequestClient.current?.address ?? context.remoteAddress?.ipAddress
    }

    /// `scheme://host[:port]` of the request, to build URLs clients follow.
    static func origin(_ request: Request) -> String {
        let host = request.head.authority ?? "127.0.0.1"
        // A proxy's X-Forwarded-Proto, else the connection's own (https when Hearth serves TLS).
        let scheme = request.headers[HTTPField.Name("x-forwarded-proto")!] ?? request.head.scheme ?? "http"
        return "\(scheme)://\(host)"
    }
}
