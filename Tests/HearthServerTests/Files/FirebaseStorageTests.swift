import CHearthFiles
import Crypto
import Foundation
import HearthAccess
import HearthCore
@testable import HearthFiles
import HearthProtocol
@testable import HearthServer
import HTTPTypes
import Synchronization
import Testing

/// Firebase Storage's `/v0` API end to end through the router: uploads of every kind, downloads,
/// metadata, listing, tokens, and the errors in Firebase's shape.
@Suite struct FirebaseStorageTests {
    static let photoRules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /images/{uid}/{file=**} {
              allow read;
              allow create, update: if request.auth.uid == uid && request.resource.size < 1024
                                    && request.resource.contentType.matches('image/.*');
              // Deletes have no request.resource: a condition on it would deny them.
              allow delete: if request.auth.uid == uid;
            }
          }
        }
        """

    static func md5(_ bytes: [UInt8]) -> String { Data(Insecure.MD5.hash(data: bytes)).base64EncodedString() }

    @Test func multipartUploadAnswersFirebaseMetadataAndTheBytesComeBack() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let data = Array("hello, files".utf8)
            let reply = try await files.upload(
                "notes/a b+c%.txt", data, contentType: "text/plain",
                metadata: #"{"name":"notes/a b+c%.txt","contentType":"text/plain","metadata":{"owner":"ada","n":3}}"#
            )
            #expect(reply.status == .ok, "\(reply.body)")
            let json = try #require(reply.json)
            #expect(json["name"] == .string("notes/a b+c%.txt"))
            #expect(json["bucket"] == .string(FilesTestServer.bucket))
            #expect(json["size"] == .string("12"))
            #expect(json["contentType"] == .string("text/plain"))
            #expect(json["md5Hash"] == .string(Self.md5(data)))
            #expect(json["metageneration"] == .string("1"))
            #expect(json["metadata"] == .object([("n", .string("3")), ("owner", .string("ada"))]))
            #expect(json["contentEncoding"] == .string("identity"))
            let token = try #require(json["downloadTokens"]?.stringValue)
            #expect(!token.isEmpty && !token.contains(","))
            guard case .string(let generation)? = json["generation"] else { Issue.record("no generation"); return }
            #expect(Int64(generation) != nil)
            // Metadata, then the bytes by download URL with nothing but the token.
            let path = FilesClient.objectPath("notes/a b+c%.txt")
            let metadata = try await files.send(.get, path)
            #expect(metadata.json?["downloadTokens"] == .string(token))
            let download = try await files.bytes("\(path)?alt=media&token=\(token)")
            #expect(download.status == .ok)
            #expect(download.bytes == data)
            #expect(download.headers[.contentType] == "text/plain")
            #expect(download.headers[HTTPField.Name("x-goog-hash")!] == "crc32c=\(CRC32C.base64(crc32c(data))),md5=\(Self.md5(data))")
            #expect(download.headers[.contentDisposition] == "inline; filename*=utf-8''a%20b%2Bc%25.txt")
        }
    }

    func crc32c(_ bytes: [UInt8]) -> UInt32 {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.value
    }

    @Test func rangesAnswerPartialContentOrRangeNotSatisfiable() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let data = (0..<1000).map { UInt8($0 % 251) }
            try await files.upload("r.bin", data)
            let path = FilesClient.objectPath("r.bin") + "?alt=media"
            let middle = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=10-19"]))
            #expect(middle.status == .partialContent)
            #expect(middle.bytes == Array(data[10...19]))
            #expect(middle.headers[.contentRange] == "bytes 10-19/1000")
            let tail = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=-5"]))
            #expect(tail.bytes == Array(data[995...]))
            // A suffix longer than the object (even past what an Int64 holds) is the whole object.
            for suffix in ["2000", "99999999999999999999"] {
                let all = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=-\(suffix)"]))
                #expect(all.status == .partialContent && all.bytes == data, "\(suffix)")
                #expect(all.headers[.contentRange] == "bytes 0-999/1000")
            }
            let open = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=990-"]))
            #expect(open.bytes == Array(data[990...]))
            let past = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=1000-1005"]))
            #expect(past.status == .rangeNotSatisfiable)
            #expect(past.headers[.contentRange] == "bytes */1000")
        }
    }

    /// A client resuming a download names the version it has (`If-Range`): the rest of that version, or
    /// the whole object once it was overwritten, never the new version's bytes after the old ones.
    @Test func aResumedDownloadGetsTheRestOnlyOfTheSameVersion() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let first = (0..<1000).map { UInt8($0 % 251) }
            try await files.upload("resume.bin", first)
            let path = FilesClient.objectPath("resume.bin") + "?alt=media"
            let whole = try await files.bytes(path, headers: TestServer.admin)
            let etag = try #require(whole.headers[.eTag])
            let rest = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=600-", .ifRange: etag]))
            #expect(rest.status == .partialContent)
            #expect(rest.bytes == Array(first[600...]))
            let second = first.map { $0 ^ 0xFF }
            try await files.upload("resume.bin", second)
            for condition in [etag, "W/\(etag)", "Tue, 01 Dec 2026 00:00:00 GMT"] {
                let resumed = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=600-", .ifRange: condition]))
                #expect(resumed.status == .ok, "\(condition)")
                #expect(resumed.bytes == second)
                #expect(resumed.headers[.contentRange] == nil)
            }
        }
    }

    /// Whether this system can tell that a file's pages are cached and read (`mincore`), which
    /// downloads as file regions need, and open a path only from the caches (`RESOLVE_CACHED`).
    static let sendsRegions: Bool = {
        #if os(Linux)
        let file = open("/proc/self/exe", O_RDONLY)
        defer { close(file) }
        let opened = hearth_open_cached("/proc/self/exe")
        if opened >= 0 { close(opened) }
        return hearth_range_is_resident(file, 0, 1) >= 0 && (opened >= 0 || errno == EAGAIN || errno == EPERM)
        #else
        return false
        #endif
    }()

    /// Bodies up to `BlobStore.wholeReadLimit` are read in one piece, longer ones streamed in chunks:
    /// both give the same bytes, whole or as a range on either side of the limit.
    /// Over a connection, those of at least `BlobStore.regionMinimum` bytes leave as file regions (all
    /// of the object is cached after the upload).
    @Test(arguments: [false, true]) func downloadsOnBothSidesOfTheWholeReadLimitGiveTheSameBytes(live: Bool) async throws {
        let server = FilesTestServer(emulator: true)
        try await server.run(live: live) { files async throws in
            let limit = Int(BlobStore.wholeReadLimit)
            let data = (0..<(limit + 3 * BlobStore.readChunk + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
            try await files.upload("large.bin", data)
            let path = FilesClient.objectPath("large.bin") + "?alt=media"
            let whole = try await files.bytes(path, headers: TestServer.admin)
            #expect(whole.status == .ok)
            #expect(whole.headers[.contentLength] == String(data.count))
            // Compared as one Bool: a failure names the range instead of printing a megabyte.
            let wholeMatches = whole.bytes == data
            #expect(wholeMatches)
            for (first, last) in [(1, limit), (5, limit + 5), (limit - 3, data.count - 1), (0, limit - 1)] {
                let part = try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=\(first)-\(last)"]))
                #expect(part.status == .partialContent)
                let partMatches = part.bytes == Array(data[first...last])
                #expect(partMatches, "bytes=\(first)-\(last): \(part.bytes.count) bytes")
            }
            // The whole object and three of the ranges are 1 MiB or more.
            #expect(server.regions.sent.load(ordering: .relaxed) == (live && Self.sendsRegions ? 4 : 0))
            // A HEAD answers as the GET does, without the bytes (and sends no region).
            let head = try await files.send(.head, path)
            #expect(head.status == .ok && head.body.isEmpty)
            #expect(head.headers[.contentLength] == String(data.count))
            #expect(head.headers[.eTag] == whole.headers[.eTag] && head.headers[.eTag] != nil)
            let headOfRange = try await files.send(.head, path, headers: TestServer.admin.adding([.range: "bytes=5-\(limit + 5)"]))
            #expect(headOfRange.status == .partialContent && headOfRange.body.isEmpty)
            #expect(headOfRange.headers[.contentLength] == String(limit + 1))
            #expect(headOfRange.headers[.contentRange] == "bytes 5-\(limit + 5)/\(data.count)")
            #expect(server.regions.sent.load(ordering: .relaxed) == (live && Self.sendsRegions ? 4 : 0))
            // The connection still answers after them.
            #expect(try await files.bytes(path, headers: TestServer.admin.adding([.range: "bytes=0-9"])).bytes == Array(data[0...9]))
        }
    }

    /// HEAD on both APIs' URLs: the GET's status, headers and length without the body; a missing object
    /// is a 404 without a body; the rules decide as for a GET.
    @Test(arguments: [false, true]) func headAnswersAsGetWithoutTheBody(live: Bool) async throws {
        let server = FilesTestServer()
        try await server.run(live: live) { files async throws in
            let data = Array("hello, heads".utf8)
            try await files.upload("h.txt", data, contentType: "text/plain")
            let media = FilesClient.objectPath("h.txt") + "?alt=media"
            let get = try await files.bytes(media)
            let head = try await files.send(.head, media)
            #expect(head.status == .ok && head.body.isEmpty)
            #expect(head.headers[.contentLength] == String(data.count))
            for name in [HTTPField.Name.contentType, .eTag, HTTPField.Name("x-goog-hash")!, .contentSecurityPolicy] {
                #expect(head.headers[name] == get.headers[name] && head.headers[name] != nil, "\(name)")
            }
            // The metadata, as JSON for a GET: its length, no body.
            let metadata = try await files.send(.get, FilesClient.objectPath("h.txt"))
            let metadataHead = try await files.send(.head, FilesClient.objectPath("h.txt"))
            #expect(metadataHead.status == .ok && metadataHead.body.isEmpty)
            #expect(metadataHead.headers[.contentLength] == String(metadata.body.utf8.count))
            // Missing, and refused by the default rules (no credentials): the GET's status, no body.
            let missing = try await files.send(.head, FilesClient.objectPath("nothing.txt") + "?alt=media")
            #expect(missing.status == .notFound && missing.body.isEmpty)
            let anonymous = try await files.send(.head, media, headers: [:])
            #expect(anonymous.status == (try await files.send(.get, media, headers: [:])).status)
            #expect(anonymous.status == .forbidden && anonymous.body.isEmpty)
            // Cloud Storage's download URL too.
            let cloud = try await files.send(.head, "/storage/v1/b/\(FilesTestServer.bucket)/o/h.txt?alt=media")
            #expect(cloud.status == .ok && cloud.body.isEmpty && cloud.headers[.contentLength] == String(data.count))
            // An object without a download token (put through Cloud Storage's API): a HEAD of its Firebase
            // metadata answers the GET's length but saves no token; the GET then makes one.
            let bare = try await files.send(
                .post, "/upload/storage/v1/b/\(FilesTestServer.bucket)/o?uploadType=media&name=bare.txt", body: data,
                headers: TestServer.admin.adding([.contentType: "text/plain"])
            )
            #expect(bare.status == .ok)
            let bareHead = try await files.send(.head, FilesClient.objectPath("bare.txt"))
            let cloudMetadata = try await files.send(.get, "/storage/v1/b/\(FilesTestServer.bucket)/o/bare.txt")
            #expect(cloudMetadata.json?["metageneration"] == .string("1"))
            let bareGet = try await files.send(.get, FilesClient.objectPath("bare.txt"))
            #expect(bareGet.json?["metageneration"] == .string("2"))
            #expect(bareHead.headers[.contentLength] == String(bareGet.body.utf8.count))
        }
    }

    @Test func anEmptyObjectReadWithARangeIsAWhole200() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            try await files.upload("empty.txt", [])
            let read = try await files.bytes(FilesClient.objectPath("empty.txt") + "?alt=media", headers: TestServer.admin.adding([.range: "bytes=0-100"]))
            #expect(read.status == .ok)
            #expect(read.bytes.isEmpty)
        }
    }

    @Test func theDatabaseRulesEndpointStillAnswersBesideTheStorageRules() async throws {
        try await FilesTestServer().run { files async throws in
            let rules = #"{"rules": {".read": true, ".write": false}}"#
            #expect(try await files.send(.put, "/.settings/rules.json?ns=demo", body: Array(rules.utf8)).status == .ok)
            #expect(try await files.send(.get, "/.settings/rules.json?ns=demo").json?["rules"]?[".read"] == .bool(true))
            #expect(try await files.send(.get, "/.settings/storage.rules").status == .ok)
            // HEAD of either: its GET's status and length, no body (the files' `/.settings/**` route
            // answers every method the database does, HEAD included, before the database's catch-all).
            for path in ["/.settings/rules.json?ns=demo", "/.settings/storage.rules"] {
                let get = try await files.send(.get, path)
                let head = try await files.send(.head, path)
                #expect(head.status == .ok && head.body.isEmpty, "\(path)")
                #expect(head.headers[.contentLength] == String(get.body.utf8.count) && !get.body.isEmpty, "\(path)")
                #expect(try await files.send(.head, path, headers: [:]).status == (try await files.send(.get, path, headers: [:])).status)
            }
        }
    }

    @Test func mediaUploadTakesTheContentType() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let reply = try await files.send(
                .post, "/v0/b/\(FilesTestServer.bucket)/o?name=raw%2Fx.json", body: Array("{}".utf8),
                headers: TestServer.admin.adding([.contentType: "application/json"])
            )
            #expect(reply.status == .ok, "\(reply.body)")
            #expect(reply.json?["contentType"] == .string("application/json"))
            #expect(reply.json?["name"] == .string("raw/x.json"))
        }
    }

    @Test func resumableUploadResumesAtTheReportedOffset() async throws {
        let server = FilesTestServer(emulator: true)
        try await server.run { files async throws in
            let data = (0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let start = try await files.send(
                .post, "/v0/b/\(FilesTestServer.bucket)/o?name=big%2Fblob.bin", body: Array(#"{"name":"big/blob.bin","contentType":"application/x-test"}"#.utf8),
                headers: TestServer.admin.adding([
                    HTTPField.Name("X-Goog-Upload-Protocol")!: "resumable", HTTPField.Name("X-Goog-Upload-Command")!: "start",
                    HTTPField.Name("X-Goog-Upload-Header-Content-Length")!: String(data.count),
                ])
            )
            #expect(start.status == .ok, "\(start.body)")
            #expect(start.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "active")
            let url = try #require(start.headers[HTTPField.Name("X-Goog-Upload-URL")!])
            let path = String(url[try #require(url.range(of: "/v0/"))!.lowerBound...])
            func chunk(_ range: Range<Int>, command: String, offset: Int) async throws -> Reply {
                try await files.send(.post, path, body: Array(data[range]), headers: TestServer.admin.adding([
                    HTTPField.Name("X-Goog-Upload-Command")!: command, HTTPField.Name("X-Goog-Upload-Offset")!: String(offset),
                ]))
            }
            let first = try await chunk(0..<262_144, command: "upload", offset: 0)
            #expect(first.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "active")
            // The upload keeps who started it, not the credential: the admin secret is nowhere on disk.
            let stored = try FileManager.default.contentsOfDirectory(at: server.directory, includingPropertiesForKeys: nil)
                .filter { $0.lastPathComponent.hasPrefix("files.sqlite") }
            #expect(!stored.isEmpty)
            for file in stored {
                let bytes = try Data(contentsOf: file)
                #expect(bytes.range(of: Data(TestServer.secret.utf8)) == nil, "\(file.lastPathComponent) holds the admin secret")
            }
            // A client that lost the answer asks where to resume.
            let query = try await files.send(.post, path, headers: TestServer.admin.adding([HTTPField.Name("X-Goog-Upload-Command")!: "query"]))
            #expect(query.headers[HTTPField.Name("X-Goog-Upload-Size-Received")!] == "262144")
            // A chunk at the wrong offset is refused and changes nothing.
            let wrong = try await chunk(300_000..<400_000, command: "upload", offset: 300_000)
            #expect(wrong.status == .badRequest)
            let last = try await chunk(262_144..<data.count, command: "upload, finalize", offset: 262_144)
            #expect(last.status == .ok, "\(last.body)")
            #expect(last.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "final")
            #expect(last.json?["size"] == .string("700000"))
            #expect(last.json?["contentType"] == .string("application/x-test"))
            #expect(last.json?["md5Hash"] == .string(Self.md5(data)))
            // Finalizing again answers the same object.
            let again = try await files.send(.post, path, headers: TestServer.admin.adding([HTTPField.Name("X-Goog-Upload-Command")!: "finalize"]))
            #expect(again.json?["generation"] == last.json?["generation"])
            let download = try await files.bytes(FilesClient.objectPath("big/blob.bin") + "?alt=media")
            #expect(download.bytes == data)
        }
    }

    /// The server stopped while it made a resumable upload an object: at the restart its file is gone,
    /// while the session, not yet marked final, still counts the bytes received before the last chunk.
    /// The client's retry of that chunk must not store zeros in their place: the upload ends (404, start
    /// again) and no object is stored.
    @Test func aResumableUploadWhoseBytesAreGoneEndsInsteadOfStoringZeros() async throws {
        let server = FilesTestServer(emulator: true)
        let uploads = server.directory.appendingPathComponent("files/uploads")
        try await server.run { files async throws in
            let data = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
            let start = try await files.send(
                .post, "/v0/b/\(FilesTestServer.bucket)/o?name=lost.bin", body: Array(#"{"name":"lost.bin"}"#.utf8),
                headers: TestServer.admin.adding([
                    HTTPField.Name("X-Goog-Upload-Protocol")!: "resumable", HTTPField.Name("X-Goog-Upload-Command")!: "start",
                ])
            )
            let url = try #require(start.headers[HTTPField.Name("X-Goog-Upload-URL")!])
            let path = String(url[try #require(url.range(of: "/v0/"))!.lowerBound...])
            func chunk(_ range: Range<Int>, command: String) async throws -> Reply {
                try await files.send(.post, path, body: Array(data[range]), headers: TestServer.admin.adding([
                    HTTPField.Name("X-Goog-Upload-Command")!: command, HTTPField.Name("X-Goog-Upload-Offset")!: String(range.lowerBound),
                ]))
            }
            #expect(try await chunk(0..<262_144, command: "upload").status == .ok)
            // A chunk at the wrong offset is refused, and the upload goes on.
            let misplaced = try await chunk(1..<10, command: "upload")
            #expect(misplaced.status == .badRequest)
            #expect(misplaced.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "active")
            for name in try FileManager.default.contentsOfDirectory(atPath: uploads.path) {
                try FileManager.default.removeItem(at: uploads.appendingPathComponent(name))
            }
            let last = try await chunk(262_144..<data.count, command: "upload, finalize")
            #expect(last.status == .notFound, "\(last.body)")
            // The upload is over, and the client is told so (not to retry the same upload).
            #expect(last.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "final")
            #expect(try await files.send(.get, FilesClient.objectPath("lost.bin")).status == .notFound)
            let query = try await files.send(.post, path, headers: TestServer.admin.adding([HTTPField.Name("X-Goog-Upload-Command")!: "query"]))
            #expect(query.status == .notFound)
            #expect(query.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "final")
        }
    }

    @Test func cancelledAndUnknownUploads() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let start = try await files.send(
                .post, "/v0/b/\(FilesTestServer.bucket)/o?name=c.bin", body: Array("{}".utf8),
                headers: TestServer.admin.adding([HTTPField.Name("X-Goog-Upload-Command")!: "start"])
            )
            let url = try #require(start.headers[HTTPField.Name("X-Goog-Upload-URL")!])
            let path = String(url[try #require(url.range(of: "/v0/"))!.lowerBound...])
            let cancel = try await files.send(.post, path, headers: TestServer.admin.adding([HTTPField.Name("X-Goog-Upload-Command")!: "cancel"]))
            #expect(cancel.status == .ok)
            let after = try await files.send(.post, path, body: [1], headers: TestServer.admin.adding([HTTPField.Name("X-Goog-Upload-Command")!: "upload"]))
            #expect(after.status == .notFound)
            #expect(try await files.send(.get, FilesClient.objectPath("c.bin")).status == .notFound)
        }
    }

    @Test func metadataPatchRemovesNullsAndMergesCustomMetadata() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            try await files.upload("m.txt", [1, 2, 3], contentType: "text/plain", metadata: #"{"contentType":"text/plain","cacheControl":"max-age=60","metadata":{"a":"1","b":"2"}}"#)
            let path = FilesClient.objectPath("m.txt")
            let patched = try await files.send(
                .patch, path, body: Array(#"{"cacheControl":null,"contentType":"text/markdown","metadata":{"a":null,"c":"3"}}"#.utf8),
                headers: TestServer.admin.adding([.contentType: "application/json; charset=utf-8"])
            )
            #expect(patched.status == .ok, "\(patched.body)")
            #expect(patched.json?["cacheControl"] == nil)
            #expect(patched.json?["contentType"] == .string("text/markdown"))
            #expect(patched.json?["metadata"] == .object([("b", .string("2")), ("c", .string("3"))]))
            #expect(patched.json?["metageneration"] == .string("2"))
            let cleared = try await files.send(.patch, path, body: Array(#"{"metadata":null}"#.utf8))
            #expect(cleared.json?["metadata"] == nil)
            #expect(try await files.send(.patch, FilesClient.objectPath("nothing"), body: Array("{}".utf8)).status == .notFound)
            #expect(try await files.send(.patch, path, body: Array("[1]".utf8)).status == .badRequest)
        }
    }

    @Test func deleteAnswers204ThenNotFound() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            try await files.upload("d.txt", [9])
            let path = FilesClient.objectPath("d.txt")
            #expect(try await files.send(.delete, path).status == .noContent)
            let missing = try await files.send(.get, path)
            #expect(missing.status == .notFound)
            #expect(missing.json == (try JSONValue(parsing: #"{"error":{"code":404,"message":"Not Found."}}"#)))
            #expect(try await files.send(.delete, path).status == .notFound)
        }
    }

    @Test func listFoldsFoldersAndPages() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            for name in ["p/a.txt", "p/b.txt", "p/c.txt", "p/sub/x.txt", "p/sub/y.txt", "p/tub/z.txt", "q/other.txt", "top.txt"] {
                try await files.upload(name, [1])
            }
            let base = "/v0/b/\(FilesTestServer.bucket)/o"
            let all = try await files.send(.get, "\(base)?prefix=p%2F&delimiter=%2F")
            #expect(all.json?["prefixes"] == .array([.string("p/sub/"), .string("p/tub/")]))
            #expect(all.json?["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["p/a.txt", "p/b.txt", "p/c.txt"])
            #expect(all.json?["nextPageToken"] == nil)
            let root = try await files.send(.get, "\(base)?prefix=&delimiter=%2F")
            #expect(root.json?["prefixes"] == .array([.string("p/"), .string("q/")]))
            #expect(root.json?["items"]?.arrayValue?.count == 1)
            // Pages of two: a.txt b.txt | c.txt sub/ | tub/.
            var seen: [String] = []
            var token: String?
            var pages = 0
            repeat {
                let page = try await files.send(.get, "\(base)?prefix=p%2F&delimiter=%2F&maxResults=2" + (token.map { "&pageToken=\(PercentEncoding.component($0))" } ?? ""))
                seen += page.json?["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
                seen += page.json?["prefixes"]?.arrayValue?.compactMap(\.stringValue) ?? []
                token = page.json?["nextPageToken"]?.stringValue
                pages += 1
            } while token != nil && pages < 10
            #expect(pages == 3)
            #expect(Set(seen) == ["p/a.txt", "p/b.txt", "p/c.txt", "p/sub/", "p/tub/"])
            // Without a delimiter everything under the prefix is an item.
            let flat = try await files.send(.get, "\(base)?prefix=p%2F")
            #expect(flat.json?["items"]?.arrayValue?.count == 6)
            let bad = try await files.send(.get, "\(base)?prefix=p")
            #expect(bad.status == .badRequest)
            #expect(bad.json?["error"]?["message"] == .string("The prefix parameter is required to be empty or ends with a single / character."))
        }
    }

    /// Names the byte order and the folder skip must get right: U+10FFFF right after a folder (or as a
    /// name's first character), and a combining mark right after the prefix. Each listing ends, with
    /// each folder once.
    @Test func listingsOfUnusualNamesEndAndFoldEachFolderOnce() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            for name in ["p/a/\u{10FFFF}b", "p/a/c", "p/b.txt", "q/\u{301}x/y", "q/z", "\u{10FFFF}top"] {
                #expect(try await files.upload(name, [1]).status == .ok)
            }
            let base = "/v0/b/\(FilesTestServer.bucket)/o"
            func listing(_ prefix: String) async throws -> (prefixes: [String], items: [String]) {
                var prefixes: [String] = [], items: [String] = []
                var token: String?
                var pages = 0
                repeat {
                    let page = try await files.send(.get, "\(base)?prefix=\(PercentEncoding.component(prefix))&delimiter=%2F&maxResults=1"
                        + (token.map { "&pageToken=\(PercentEncoding.component($0))" } ?? ""))
                    prefixes += page.json?["prefixes"]?.arrayValue?.compactMap(\.stringValue) ?? []
                    items += page.json?["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
                    token = page.json?["nextPageToken"]?.stringValue
                    pages += 1
                } while token != nil && pages < 20
                #expect(pages < 20, "the listing of \(prefix) did not end")
                return (prefixes, items)
            }
            let p = try await listing("p/")
            #expect(p.prefixes == ["p/a/"])
            #expect(p.items == ["p/b.txt"])
            let q = try await listing("q/")
            #expect(q.prefixes == ["q/\u{301}x/"])
            #expect(q.items == ["q/z"])
            let root = try await listing("")
            #expect(root.prefixes == ["p/", "q/"])
            #expect(root.items == ["\u{10FFFF}top"])
        }
    }

    @Test func downloadTokensAreAdminManaged() async throws {
        try await FilesTestServer().run { files async throws in
            let uploaded = try await files.upload("t.txt", [1])
            let first = try #require(uploaded.json?["downloadTokens"]?.stringValue)
            let path = FilesClient.objectPath("t.txt")
            let refused = try await files.send(.post, "\(path)?create_token=true", headers: try files.user("ada"))
            #expect(refused.status == .forbidden)
            #expect(refused.json?["error"]?["message"] == .string("Missing admin credentials."))
            let created = try await files.send(.post, "\(path)?create_token=true")
            let tokens = try #require(created.json?["downloadTokens"]?.stringValue).split(separator: ",").map(String.init)
            #expect(tokens.count == 2 && tokens[0] == first)
            let removed = try await files.send(.post, "\(path)?delete_token=\(first)")
            #expect(removed.json?["downloadTokens"] == .string(tokens[1]))
            // The removed token no longer opens the file; the remaining one does.
            #expect(try await files.bytes("\(path)?alt=media&token=\(first)", headers: [:]).status == .forbidden)
            #expect(try await files.bytes("\(path)?alt=media&token=\(tokens[1])", headers: [:]).status == .ok)
            #expect(try await files.send(.post, "\(path)?create_token=yes").status == .badRequest)
        }
    }

    @Test func defaultModeIsClosedUntilRulesAreSetAndRulesDecide() async throws {
        try await FilesTestServer().run { files async throws in
            let png = Array(repeating: UInt8(7), count: 100)
            let ada = try files.user("ada")
            let denied = try await files.upload("images/ada/a.png", png, contentType: "image/png", headers: ada)
            #expect(denied.status == .forbidden)
            #expect(denied.json == (try JSONValue(parsing: #"{"error":{"code":403,"message":"Permission denied. No WRITE permission."}}"#)))
            // Rules are admin-only and checked before they apply.
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(Self.photoRules.utf8), headers: ada).status == .unauthorized)
            let broken = try await files.send(.put, "/.settings/storage.rules", body: Array("service firebase.storage { match /b/{bucket}/o { allow read: if ; } }".utf8), headers: TestServer.admin)
            #expect(broken.status == .badRequest)
            #expect(broken.json?["error"]?.stringValue?.contains("1:") == true, "\(broken.body)")
            let set = try await files.send(.put, "/.settings/storage.rules", body: Array(Self.photoRules.utf8), headers: TestServer.admin)
            #expect(set.status == .ok, "\(set.body)")
            #expect(try await files.send(.get, "/.settings/storage.rules").body == Self.photoRules)
            #expect(try await files.upload("images/ada/a.png", png, contentType: "image/png", headers: ada).status == .ok)
            // Someone else's folder, a wrong type, too big: each refused, nothing stored.
            #expect(try await files.upload("images/bob/a.png", png, contentType: "image/png", headers: ada).status == .forbidden)
            #expect(try await files.upload("images/ada/a.txt", png, contentType: "text/plain", headers: ada).status == .forbidden)
            #expect(try await files.upload("images/ada/big.png", Array(repeating: 1, count: 2000), contentType: "image/png", headers: ada).status == .forbidden)
            #expect(try await files.send(.get, FilesClient.objectPath("images/ada/big.png")).status == .notFound)
            // Anyone reads; nobody but admin reads elsewhere.
            #expect(try await files.bytes(FilesClient.objectPath("images/ada/a.png") + "?alt=media", headers: [:]).bytes == png)
            try await files.upload("private/x", [1])
            let hidden = try await files.send(.get, FilesClient.objectPath("private/x"), headers: [:])
            #expect(hidden.json == (try JSONValue(parsing: #"{"error":{"code":403,"message":"Permission denied. No READ permission."}}"#)))
            let list = try await files.send(.get, "/v0/b/\(FilesTestServer.bucket)/o?prefix=private%2F", headers: [:])
            #expect(list.json?["error"]?["message"] == .string("Permission denied. No LIST permission."))
            // Deleting is writing: the owner may, others may not.
            #expect(try await files.send(.delete, FilesClient.objectPath("images/ada/a.png"), headers: try files.user("bob")).status == .forbidden)
            #expect(try await files.send(.delete, FilesClient.objectPath("images/ada/a.png"), headers: ada).status == .noContent)
            // A forged token is a 401, not anonymous access.
            #expect(try await files.send(.get, FilesClient.objectPath("private/x"), headers: [.authorization: "Firebase not-a-token"]).status == .unauthorized)
        }
    }

    @Test func theTimelineAppsStorageRulesAreInstalledOnlyOnAFreshServerInTheDefaultMode() async throws {
        try await FilesTestServer().run { files async throws in
            let rules = try await files.send(.get, "/.settings/storage.rules").body
            #expect(rules.contains("match /timeline/{uid}/{photo}"))
            // Its owner may add a photo under timeline/<uid>/, nobody else, and only images.
            let ada = try files.user("ada")
            #expect(try await files.upload("timeline/ada/1.png", [1, 2, 3], contentType: "image/png", headers: ada).status == .ok)
            #expect(try await files.upload("timeline/bob/1.png", [1, 2, 3], contentType: "image/png", headers: ada).status == .forbidden)
            #expect(try await files.upload("timeline/ada/2.txt", [1], contentType: "text/plain", headers: ada).status == .forbidden)
            #expect(try await files.upload("elsewhere/x", [1], headers: ada).status == .forbidden)
        }
        try await FilesTestServer(emulator: true).run { files async throws in
            // Emulator mode stays open, as the Storage emulator is.
            #expect(try await files.upload("elsewhere/x", [1], headers: try files.user("ada")).status == .ok)
        }
    }

    @Test func unknownBucketsExistOnlyInEmulatorMode() async throws {
        try await FilesTestServer().run { files async throws in
            #expect(try await files.upload("a", [1], bucket: "elsewhere").status == .notFound)
            #expect(try await files.upload("a", [1], bucket: "demo-files.firebasestorage.app").status == .ok)
        }
        try await FilesTestServer(emulator: true).run { files async throws in
            #expect(try await files.upload("a", [1], bucket: "elsewhere").status == .ok)
        }
    }

    @Test func badUploadsAreRefusedClearly() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let noName = try await files.send(.post, "/v0/b/\(FilesTestServer.bucket)/o", body: [1])
            #expect(noName.status == .badRequest)
            var fields = TestServer.admin
            fields[.contentType] = "multipart/related; boundary=xyz"
            let onePart = try await files.send(
                .post, "/v0/b/\(FilesTestServer.bucket)/o?name=x", body: Array("--xyz\r\nContent-Type: application/json\r\n\r\n{}\r\n--xyz--".utf8), headers: fields
            )
            #expect(onePart.status == .badRequest, "\(onePart.body)")
            let badMD5 = try await files.upload("x", [1, 2], metadata: #"{"md5Hash":"AAAAAAAAAAAAAAAAAAAAAA=="}"#)
            #expect(badMD5.status == .badRequest)
            #expect(try await files.send(.get, FilesClient.objectPath("x")).status == .notFound)
            let badEscape = try await files.send(.get, "/v0/b/\(FilesTestServer.bucket)/o/a%zz")
            #expect(badEscape.status == .badRequest)
        }
    }

    @Test func corsLetsBrowsersReadTheUploadHeaders() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let preflight = try await files.send(.options, "/v0/b/\(FilesTestServer.bucket)/o", headers: [
                .origin: "http://localhost:8080", .accessControlRequestHeaders: "authorization, x-goog-upload-command",
            ])
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowHeaders] == "authorization, x-goog-upload-command")
            let upload = try await files.upload("cors.txt", [1], headers: TestServer.admin.adding([.origin: "http://localhost:8080"]))
            #expect(upload.headers[.accessControlAllowOrigin] == "http://localhost:8080")
            #expect(upload.headers[.accessControlExposeHeaders]?.contains("x-goog-upload-status") == true)
        }
    }
}
