import Foundation
import HearthCore
@testable import HearthFiles
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import Testing

/// The Cloud Storage JSON API subset that `google-cloud-storage` uses, and the file store's
/// durability: what survives a restart, what a crash leaves and how it is cleaned.
@Suite struct CloudStorageTests {
    static let bucket = FilesTestServer.bucket

    @Test func crc32cMatchesTheStandardCheckValue() {
        var crc = CRC32C()
        crc.update(Array("123456789".utf8))
        #expect(crc.value == 0xE306_9283)
        // Fed in pieces of every alignment, the same.
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var whole = CRC32C()
        whole.update(data)
        var pieces = CRC32C()
        pieces.update(Array(data[0..<3]))
        pieces.update(Array(data[3..<517]))
        pieces.update(Array(data[517...]))
        #expect(whole.value == pieces.value)
        #expect(CRC32C.base64(0xE306_9283) == "4waSgw==")
    }

    @Test func multipartAndMediaUploadsThenReadListPatchCopyDelete() async throws {
        try await FilesTestServer().run { files async throws in
            let boundary = "===gcs==="
            let body = Array("--\(boundary)\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n{\"name\": \"docs/readme.txt\", \"metadata\": {\"k\": \"v\"}}\r\n--\(boundary)\r\ncontent-type: text/plain\r\n\r\nhello gcs\r\n--\(boundary)--\r\n".utf8)
            let uploaded = try await files.send(
                .post, "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=multipart", body: body,
                headers: TestServer.admin.adding([.contentType: "multipart/related; boundary=\"\(boundary)\""])
            )
            #expect(uploaded.status == .ok, "\(uploaded.body)")
            #expect(uploaded.json?["kind"] == .string("storage#object"))
            #expect(uploaded.json?["contentType"] == .string("text/plain"))
            #expect(uploaded.json?["metadata"] == .object([("k", .string("v"))]))
            #expect(uploaded.json?["crc32c"] != nil)
            let media = try await files.send(
                .post, "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=media&name=docs%2Fother.bin", body: [1, 2, 3],
                headers: TestServer.admin.adding([.contentType: "application/octet-stream"])
            )
            #expect(media.json?["size"] == .string("3"))
            let read = try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o/docs%2Freadme.txt")
            #expect(read.json?["name"] == .string("docs/readme.txt"))
            let mediaLink = try #require(read.json?["mediaLink"]?.stringValue)
            #expect(mediaLink.contains("/download/storage/v1/b/\(Self.bucket)/o/docs%2Freadme.txt"))
            let download = try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/docs%2Freadme.txt?alt=media", headers: TestServer.admin)
            #expect(String(decoding: download.bytes, as: UTF8.self) == "hello gcs")
            #expect(download.headers[HTTPField.Name("x-goog-hash")!]?.contains("md5=") == true)
            let listing = try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o?prefix=docs%2F")
            #expect(listing.json?["kind"] == .string("storage#objects"))
            #expect(listing.json?["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["docs/other.bin", "docs/readme.txt"])
            let patched = try await files.send(.patch, "/storage/v1/b/\(Self.bucket)/o/docs%2Freadme.txt", body: Array(#"{"metadata":{"firebaseStorageDownloadTokens":"tok-1"}}"#.utf8))
            #expect(patched.json?["metadata"]?["firebaseStorageDownloadTokens"] == .string("tok-1"))
            // The token set through the admin API opens the Firebase download URL.
            #expect(try await files.bytes("/v0/b/\(Self.bucket)/o/docs%2Freadme.txt?alt=media&token=tok-1", headers: [:]).status == .ok)
            let copied = try await files.send(.post, "/storage/v1/b/\(Self.bucket)/o/docs%2Freadme.txt/copyTo/b/\(Self.bucket)/o/copy.txt")
            #expect(copied.json?["name"] == .string("copy.txt"))
            #expect(try await files.send(.delete, "/storage/v1/b/\(Self.bucket)/o/docs%2Freadme.txt").status == .noContent)
            let gone = try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o/docs%2Freadme.txt")
            #expect(gone.status == .notFound)
            #expect(gone.json?["error"]?["errors"]?.arrayValue?.first?["reason"] == .string("notFound"))
            // The copy has its own bytes.
            #expect(String(decoding: try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/copy.txt?alt=media", headers: TestServer.admin).bytes, as: UTF8.self) == "hello gcs")
        }
    }

    @Test func resumableUploadWithContentRangeChunks() async throws {
        try await FilesTestServer().run { files async throws in
            let data = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
            let start = try await files.send(
                .post, "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=resumable", body: Array(#"{"name":"r/big.bin","contentType":"application/x-big"}"#.utf8),
                headers: TestServer.admin.adding([.contentType: "application/json"])
            )
            let location = try #require(start.headers[.location])
            let path = String(location[try #require(location.range(of: "/upload/"))!.lowerBound...])
            let first = try await files.send(.put, path, body: Array(data[0..<262_144]), headers: TestServer.admin.adding([.contentRange: "bytes 0-262143/*"]))
            #expect(first.status.code == 308)
            #expect(first.headers[.range] == "bytes=0-262143")
            let status = try await files.send(.put, path, headers: TestServer.admin.adding([.contentRange: "bytes */*"]))
            #expect(status.status.code == 308)
            #expect(status.headers[.range] == "bytes=0-262143")
            // A GET or HEAD of the session's URL, even with a finalizing range, neither appends nor finalizes.
            for method: HTTPRequest.Method in [.get, .head] {
                let read = try await files.send(method, path, headers: TestServer.admin.adding([.contentRange: "bytes */262144"]))
                #expect(read.status == .methodNotAllowed, "\(method)")
            }
            #expect(try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o/r%2Fbig.bin").status == .notFound)
            let last = try await files.send(.put, path, body: Array(data[262_144...]), headers: TestServer.admin.adding([.contentRange: "bytes 262144-599999/600000"]))
            #expect(last.status == .ok, "\(last.body)")
            #expect(last.json?["size"] == .string("600000"))
            #expect(try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/r%2Fbig.bin?alt=media", headers: TestServer.admin).bytes == data)
        }
    }

    /// Bounds past what a size can be are a 400, not a crash; a finalizing chunk shorter than its
    /// `Content-Range` says is refused and makes no object.
    @Test func contentRangesThatCannotBeAreRefused() async throws {
        try await FilesTestServer().run { files async throws in
            let start = try await files.send(
                .post, "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=resumable", body: Array(#"{"name":"r/short.bin"}"#.utf8),
                headers: TestServer.admin.adding([.contentType: "application/json"])
            )
            let location = try #require(start.headers[.location])
            let path = String(location[try #require(location.range(of: "/upload/"))!.lowerBound...])
            for range in ["bytes 0-9223372036854775807/1", "bytes 5-2/10", "bytes -1-3/10", "bytes 0-10/10", "bytes 0-3/-1"] {
                let reply = try await files.send(.put, path, body: Array(repeating: 1, count: 4), headers: TestServer.admin.adding([.contentRange: range]))
                #expect(reply.status == .badRequest, "\(range): \(reply.status)")
            }
            let short = try await files.send(.put, path, body: Array(repeating: 7, count: 50), headers: TestServer.admin.adding([.contentRange: "bytes 0-99/100"]))
            #expect(short.status == .badRequest, "\(short.body)")
            #expect(try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o/r%2Fshort.bin", headers: TestServer.admin).status == .notFound)
        }
    }

    @Test func theAdminAPINeedsTheAdminSecretOutsideEmulatorMode() async throws {
        try await FilesTestServer().run { files async throws in
            let anonymous = try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o", headers: [:])
            #expect(anonymous.status == .unauthorized)
            let user = try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o", headers: try files.user("ada"))
            #expect(user.status == .unauthorized)
            let buckets = try await files.send(.get, "/storage/v1/b?project=demo-files")
            #expect(buckets.json?["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["demo-files.appspot.com", "demo-files.firebasestorage.app"])
            let created = try await files.send(.post, "/storage/v1/b?project=demo-files", body: Array(#"{"name":"extra-bucket"}"#.utf8))
            #expect(created.json?["name"] == .string("extra-bucket"))
            #expect(try await files.send(.post, "/storage/v1/b?project=demo-files", body: Array(#"{"name":"extra-bucket"}"#.utf8)).status == .conflict)
            #expect(try await files.send(.delete, "/storage/v1/b/extra-bucket").status == .noContent)
        }
        try await FilesTestServer(emulator: true).run { files async throws in
            #expect(try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o", headers: [:]).status == .ok)
            // Asking whether a bucket exists does not create it, even in emulator mode (bucket.exists()).
            #expect(try await files.send(.get, "/storage/v1/b/non.existing", headers: [:]).status == .notFound)
            #expect(try await files.send(.get, "/storage/v1/b/\(Self.bucket)", headers: [:]).status == .ok)
        }
    }

    @Test func objectsSurviveARestartAndCrashLeftoversAreSwept() async throws {
        let server = FilesTestServer()
        defer { server.remove() }
        try await server.run(keep: true) { files async throws in
            #expect(try await files.upload("keep/a.txt", Array("durable".utf8)).status == .ok)
            #expect(try await files.upload("keep/a.txt", Array("replaced".utf8)).status == .ok)
        }
        // What a crash mid-upload leaves: a blob no row names (half written or whole), and the temporary
        // file earlier versions wrote first.
        let root = server.directory.appendingPathComponent("files")
        try Data("half".utf8).write(to: root.appendingPathComponent("tmp/leftover"))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("blobs/zz"), withIntermediateDirectories: true)
        try Data("orphan".utf8).write(to: root.appendingPathComponent("blobs/zz/zzorphan"))
        try await server.run(keep: true) { files async throws in
            let download = try await files.bytes(FilesClient.objectPath("keep/a.txt") + "?alt=media", headers: TestServer.admin)
            #expect(String(decoding: download.bytes, as: UTF8.self) == "replaced")
        }
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("tmp/leftover").path))
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("blobs/zz/zzorphan").path))
        // Exactly one blob remains: the replaced version's was deleted.
        let blobs = try FileManager.default.subpathsOfDirectory(atPath: root.appendingPathComponent("blobs").path).filter { $0.contains("/") }
        #expect(blobs.count == 1, "\(blobs)")
    }
}
