import HearthCore
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

/// HEAD on the database's REST URLs answers as the GET would (RFC 9110): the same status, headers and
/// length, no body, the rules deciding as for a GET; it never opens an event stream and changes nothing.
/// Both in process and on a real socket. `/h.json` takes the catch-all's shortcut (the `PUT` taught it
/// `h`); `/secret.json` and `/missing.json`, asked first with a HEAD, go through the router's HEAD route.
@Suite struct HeadRequestTests {
    @Test(arguments: [false, true]) func headAnswersAsGetWithoutTheBody(live: Bool) async throws {
        let server = TestServer()
        let test: @Sendable (any TestClientProtocol) async throws -> Void = { client in
            try await client.call(.put, "/h.json", #"{"name":"Ada","born":1815}"#)
            try await client.call(.put, "/.settings/rules.json", #"{"rules":{"h":{".read":true},"secret":{".read":false}}}"#)
            for _ in 0..<2 {
                let get = try await client.call(.get, "/h.json")
                let head = try await client.call(.head, "/h.json")
                #expect(head.status == .ok && head.body.isEmpty)
                #expect(head.headers[.contentLength] == String(get.body.utf8.count) && !get.body.isEmpty)
                #expect(head.headers[.contentType] == get.headers[.contentType] && head.headers[.contentType] != nil)
            }
            // The rules decide as for a GET: anyone may ask about `h`, nobody but the admin about `secret`.
            #expect(try await client.call(.head, "/h.json", headers: [:]).status == .ok)
            let refused = try await client.call(.head, "/secret.json", headers: [:])
            #expect(refused.status == (try await client.call(.get, "/secret.json", headers: [:])).status)
            #expect(refused.status == .unauthorized && refused.body.isEmpty)
            // ETags and conditional requests as for a GET, the ETag exposed to a browser's script.
            let etag = try #require(try await client.call(.head, "/h.json", headers: .admin([RESTController.firebaseETag: "true"])).etag)
            #expect(etag == (try await client.call(.get, "/h.json", headers: .admin([RESTController.firebaseETag: "true"]))).etag)
            #expect(try await client.call(.head, "/h.json", headers: .admin([.ifNoneMatch: etag])).status == .notModified)
            // Asked as an event stream, it answers as the plain GET: a HEAD's answer ends with its headers.
            let stream = try await client.call(.head, "/h.json", headers: .admin([.accept: "text/event-stream"]))
            #expect(stream.status == .ok && stream.body.isEmpty)
            #expect(stream.headers[.contentType] == "application/json; charset=utf-8")
            // A query, as for a GET; a missing location is null, 4 bytes.
            #expect(try await client.call(.head, "/h.json?orderBy=%22%24key%22&limitToFirst=1").status == .ok)
            #expect(try await client.call(.head, "/missing.json").headers[.contentLength] == "4")
            // Nothing changed.
            #expect(try await client.call(.get, "/h.json").body == #"{"born":1815,"name":"Ada"}"#)
        }
        if live {
            try await server.runLive { client, _, _ async throws in try await test(client) }
        } else {
            try await server.run { client, _ async throws in try await test(client) }
        }
    }

    /// A browser's script reads a cross-origin answer's ETag only when the answer exposes it: every
    /// answer with an ETag does (a read asked for one, a conditional write, a failed precondition).
    @Test func answersWithAnETagExposeIt() async throws {
        try await TestServer().run { client, _ async throws in
            let plain = try await client.call(.put, "/x.json", "1")
            #expect(plain.headers[.accessControlExposeHeaders] == nil)
            let read = try await client.call(.get, "/x.json", headers: .admin([RESTController.firebaseETag: "true"]))
            #expect(read.headers[.accessControlExposeHeaders] == "ETag" && read.etag != nil)
            let failed = try await client.call(.put, "/x.json", "2", headers: .admin([.ifMatch: "stale"]))
            #expect(failed.status == .preconditionFailed && failed.headers[.accessControlExposeHeaders] == "ETag")
            let written = try await client.call(.put, "/x.json", "2", headers: .admin([.ifMatch: try #require(read.etag)]))
            #expect(written.status == .ok && written.headers[.accessControlExposeHeaders] == "ETag")
        }
    }
}
