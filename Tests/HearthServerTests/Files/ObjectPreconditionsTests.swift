import Foundation
import HearthCore
@testable import HearthFiles
import HearthStorage
import HTTPTypes
import Testing

/// Cloud Storage's generation and metageneration conditions (`ifGenerationMatch=0` and the rest):
/// what they decide, and that the change they guard happens only while they hold.
@Suite struct ObjectPreconditionsTests {
    static let bucket = FilesTestServer.bucket

    static func object(generation: Int64, metageneration: Int64) -> StoredObject {
        StoredObject(
            bucket: bucket, name: "a", blob: "b", size: 1, md5Hash: "", crc32c: 0, generation: generation, metageneration: metageneration, time: 0
        )
    }

    @Test func conditionsDecideOnTheVersionThere() {
        let there = Self.object(generation: 7, metageneration: 2)
        typealias P = ObjectPreconditions
        // (conditions, object there, as a read, expected)
        let cases: [(P, StoredObject?, Bool, P.Failure?)] = [
            (P(), there, false, nil),
            (P(generationMatch: 0), nil, false, nil),
            (P(generationMatch: 0), there, false, .notMet),
            (P(generationMatch: 7), there, false, nil),
            (P(generationMatch: 8), there, false, .notMet),
            (P(generationMatch: 7), nil, false, .notMet),
            (P(generationNotMatch: 0), nil, false, .notMet),
            (P(generationNotMatch: 5), nil, false, .notMet),
            (P(generationNotMatch: 0), there, false, nil),
            (P(generationNotMatch: 7), there, false, .notMet),
            (P(generationNotMatch: 7), there, true, .notModified),
            (P(generationNotMatch: 8), there, true, nil),
            (P(metagenerationMatch: 2), there, false, nil),
            (P(metagenerationMatch: 1), there, false, .notMet),
            (P(metagenerationMatch: 1), nil, false, .notMet),
            (P(metagenerationNotMatch: 2), there, true, .notModified),
            (P(metagenerationNotMatch: 2), nil, false, .notMet),
            (P(generationMatch: 7, metagenerationMatch: 1), there, false, .notMet),
            (P(generation: 7), there, false, nil),
            (P(generation: 6), there, false, .noSuchVersion),
            (P(generation: 6), there, true, .noSuchVersion),
        ]
        for (conditions, object, isRead, expected) in cases {
            #expect(conditions.evaluate(object, isRead: isRead) == expected, "\(conditions) on \(object.map { "\($0.generation)/\($0.metageneration)" } ?? "none")")
        }
    }

    @Test func conditionsComeFromTheQuery() throws {
        let query = ["ifGenerationMatch": "0", "ifMetagenerationNotMatch": "3", "ifSourceGenerationMatch": "12", "sourceGeneration": "12"]
        #expect(try ObjectPreconditions(query: query) == ObjectPreconditions(generationMatch: 0, metagenerationNotMatch: 3))
        #expect(try ObjectPreconditions(query: query, source: true) == ObjectPreconditions(generationMatch: 12, generation: 12))
        #expect(throws: FilesError.self) { try ObjectPreconditions(query: ["ifGenerationMatch": "soon"]) }
        #expect(throws: FilesError.self) { try ObjectPreconditions(query: ["generation": "-1"]) }
    }

    static func media(_ files: FilesClient, _ name: String, _ text: String, query: String = "") async throws -> Reply {
        try await files.send(
            .post, "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=\(PercentEncoding.component(name))\(query)", body: Array(text.utf8),
            headers: TestServer.admin.adding([.contentType: "text/plain"])
        )
    }

    static func objectPath(_ name: String) -> String { "/storage/v1/b/\(bucket)/o/\(PercentEncoding.component(name))" }

