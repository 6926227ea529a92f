import HearthCore
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

@Suite struct ETagTests {
    static let wantETag = HTTPFields.admin([RESTController.firebaseETag: "true"])

    @Test func etagsFollowTheData() async throws {
        try await TestServer().run { client, _ async throws in
            var reply = try await client.call(.get, "/e.json", headers: Self.wantETag)
            #expect(reply.etag == "null_etag")
            reply = try await client.call(.put, "/e.json", "10", headers: Self.wantETag)
            #expect(reply.etag == Node.leaf(.number(10)).hash)
            let etag = try #require(reply.etag)
            reply = try await client.call(.get, "/e.json", headers: .admin([.ifNoneMatch: etag]))
            #expect(reply.status == .notModified)
            #expect(reply.body.isEmpty)
            reply = try await client.call(.get, "/e.json", headers: .admin([.ifNoneMatch: "other"]))
            #expect(reply.status == .ok)
            #expect(reply.etag == etag)
            reply = try await client.call(.post, "/list.json", #""x""#, headers: Self.wantETag)
            #expect(reply.etag == Node.leaf(.string("x")).hash)
            reply = try await client.call(.delete, "/e.json", headers: Self.wantETag)
            #expect(reply.etag == "null_etag")
        }
    }

    @Test func ifMatchIsACompareAndSet() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/c.json", #"{"v":1}"#)
            let etag = try #require(try await client.call(.get, "/c.json", headers: Self.wantETag).etag)
            var reply = try await client.call(.put, "/c.json", #"{"v":2}"#, headers: .admin([.ifMatch: "stale"]))
            #expect(reply.status == .preconditionFailed)
            #expect(reply.body == #"{"v":1}"#)
            #expect(reply.etag == etag)
            reply = try await client.call(.put, "/c.json", #"{"v":2}"#, headers: .admin([.ifMatch: etag]))
            #expect(reply.status == .ok)
            #expect(reply.etag != nil && reply.etag != etag)
            // null_etag: create only if absent.
            #expect(try await client.call(.put, "/c.json", "3", headers: .admin([.ifMatch: "null_etag"])).status == .preconditionFailed)
            #expect(try await client.call(.put, "/new.json", "3", headers: .admin([.ifMatch: "null_etag"])).status == .ok)
            // DELETE with if-match.
            #expect(try await client.call(.delete, "/new.json", headers: .admin([.ifMatch: "bogus"])).status == .preconditionFailed)
            #expect(try await client.call(.get, "/new.json").body == "3")
        }
    }
}
