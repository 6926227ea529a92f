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

    /// A priority's location (`…/.priority.json`) has the priority's ETag, and its writes honour
    /// `if-match` as any location's.
    @Test func aPrioritysLocationHasItsETagAndHonoursIfMatch() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/p.json", #"{".value":1,".priority":5}"#)
            let read = try await client.call(.get, "/p/.priority.json", headers: Self.wantETag)
            #expect(read.body == "5")
            #expect(read.etag == Node.leaf(.number(5)).hash)
            #expect(try await client.call(.get, "/p/.priority.json", headers: .admin([.ifNoneMatch: Node.leaf(.number(5)).hash])).status == .notModified)
            let stale = try await client.call(.put, "/p/.priority.json", "6", headers: .admin([.ifMatch: "stale"]))
            #expect(stale.status == .preconditionFailed)
            #expect(stale.body == "5")
            #expect(stale.etag == Node.leaf(.number(5)).hash)
            let matched = try await client.call(.put, "/p/.priority.json", "6", headers: .admin([.ifMatch: Node.leaf(.number(5)).hash]))
            #expect(matched.status == .ok)
            #expect(matched.etag == Node.leaf(.number(6)).hash)
            #expect(try await client.call(.get, "/p.json?format=export").body == #"{".value":1,".priority":6}"#)
            // No priority: the empty value's ETag.
            #expect(try await client.call(.get, "/q/.priority.json", headers: Self.wantETag).etag == "null_etag")
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

    /// Issue 25, finding 1: the rules come before the precondition, and a 412 carries the current value
    /// (and its ETag) only to a client that may read it.
    @Test func conditionalWritesTellNothingPastTheRules() async throws {
        try await TestServer().run { client, _ async throws in
            let rules = #"""
                {"rules": {
                  "vault": {"$uid": {".read": "auth.uid === $uid", ".write": "auth.uid === $uid"}},
                  "dropbox": {"$uid": {".write": "auth.uid === $uid"}},
                  "counter": {".read": true, ".write": "newData.val() === (data.exists() ? data.val() + 1 : 1)"}
                }}
                """#
            #expect(try await client.call(.put, "/.settings/rules.json", rules).status == .ok)
            try await client.call(.put, "/vault/ada.json", #""s3cr3t""#)
            try await client.call(.put, "/dropbox/bob.json", #""private""#)
            let ada = RulesEnforcementTests.asUser("ada")
            let bob = RulesEnforcementTests.asUser("bob")
            // No credentials, the whole database: the refusal, not a 412 with everything in it.
            var reply = try await client.call(.put, "/.json", "1", headers: [.ifMatch: "x"])
            #expect(reply.status == .unauthorized)
            #expect(!reply.body.contains("s3cr3t") && reply.etag == nil)
            // Another user's node, with a wrong and with the right ETag: the same refusal.
            let rightETag = Node.leaf(.string("s3cr3t")).hash
            for etag in ["wrong", rightETag] {
                for method in [HTTPRequest.Method.put, .delete] {
                    reply = try await client.call(method, "/vault/ada.json?\(bob)", method == .put ? "1" : nil, headers: .admin([.ifMatch: etag]))
                    #expect(reply.status == .unauthorized, "\(method) with \(etag)")
                    #expect(reply.error == "Permission denied")
                    #expect(!reply.body.contains("s3cr3t") && reply.etag == nil)
                }
            }
            // The owner, who may read: the 412 with the current value and its ETag (transactions rely on it).
            reply = try await client.call(.put, "/vault/ada.json?\(ada)", #""new""#, headers: .admin([.ifMatch: "wrong"]))
            #expect(reply.status == .preconditionFailed)
            #expect(reply.body == #""s3cr3t""#)
            #expect(reply.etag == rightETag)
            // A node its writer may not read: the refusal, with a wrong and with the right ETag (a 412 against
            // a 200 would tell it whether it guessed the hidden value), and nothing written.
            for etag in ["wrong", Node.leaf(.string("private")).hash] {
                reply = try await client.call(.put, "/dropbox/bob.json?\(bob)", #""private""#, headers: .admin([.ifMatch: etag]))
                #expect(reply.status == .unauthorized, "with \(etag)")
                #expect(reply.error == "Permission denied")
                #expect(!reply.body.contains("private") && reply.etag == nil)
            }
            #expect(try await client.call(.get, "/dropbox/bob.json").body == #""private""#)
            // An update's ETag hashes the whole location: not for a writer that may not read it.
            reply = try await client.call(.patch, "/dropbox/bob.json?\(bob)", #"{"note":"x"}"#, headers: .admin([RESTController.firebaseETag: "true"]))
            #expect(reply.status == .ok)
            #expect(reply.etag == nil)
            // A reader's stale compare-and-set that the rules would refuse on the current data still gets
            // the 412 and the current value, so it retries from there (as transactions do).
            try await client.call(.put, "/counter.json", "5")
            let stale = Node.leaf(.number(4)).hash
            reply = try await client.call(.put, "/counter.json?\(ada)", "5", headers: .admin([.ifMatch: stale]))
            #expect(reply.status == .preconditionFailed)
            #expect(reply.body == "5")
            reply = try await client.call(.put, "/counter.json?\(ada)", "6", headers: .admin([.ifMatch: try #require(reply.etag)]))
            #expect(reply.status == .ok)
        }
    }
}