    @Test func aCreateOnlyUploadNeverOverwrites() async throws {
        try await FilesTestServer().run { files async throws in
            let first = try await Self.media(files, "locks/a", "first", query: "&ifGenerationMatch=0")
            #expect(first.status == .ok, "\(first.body)")
            let second = try await Self.media(files, "locks/a", "second", query: "&ifGenerationMatch=0")
            #expect(second.status.code == 412, "\(second.body)")
            #expect(second.json?["error"]?["errors"]?.arrayValue?.first?["reason"] == .string("conditionNotMet"))
            // A multipart upload and a resumable start are held to it too.
            let boundary = "b0"
            let multipart = Array("--\(boundary)\r\ncontent-type: application/json\r\n\r\n{\"name\": \"locks/a\"}\r\n--\(boundary)\r\ncontent-type: text/plain\r\n\r\nthird\r\n--\(boundary)--\r\n".utf8)
            let third = try await files.send(
                .post, "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=multipart&ifGenerationMatch=0", body: multipart,
                headers: TestServer.admin.adding([.contentType: "multipart/related; boundary=\(boundary)"])
            )
            #expect(third.status.code == 412, "\(third.body)")
            let resumable = try await files.send(
                .post, "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=resumable&ifGenerationMatch=0", body: Array(#"{"name":"locks/a"}"#.utf8),
                headers: TestServer.admin.adding([.contentType: "application/json"])
            )
            #expect(resumable.status.code == 412, "\(resumable.body)")
            let bytes = try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/locks%2Fa?alt=media")
            #expect(String(decoding: bytes.bytes, as: UTF8.self) == "first")
            // Replacing the version one has read works; replacing a version one has not is refused.
            let generation = try #require(first.json?["generation"]?.stringValue)
            #expect(try await Self.media(files, "locks/a", "fourth", query: "&ifGenerationMatch=\(generation)").status == .ok)
            #expect(try await Self.media(files, "locks/a", "fifth", query: "&ifGenerationMatch=\(generation)").status.code == 412)
            #expect(try await Self.media(files, "locks/a", "x", query: "&ifGenerationMatch=soon").status == .badRequest)
        }
    }

    @Test func racingCreateOnlyUploadsCreateOnce() async throws {
        try await FilesTestServer().run { files async throws in
            let replies = try await withThrowingTaskGroup(of: (Int, Reply).self) { group in
                for index in 0..<16 {
                    group.addTask { (index, try await Self.media(files, "locks/race", "writer \(index)", query: "&ifGenerationMatch=0")) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let winners = replies.filter { $0.1.status == .ok }
            #expect(winners.count == 1, "\(replies.map { $0.1.status.code })")
            #expect(replies.filter { $0.1.status.code == 412 }.count == 15)
            let stored = try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/locks%2Frace?alt=media")
            #expect(String(decoding: stored.bytes, as: UTF8.self) == "writer \(try #require(winners.first).0)")
        }
    }

    @Test func readsAnswerNotModifiedOrConditionNotMet() async throws {
        try await FilesTestServer().run { files async throws in
            let uploaded = try await Self.media(files, "r/a.txt", "hello")
            let generation = try #require(uploaded.json?["generation"]?.stringValue)
            let path = Self.objectPath("r/a.txt")
            #expect(try await files.send(.get, path + "?ifGenerationMatch=\(generation)").status == .ok)
            let unchanged = try await files.send(.get, path + "?ifGenerationNotMatch=\(generation)")
            #expect(unchanged.status == .notModified)
            #expect(unchanged.body.isEmpty)
            #expect(try await files.send(.get, path + "?alt=media&ifMetagenerationNotMatch=1").status == .notModified)
            #expect(try await files.send(.get, path + "?ifGenerationMatch=1").status.code == 412)
            #expect(try await files.send(.get, path + "?generation=\(generation)").status == .ok)
            #expect(try await files.send(.get, path + "?generation=1").status == .notFound)
            #expect(try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/r%2Fa.txt?alt=media&generation=1").status == .notFound)
            #expect(try await files.send(.get, Self.objectPath("r/none") + "?ifGenerationMatch=0").status == .notFound)
        }
    }

    @Test func metadataChangesAndDeletesHoldToTheirConditions() async throws {
        try await FilesTestServer().run { files async throws in
            let uploaded = try await Self.media(files, "m/a.txt", "hello")
            let generation = try #require(uploaded.json?["generation"]?.stringValue)
            let path = Self.objectPath("m/a.txt")
            let body = Array(#"{"metadata":{"k":"v"}}"#.utf8)
            #expect(try await files.send(.patch, path + "?ifMetagenerationMatch=2", body: body).status.code == 412)
            let patched = try await files.send(.patch, path + "?ifMetagenerationMatch=1", body: body)
            #expect(patched.status == .ok)
            #expect(patched.json?["metageneration"] == .string("2"))
            #expect(try await files.send(.patch, path + "?ifMetagenerationMatch=1", body: body).status.code == 412)
            #expect(try await files.send(.patch, path + "?generation=1", body: body).status == .notFound)
            #expect(try await files.send(.delete, path + "?ifGenerationMatch=1").status.code == 412)
            #expect(try await files.send(.delete, path + "?ifMetagenerationMatch=1").status.code == 412)
            #expect(try await files.send(.delete, path + "?generation=1").status == .notFound)
            #expect(try await files.send(.get, path).status == .ok)
            #expect(try await files.send(.delete, path + "?ifGenerationMatch=\(generation)&ifMetagenerationMatch=2").status == .noContent)
            #expect(try await files.send(.get, path).status == .notFound)
        }
    }

    @Test func aResumableUploadChecksItsConditionsWhenItFinishes() async throws {
        try await FilesTestServer().run { files async throws in
            let start = try await files.send(
                .post, "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=resumable&ifGenerationMatch=0", body: Array(#"{"name":"u/late"}"#.utf8),
                headers: TestServer.admin.adding([.contentType: "application/json"])
            )
            #expect(start.status == .ok, "\(start.body)")
            let location = try #require(start.headers[.location])
            let path = String(location[try #require(location.range(of: "/upload/"))!.lowerBound...])
            // Someone else creates the object while the upload is under way.
            #expect(try await Self.media(files, "u/late", "the other").status == .ok)
            let last = try await files.send(.put, path, body: Array("mine".utf8), headers: TestServer.admin.adding([.contentRange: "bytes 0-3/4"]))
            #expect(last.status.code == 412, "\(last.body)")
            let stored = try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/u%2Flate?alt=media")
            #expect(String(decoding: stored.bytes, as: UTF8.self) == "the other")
        }
    }

    @Test func copiesHoldToTheirSourceAndTargetConditions() async throws {
        try await FilesTestServer().run { files async throws in
            let source = try await Self.media(files, "c/source", "source")
            let sourceGeneration = try #require(source.json?["generation"]?.stringValue)
            #expect(try await Self.media(files, "c/target", "target").status == .ok)
            let copy = "/storage/v1/b/\(Self.bucket)/o/c%2Fsource/copyTo/b/\(Self.bucket)/o/c%2Ftarget"
            #expect(try await files.send(.post, copy + "?ifGenerationMatch=0").status.code == 412)
            #expect(try await files.send(.post, copy + "?ifSourceGenerationMatch=1").status.code == 412)
            #expect(try await files.send(.post, copy + "?sourceGeneration=1").status == .notFound)
            let target = try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/c%2Ftarget?alt=media")
            #expect(String(decoding: target.bytes, as: UTF8.self) == "target")
            let fresh = "/storage/v1/b/\(Self.bucket)/o/c%2Fsource/rewriteTo/b/\(Self.bucket)/o/c%2Ffresh"
            #expect(try await files.send(.post, fresh + "?ifGenerationMatch=0&ifSourceGenerationMatch=\(sourceGeneration)").status == .ok)
            let copied = try await files.bytes("/download/storage/v1/b/\(Self.bucket)/o/c%2Ffresh?alt=media")
            #expect(String(decoding: copied.bytes, as: UTF8.self) == "source")
            // No blob of a refused copy stays behind: the listing's objects are the three.
            let listing = try await files.send(.get, "/storage/v1/b/\(Self.bucket)/o?prefix=c%2F")
            #expect(listing.json?["items"]?.arrayValue?.count == 3)
        }
    }
}
