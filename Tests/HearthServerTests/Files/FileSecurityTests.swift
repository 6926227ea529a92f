import Clocks
import Foundation
import HearthAccess
import HearthCore
@testable import HearthFiles
import HearthIdentity
import HearthProtocol
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import Testing

/// What keeps the file service safe on the open internet (issue 25, findings 4–7): downloads cannot
/// run script on the server's origin, resumable uploads are checked when they start and cannot grow
/// past what they declared or outlive their lifetime, and metadata is bounded before it is buffered.
@Suite struct FileSecurityTests {
    static let userRules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/{file=**} {
              allow read;
              allow create, update: if request.auth.uid == uid && request.resource.size < 4096
                                    && request.resource.contentType.matches('image/.*');
              allow delete: if request.auth.uid == uid;
            }
          }
        }
        """

    static let csp = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox"
    static let nosniff = HTTPField.Name("X-Content-Type-Options")!
    static let command = HTTPField.Name("X-Goog-Upload-Command")!
    static let declaredLength = HTTPField.Name("X-Goog-Upload-Header-Content-Length")!
    static let declaredType = HTTPField.Name("X-Goog-Upload-Header-Content-Type")!
    static let uploadURL = HTTPField.Name("X-Goog-Upload-URL")!

    static let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg"><script>fetch('/steal?'+localStorage.length)</script></svg>"#.utf8)

    // MARK: - Finding 4: downloads

    @Test func anSVGWithScriptIsDownloadedAsASandboxedAttachment() async throws {
        try await FilesTestServer().run { files async throws in
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(Self.userRules.utf8)).status == .ok)
            let ada = try files.user("ada")
            // image/svg+xml passes an image/.* rule: the upload itself is allowed.
            let upload = try await files.upload("users/ada/evil.svg", Self.svg, contentType: "image/svg+xml", headers: ada)
            #expect(upload.status == .ok, "\(upload.body)")
            let token = try #require(upload.json?["downloadTokens"]?.stringValue)
            let download = try await files.bytes(FilesClient.objectPath("users/ada/evil.svg") + "?alt=media&token=\(token)", headers: [:])
            #expect(download.status == .ok)
            #expect(download.bytes == Self.svg)
            #expect(download.headers[.contentType] == "image/svg+xml")
            #expect(download.headers[Self.nosniff] == "nosniff")
            #expect(download.headers[.contentSecurityPolicy] == Self.csp)
            #expect(download.headers[.contentDisposition] == "attachment; filename*=utf-8''evil.svg")
            // The Cloud Storage API's download route serves the same headers.
            let gcs = try await files.bytes("/download/storage/v1/b/\(FilesTestServer.bucket)/o/users%2Fada%2Fevil.svg?alt=media")
            #expect(gcs.status == .ok)
            #expect(gcs.headers[Self.nosniff] == "nosniff")
            #expect(gcs.headers[.contentSecurityPolicy] == Self.csp)
            #expect(gcs.headers[.contentDisposition] == "attachment; filename*=utf-8''evil.svg")
            let media = try await files.bytes("/storage/v1/b/\(FilesTestServer.bucket)/o/users%2Fada%2Fevil.svg?alt=media")
            #expect(media.headers[.contentDisposition] == "attachment; filename*=utf-8''evil.svg")
        }
    }

    /// A client that may change an object's metadata but not read it cannot give itself a download
    /// token (the `firebaseStorageDownloadTokens` key is the admin's), nor read the object's tokens
    /// in the answer.
    @Test func aWriteOnlyClientCannotGiveItselfADownloadToken() async throws {
        let rules = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /inbox/{file} {
                  allow update: if request.auth != null && request.resource.metadata.keys().hasOnly(['note']);
                }
              }
            }
            """
        try await FilesTestServer().run { files async throws in
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(rules.utf8)).status == .ok)
            let stored = try await files.upload("inbox/secret.txt", Array("top secret".utf8), contentType: "text/plain")
            let adminToken = try #require(stored.json?["downloadTokens"]?.stringValue)
            let eve = try files.user("eve")
            let patch = #"{"metadata": {"note": "x", "firebaseStorageDownloadTokens": "eve-token"}}"#
            let patched = try await files.send(.patch, FilesClient.objectPath("inbox/secret.txt"), body: Array(patch.utf8), headers: eve)
            #expect(patched.status == .ok, "\(patched.body)")
            #expect(patched.json?["downloadTokens"] == nil)
            #expect(patched.json?["metadata"]?["note"] == .string("x"))
            let stolen = try await files.bytes(FilesClient.objectPath("inbox/secret.txt") + "?alt=media&token=eve-token", headers: [:])
            #expect(stolen.status != .ok)
            // The admin's token still reads it.
            let read = try await files.bytes(FilesClient.objectPath("inbox/secret.txt") + "?alt=media&token=\(adminToken)", headers: [:])
            #expect(read.bytes == Array("top secret".utf8))
        }
    }

    /// Uploads racing to create one object under a create-only rule: one creates it, the others are
    /// refused as the updates they became (before, each passed the check on the empty slot).
    @Test func racingCreatesUnderACreateOnlyRuleCreateOnce() async throws {
        let rules = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /once/{file} {
                  allow read;
                  allow create: if request.auth != null;
                }
              }
            }
            """
        try await FilesTestServer().run { files async throws in
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(rules.utf8)).status == .ok)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<16 {
                    let user = try files.user("u\(index)")
                    group.addTask { try await files.upload("once/slot", Array("by u\(index)".utf8), contentType: "text/plain", headers: user).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == .forbidden }.count == 15, "\(statuses)")
        }
    }

    /// A download token lets its holder read the object and its metadata, but the metadata shows them
    /// their own token only: the object's other tokens (given to others) stay unknown, so deleting a
    /// token ends what it gave.
    @Test func aDownloadTokensMetadataShowsNoOtherToken() async throws {
        try await FilesTestServer().run { files async throws in
            let stored = try await files.upload("shared/report.txt", Array("quarterly".utf8), contentType: "text/plain")
            let first = try #require(stored.json?["downloadTokens"]?.stringValue)
            let path = FilesClient.objectPath("shared/report.txt")
            let added = try await files.send(.post, path + "?create_token=true")
            #expect(added.status == .ok)
            let both = try #require(added.json?["downloadTokens"]?.stringValue)
            let second = try #require(both.split(separator: ",").map(String.init).first { $0 != first })
            let seen = try await files.send(.get, path + "?token=\(first)", headers: [:])
            #expect(seen.status == .ok)
            #expect(seen.json?["downloadTokens"] == .string(first))
            #expect(seen.json?["name"] == .string("shared/report.txt"))
            // The admin (as anyone the rules let read) sees them all.
            #expect(try await files.send(.get, path).json?["downloadTokens"] == .string(both))
            // Deleting the first token ends its holder's access.
            #expect(try await files.send(.post, path + "?delete_token=\(first)").status == .ok)
            #expect(try await files.send(.get, path + "?token=\(first)", headers: [:]).status == .forbidden)
            #expect(try await files.bytes(path + "?alt=media&token=\(second)", headers: [:]).bytes == Array("quarterly".utf8))
        }
    }

    /// A list rule on a folder says nothing of the folders below it: a listing the rules decide is
    /// folded at `/` whatever delimiter was asked, so the names below stay hidden. The admin lists as asked.
    @Test func aListingTheRulesAllowShowsNoNamesBelowTheFolder() async throws {
        let rules = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /{folder} {
                  allow list: if folder == 'public';
                }
              }
            }
            """
        try await FilesTestServer().run { files async throws in
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(rules.utf8)).status == .ok)
            for name in ["public/a.txt", "public/secret/plan.txt", "public/secret/deeper/key.txt"] {
                #expect(try await files.upload(name, [1], headers: TestServer.admin).status == .ok)
            }
            let user = try files.user("lister")
            let base = "/v0/b/\(FilesTestServer.bucket)/o"
            for query in ["prefix=public%2F", "prefix=public%2F&delimiter=x", "prefix=public%2F&delimiter=", "prefix=public%2F&delimiter=%2F"] {
                let listed = try await files.send(.get, "\(base)?\(query)", headers: user)
                #expect(listed.status == .ok, "\(query)")
                #expect(listed.json?["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["public/a.txt"], "\(query)")
                #expect(listed.json?["prefixes"] == .array([.string("public/secret/")]), "\(query)")
            }
            let asAdmin = try await files.send(.get, "\(base)?prefix=public%2F")
            #expect(asAdmin.json?["items"]?.arrayValue?.count == 3)
            #expect(try await files.send(.get, "\(base)?prefix=public%2Fsecret%2F", headers: user).status == .forbidden)
        }
    }

    @Test func activeTypesAreAttachmentsWhateverTheStoredDispositionSaysAndOthersKeepIt() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let cases: [(name: String, type: String, disposition: String?, expected: String)] = [
                ("page.html", "TEXT/HTML; charset=utf-8", #"inline; filename="page.html""#, #"attachment; filename="page.html""#),
                ("feed.xml", "application/atom+xml", nil, "attachment; filename*=utf-8''feed.xml"),
                ("data.xml", "text/xml", "inline", "attachment; filename*=utf-8''data.xml"),
                ("app.js", "text/javascript", nil, "attachment; filename*=utf-8''app.js"),
                ("doc.pdf", "application/pdf", nil, "attachment; filename*=utf-8''doc.pdf"),
                ("page.xhtml", "application/xhtml+xml", nil, "attachment; filename*=utf-8''page.xhtml"),
                ("pic.png", "image/png", nil, "inline; filename*=utf-8''pic.png"),
                ("clip.mp4", "video/mp4", #"inline; filename="clip.mp4""#, #"inline; filename="clip.mp4""#),
                ("notes.txt", "text/plain", "attachment", "attachment; filename*=utf-8''notes.txt"),
            ]
            for item in cases {
                var metadata: [(key: String, value: JSONValue)] = [("name", .string(item.name)), ("contentType", .string(item.type))]
                if let disposition = item.disposition { metadata.append(("contentDisposition", .string(disposition))) }
                let reply = try await files.upload(item.name, Array("x".utf8), contentType: item.type, metadata: JSONValue.object(metadata).jsonText)
                #expect(reply.status == .ok, "\(item.name): \(reply.body)")
                let download = try await files.bytes(FilesClient.objectPath(item.name) + "?alt=media")
                #expect(download.headers[.contentDisposition] == item.expected, "\(item.name)")
                #expect(download.headers[Self.nosniff] == "nosniff", "\(item.name)")
                #expect(download.headers[.contentSecurityPolicy] == Self.csp, "\(item.name)")
            }
            // Metadata and errors carry the protection too.
            let metadata = try await files.send(.get, FilesClient.objectPath("page.html"))
            #expect(metadata.headers[Self.nosniff] == "nosniff")
            let missing = try await files.send(.get, FilesClient.objectPath("nothing") + "?alt=media")
            #expect(missing.status == .notFound)
            #expect(missing.headers[.contentSecurityPolicy] == Self.csp)
        }
    }

    @Test func activeContentIsRecognizedWhateverItsCaseAndParameters() {
        for type in ["text/html", " Text/HTML ;charset=x", "image/svg+xml", "application/xml", "application/rss+xml", "text/xsl",
            "application/javascript", "application/x-javascript", "text/ecmascript", "application/pdf", "multipart/x-mixed-replace",
            "\ttext/html\t", "\u{00A0}text/html\u{2003}; charset=utf-8",
            // Not one type: a browser takes the last of a list, and sees a control character as a space.
            "image/png, text/html", "image/png,text/html", "text/html\u{0}", "text/html\r", "image/png\u{0}text/html", "", "image",
            "image/", "/png", "image/png/x", "imáge/png"]
        {
            #expect(FilesHTTP.isActiveContent(type), "\(type)")
        }
        for type in ["image/png", "image/jpeg", "video/mp4", "audio/mpeg", "text/plain", "application/json", "application/octet-stream", "text/css",
            "Image/PNG; charset=x", "application/vnd.ms-excel", "image/x-icon"] {
            #expect(!FilesHTTP.isActiveContent(type), "\(type)")
        }
        #expect(!FilesHTTP.isActiveContent(nil))
    }

    @Test func queriesAndCredentialsAreReadAsBefore() throws {
        #expect(try FilesHTTP.query("name=a+b%2Bc&alt=media&x") == ["name": "a b+c", "alt": "media", "x": ""])
        #expect(try FilesHTTP.query("caf%C3%A9=%C3%A9t%C3%A9+1") == ["café": "été 1"])
        #expect(FilesHTTP.trimmingWhitespace(" \t tok en\t ") == "tok en")
        #expect(FilesHTTP.trimmingWhitespace("\u{00A0}tök\u{2003}") == "tök")
        #expect(FilesHTTP.trimmingWhitespace(" \t ") == "")
        func credential(_ values: String...) -> String? {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: .authorization, value: value)) }
            return FilesHTTP.credential(Request(head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/", headerFields: fields), body: .init(buffer: ByteBuffer())))
        }
        #expect(credential("Bearer tok") == "tok")
        #expect(credential("Firebase  tok en \t") == "tok en")
        #expect(credential("  Bearer tok") == "tok")
        #expect(credential("Bearer") == nil)
        #expect(credential("Bearer   ") == nil)
        #expect(credential("Bearer\ttok") == nil)
        #expect(credential() == nil)
        #expect(credential("bearer tok") == "tok")
        #expect(credential("FIREBASE tok") == "tok")
        // Another scheme is no credential (a proxy's login passed through is no guess at the admin secret).
        #expect(credential("Basic dXNlcjpwdw==") == nil)
        #expect(credential("Token tok") == nil)
        #expect(credential("Bearers tok") == nil)
        // Two fields are one list, as before: the second word of "Bearer a, Bearer b".
        #expect(credential("Bearer a", "Bearer b") == "a, Bearer b")
        #expect(FilesHTTP.normalizedMediaType("image/png") == "image/png")
        #expect(FilesHTTP.normalizedMediaType(" Image/PNG ; q=1") == "image/png")
        #expect(FilesHTTP.normalizedMediaType("text/html;charset=utf-8") == "text/html")
        #expect(PercentEncoding.component("photos/a b+c.jpg") == "photos%2Fa%20b%2Bc.jpg")
        #expect(PercentEncoding.component("plain-name_1.~") == "plain-name_1.~")
        #expect(PercentEncoding.component("it's (1)!", keeping: "!*'()") == "it's%20(1)!")
        #expect(PercentEncoding.component("é") == "%C3%A9")
    }

    // MARK: - Finding 5: resumable uploads

    /// Starts a Firebase resumable upload; returns the reply and the session's path.
    static func start(
        _ files: FilesClient, _ name: String, size: Int?, type: String = "image/png", metadata: String? = nil, headers: HTTPFields
    ) async throws -> (reply: Reply, path: String?) {
        var fields = headers.adding([HTTPField.Name("X-Goog-Upload-Protocol")!: "resumable", command: "start", declaredType: type])
        if let size { fields[declaredLength] = String(size) }
        let body = metadata ?? #"{"name":"\#(name)","contentType":"\#(type)"}"#
        let reply = try await files.send(
            .post, "/v0/b/\(FilesTestServer.bucket)/o?name=\(PercentEncoding.component(name))", body: Array(body.utf8), headers: fields
        )
        let path = reply.headers[uploadURL].flatMap { url in url.range(of: "/v0/").map { String(url[$0.lowerBound...]) } }
        return (reply, path)
    }

    @Test func aResumableStartIsCheckedAgainstTheRulesWithTheDeclaredObject() async throws {
        let server = FilesTestServer()
        try await server.run(keep: true) { files async throws in
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(Self.userRules.utf8)).status == .ok)
            let ada = try files.user("ada")
            // Anonymous, someone else, too big as declared, the wrong type: each refused at the start.
            for (headers, size, type) in [([:], 100, "image/png"), (try files.user("bob"), 100, "image/png"), (ada, 5000, "image/png"),
                (ada, 100, "text/html")] as [(HTTPFields, Int, String)]
            {
                let (reply, path) = try await Self.start(files, "users/ada/a.png", size: size, type: type, headers: headers)
                #expect(reply.status == .forbidden, "\(size) \(type): \(reply.body)")
                #expect(reply.json == (try JSONValue(parsing: #"{"error":{"code":403,"message":"Permission denied. No WRITE permission."}}"#)))
                #expect(reply.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "final")
                #expect(path == nil)
            }
            let (allowed, path) = try await Self.start(files, "users/ada/a.png", size: 100, headers: ada)
            #expect(allowed.status == .ok, "\(allowed.body)")
            #expect(path != nil)
        }
        defer { server.remove() }
        // Only the allowed start left a session behind.
        let catalog = try SQLiteObjectCatalog(directory: server.directory)
        #expect(try await catalog.uploads().count == 1)
    }

    /// A start that declares no size (Android's SDK declares none): each chunk is checked with the size
    /// it would reach before it is stored, so the rules' size limit holds and nothing past it is kept.
    @Test func chunksOfAnUploadOfUndeclaredSizeAreCheckedAsTheyCome() async throws {
        try await FilesTestServer().run { files async throws in
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(Self.userRules.utf8)).status == .ok)
            let ada = try files.user("ada")
            let (start, found) = try await Self.start(files, "users/ada/u.png", size: nil, headers: ada)
            #expect(start.status == .ok, "\(start.body)")
            let path = try #require(found)
            func chunk(_ count: Int, offset: Int, command: String = "upload") async throws -> Reply {
                try await files.send(.post, path, body: Array(repeating: 7, count: count), headers: ada.adding([
                    Self.command: command, HTTPField.Name("X-Goog-Upload-Offset")!: String(offset),
                ]))
            }
            // 3,000 then 2,000 would reach 5,000, past the rules' 4,096: refused before it is stored.
            #expect(try await chunk(3000, offset: 0).status == .ok)
            let over = try await chunk(2000, offset: 3000)
            #expect(over.status == .forbidden, "\(over.body)")
            // The upload goes on (the next chunk may be smaller), and the client is told so.
            #expect(over.headers[HTTPField.Name("X-Goog-Upload-Status")!] == "active")
            let query = try await files.send(.post, path, headers: TestServer.admin.adding([Self.command: "query"]))
            #expect(query.headers[HTTPField.Name("X-Goog-Upload-Size-Received")!] == "3000")
            let last = try await chunk(1000, offset: 3000, command: "upload, finalize")
            #expect(last.status == .ok, "\(last.body)")
            #expect(last.json?["size"] == .string("4000"))
        }
    }

    @Test func chunksNeverGoPastTheDeclaredSize() async throws {
        let server = FilesTestServer(emulator: true)
        try await server.run(keep: true) { files async throws in
            let (start, found) = try await Self.start(files, "grow.bin", size: 10, type: "application/octet-stream", headers: try files.user("ada"))
            #expect(start.status == .ok, "\(start.body)")
            let path = try #require(found)
            let first = try await files.send(.post, path, body: Array(repeating: 1, count: 6), headers: try files.user("ada").adding([Self.command: "upload"]))
            #expect(first.status == .ok)
            // 6 + 5 > 10: refused, and none of the 5 is kept.
            let over = try await files.send(
                .post, path, body: Array(repeating: 2, count: 5),
                headers: try files.user("ada").adding([Self.command: "upload", HTTPField.Name("X-Goog-Upload-Offset")!: "6"])
            )
            #expect(over.status == .badRequest, "\(over.body)")
            #expect(over.json?["error"]?["message"]?.stringValue?.contains("announced 10 bytes") == true, "\(over.body)")
            let query = try await files.send(.post, path, headers: TestServer.admin.adding([Self.command: "query"]))
            #expect(query.headers[HTTPField.Name("X-Goog-Upload-Size-Received")!] == "6")
            let id = try #require(path.split(separator: "upload_id=").last?.split(separator: "&").first)
            let onDisk = try FileManager.default.attributesOfItem(atPath: server.directory.appendingPathComponent("files/uploads/\(id)").path)
            #expect((onDisk[.size] as? NSNumber)?.intValue == 6)
            // The right last chunk finishes it.
            let last = try await files.send(
                .post, path, body: Array(repeating: 3, count: 4),
                headers: try files.user("ada").adding([Self.command: "upload, finalize", HTTPField.Name("X-Goog-Upload-Offset")!: "6"])
            )
            #expect(last.status == .ok, "\(last.body)")
            #expect(last.json?["size"] == .string("10"))
        }
        server.remove()
    }

    @Test func openResumableUploadsAreLimitedPerUserAndPerAddress() async throws {
        let server = FilesTestServer(emulator: true) { configuration in
            configuration.files.maximumOpenUploadsPerUser = 2
            configuration.files.maximumOpenUploadsPerAddress = 3
            configuration.identity.trustForwardedFor = true
        }
        try await server.run { files async throws in
            let ada = try files.user("ada").adding([HTTPField.Name("X-Forwarded-For")!: "203.0.113.1"])
            let first = try await Self.start(files, "a1", size: 1, headers: ada)
            #expect(first.reply.status == .ok)
            #expect(try await Self.start(files, "a2", size: 1, headers: ada).reply.status == .ok)
            let third = try await Self.start(files, "a3", size: 1, headers: ada)
            #expect(third.reply.status == .tooManyRequests)
            #expect(third.reply.json?["error"]?["code"] == .number(429))
            #expect(third.reply.json?["error"]?["message"]?.stringValue?.contains("this user") == true, "\(third.reply.body)")
            // Another user from the same address: one more fits under the address's 3.
            let bob = try files.user("bob").adding([HTTPField.Name("X-Forwarded-For")!: "203.0.113.1"])
            #expect(try await Self.start(files, "b1", size: 1, headers: bob).reply.status == .ok)
            let anonymous = try await Self.start(files, "n1", size: 1, headers: [HTTPField.Name("X-Forwarded-For")!: "203.0.113.1"])
            #expect(anonymous.reply.status == .tooManyRequests)
            #expect(anonymous.reply.json?["error"]?["message"]?.stringValue?.contains("this address") == true)
            // Another address is not affected; the admin never is.
            #expect(try await Self.start(files, "n2", size: 1, headers: [HTTPField.Name("X-Forwarded-For")!: "198.51.100.7"]).reply.status == .ok)
            #expect(try await Self.start(files, "x", size: 1, headers: TestServer.admin.adding([HTTPField.Name("X-Forwarded-For")!: "203.0.113.1"])).reply.status == .ok)
            // Finishing or cancelling one frees its place.
            let path = try #require(first.path)
            #expect(try await files.send(.post, path, body: [1], headers: ada.adding([Self.command: "upload, finalize"])).status == .ok)
            #expect(try await Self.start(files, "a3", size: 1, headers: ada).reply.status == .ok)
        }
    }

    @Test func abandonedUploadsExpireAndTheSweepRemovesTheirBytes() async throws {
        let clock = TestClock<Duration>()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-files-sweep-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = FilesConfiguration()
        configuration.uploadSessionLifetime = .seconds(3600)
        configuration.uploadSweepInterval = .seconds(600)
        configuration.maximumOpenUploadsPerUser = 1
        let files = try await FileService.open(
            directory: directory.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: directory), project: "demo",
            emulatorMode: true, configuration: configuration,
            clock: ServerClock(clock, wallMillisecondsAtStart: WallClock.milliseconds()), logger: Logger(label: "test")
        )
        let user = FileRequester(identity: .user(.object([("uid", .string("ada"))])), address: "192.0.2.1")
        let session = try await files.startUpload(
            bucket: "demo.appspot.com", name: "left.bin", metadata: .object([]), expectedSize: 100, user, credential: nil, api: "firebase"
        )
        let chunk = RequestBody(buffer: ByteBuffer(bytes: Array(repeating: 9, count: 40)))
        _ = try await files.appendUpload(session.id, body: chunk, offset: 0, finalize: false, user)
        let bytes = directory.appendingPathComponent("files/uploads/\(session.id)").path
        #expect(FileManager.default.fileExists(atPath: bytes))
        // Within its lifetime it stays; past it, it is gone to clients at once and swept within an interval.
        await clock.advance(by: .seconds(3000))
        #expect(try await files.uploadSession(session.id).received == 40)
        await #expect(throws: FilesError.self) {
            try await files.startUpload(
                bucket: "demo.appspot.com", name: "second.bin", metadata: .object([]), expectedSize: 1, user, credential: nil, api: "firebase"
            )
        }
        await clock.advance(by: .seconds(601))
        await #expect(throws: FilesError(404, "No such upload.")) { try await files.uploadSession(session.id) }
        await clock.advance(by: .seconds(600))
        try await eventually { !FileManager.default.fileExists(atPath: bytes) }
        try await eventually { (try? await files.catalog.upload(id: session.id)) == nil }
        // Its place under the per-user limit (1 here) is free again.
        let next = try await files.startUpload(
            bucket: "demo.appspot.com", name: "again.bin", metadata: .object([]), expectedSize: 1, user, credential: nil, api: "firebase"
        )
        #expect(try await files.uploadSession(next.id).received == 0)
    }

    // MARK: - Finding 6: custom metadata

    static func customMetadata(bytes: Int) -> String {
        // One key of 8 bytes ("padding0") and a value making up the rest.
        #"{"padding0":"\#(String(repeating: "v", count: bytes - 8))"}"#
    }

    @Test func customMetadataIsLimitedTo8KiBOnEveryUploadAndOnPatch() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let fits = try await files.upload(
                "fits.png", [1], contentType: "image/png",
                metadata: #"{"name":"fits.png","contentType":"image/png","metadata":\#(Self.customMetadata(bytes: 8192))}"#
            )
            #expect(fits.status == .ok, "\(fits.body)")
            let over = try await files.upload(
                "over.png", [1], contentType: "image/png",
                metadata: #"{"name":"over.png","contentType":"image/png","metadata":\#(Self.customMetadata(bytes: 8193))}"#
            )
            #expect(over.status == .badRequest)
            #expect(over.json?["error"]?["message"]?.stringValue?.contains("8192 bytes") == true, "\(over.body)")
            #expect(try await files.send(.get, FilesClient.objectPath("over.png")).status == .notFound)
            // Multi-byte characters count as their UTF-8 bytes.
            let wide = try await files.upload(
                "wide.png", [1], contentType: "image/png",
                metadata: #"{"name":"wide.png","metadata":{"k":"\#(String(repeating: "é", count: 4096))"}}"#
            )
            #expect(wide.status == .badRequest)
            // A resumable start.
            let start = try await Self.start(
                files, "r.png", size: 1, metadata: #"{"name":"r.png","metadata":\#(Self.customMetadata(bytes: 9000))}"#, headers: TestServer.admin
            )
            #expect(start.reply.status == .badRequest)
            // PATCH: the merged result counts.
            #expect(try await files.upload("p.png", [1], contentType: "image/png", metadata: #"{"name":"p.png","metadata":{"a":"\#(String(repeating: "x", count: 5000))"}}"#).status == .ok)
            let patch = try await files.send(.patch, FilesClient.objectPath("p.png"), body: Array(#"{"metadata":{"b":"\#(String(repeating: "y", count: 5000))"}}"#.utf8))
            #expect(patch.status == .badRequest)
            #expect(try await files.send(.get, FilesClient.objectPath("p.png")).json?["metadata"]?["b"] == nil)
            let replace = try await files.send(.patch, FilesClient.objectPath("p.png"), body: Array(#"{"metadata":{"a":null,"b":"\#(String(repeating: "y", count: 5000))"}}"#.utf8))
            #expect(replace.status == .ok, "\(replace.body)")
            // The Cloud Storage API's PATCH, in its error shape.
            let gcs = try await files.send(
                .patch, "/storage/v1/b/\(FilesTestServer.bucket)/o/p.png", body: Array(#"{"metadata":\#(Self.customMetadata(bytes: 9000))}"#.utf8)
            )
            #expect(gcs.status == .badRequest)
            #expect(gcs.body.contains(#""reason":"invalid""#), "\(gcs.body)")
        }
    }

    // MARK: - Finding 7: multipart metadata parts

    @Test func aMultipartMetadataPartOverTheCapIsRefused() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let big = #"{"name":"m.bin","x":"\#(String(repeating: "z", count: 70 * 1024))"}"#
            let reply = try await files.upload("m.bin", [1, 2, 3], metadata: big)
            #expect(reply.status == .badRequest)
            #expect(reply.json?["error"]?["message"] == .string("The metadata part of a multipart upload is limited to 64 KiB."))
            let small = try await files.upload("m.bin", [1, 2, 3], metadata: #"{"name":"m.bin","x":"\#(String(repeating: "z", count: 60 * 1024))"}"#)
            #expect(small.status == .ok, "\(small.body)")
        }
    }

    /// A body that never ends: the metadata part's first bytes, then more of it forever.
    struct EndlessMetadata: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let served: Counter

        final class Counter: Sendable {
            let bytes = Mutex(0)
        }

        struct AsyncIterator: AsyncIteratorProtocol {
            var started = false
            let served: Counter

            mutating func next() async throws -> ByteBuffer? {
                let chunk = started ? ByteBuffer(repeating: UInt8(ascii: "a"), count: 4096)
                    : ByteBuffer(string: "--B\r\nContent-Type: application/json\r\n\r\n{\"name\":\"")
                started = true
                served.bytes.withLock { $0 += chunk.readableBytes }
                return chunk
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(served: served) }
    }

    @Test func theMetadataPartIsNotBufferedPastTheCap() async throws {
        let counter = EndlessMetadata.Counter()
        let upload = MultipartUpload(body: EndlessMetadata(served: counter), boundary: "B")
        await #expect(throws: MultipartUpload<EndlessMetadata>.metadataTooLarge) {
            for try await _ in upload.data {}
        }
        let read = counter.bytes.withLock { $0 }
        #expect(read <= MultipartUpload<EndlessMetadata>.maximumMetadataBytes + 8192, "read \(read) bytes")
        #expect(upload.state.parts.withLock { $0.metadata.readableBytes } <= MultipartUpload<EndlessMetadata>.maximumMetadataBytes)
    }
    /// A multipart body: the metadata part naming `x.bin`, then `dataChunks` chunks of 4 KiB of data.
    struct LongMultipart: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let dataChunks: Int
        let served: EndlessMetadata.Counter

        struct AsyncIterator: AsyncIteratorProtocol {
            var sent = 0
            let dataChunks: Int
            let served: EndlessMetadata.Counter

            mutating func next() async throws -> ByteBuffer? {
                defer { sent += 1 }
                let chunk: ByteBuffer
                switch sent {
                case 0: chunk = ByteBuffer(string: "--B\r\nContent-Type: application/json\r\n\r\n{\"name\":\"x.bin\"}\r\n--B\r\nContent-Type: application/octet-stream\r\n\r\n")
                case 1...dataChunks: chunk = ByteBuffer(repeating: UInt8(ascii: "a"), count: 4096)
                case dataChunks + 1: chunk = ByteBuffer(string: "\r\n--B--\r\n")
                default: return nil
                }
                served.bytes.withLock { $0 += chunk.readableBytes }
                return chunk
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(dataChunks: dataChunks, served: served) }
    }

    /// The early check of a multipart upload takes the data's size from the body's length less the
    /// metadata part and the boundaries: an upload just under a size limit is not refused for them.
    @Test func aMultipartUploadJustUnderTheSizeLimitIsStored() async throws {
        let rules = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /users/{uid}/{file} {
                  allow create: if request.auth.uid == uid && request.resource.size > 0 && request.resource.size < 4096;
                }
              }
            }
            """
        try await FilesTestServer().run { files async throws in
            #expect(try await files.send(.put, "/.settings/storage.rules", body: Array(rules.utf8)).status == .ok)
            let ada = try files.user("ada")
            let stored = try await files.upload("users/ada/edge.png", Array(repeating: 9, count: 4090), contentType: "image/png", headers: ada)
            #expect(stored.status == .ok, "\(stored.body)")
            #expect(stored.json?["size"] == .string("4090"))
            let over = try await files.upload("users/ada/over.png", Array(repeating: 9, count: 4100), contentType: "image/png", headers: ada)
            #expect(over.status == .forbidden)
        }
    }

    /// A multipart upload the rules refuse whatever its size (here: anyone but the admin, the default
    /// rules) is refused once its metadata part has arrived, not after its data was stored.
    @Test func aMultipartUploadTheRulesRefuseIsRefusedBeforeItsDataIsRead() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-multipart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try await FileService.open(
            directory: directory.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: directory), project: "demo",
            emulatorMode: false, logger: Logger(label: "test")
        )
        let served = EndlessMetadata.Counter()
        let body = LongMultipart(dataChunks: 2_000, served: served)
        await #expect(throws: FilesError.self) {
            _ = try await service.uploadMultipart(
                MultipartUpload(body: body, boundary: "B"), bucket: "demo.appspot.com", name: nil, declaredBodySize: 8_200_000,
                FileRequester(identity: .anonymous), firebaseTokens: true
            )
        }
        let read = served.bytes.withLock { $0 }
        #expect(read < 64 * 1024, "read \(read) bytes of a refused upload")
    }
}
