import Foundation
import Hearth
import HearthTestSupport
import Testing

/// The Posts app's model: a post and its copy under the author, written together.
struct QuickstartPost: DatabaseModel, Equatable {
    var identifier: String?
    var uid: String
    var title: String
    var starCount = 0

    var endpoint: String { "posts" }
    var secondaryEndpoints: [String] { ["user-posts/\(uid)"] }
}

/// A model whose endpoints overlap, which no atomic update can write.
struct Overlapping: DatabaseModel {
    var identifier: String?
    var endpoint: String { "a" }
    var secondaryEndpoints: [String] { ["a"] }
}

/// `DatabaseModel` and typed reads against a live server, checked through the server's REST API.
@Suite struct DatabaseModelTests {
    @Test func saveNewAssignsAPushIDAndWritesEveryEndpoint() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            var post = QuickstartPost(uid: "ada", title: "Hello")
            try await post.save(in: database)
            let id = try #require(post.identifier)
            #expect(id.count == 20)
            for path in ["posts/\(id)", "user-posts/ada/\(id)"] {
                // Exactly the model's fields: the identifier is the key, not a field.
                let stored = try #require(try await server.value(at: path) as? [String: Any])
                #expect(Set(stored.keys) == ["uid", "title", "starCount"])
                #expect(stored["uid"] as? String == "ada")
                #expect(stored["title"] as? String == "Hello")
                #expect(stored["starCount"] as? Int == 0)
            }

            // Read back by another client: the identifier comes from the key.
            let read = try await server.connectedClient().reference(withPath: "posts/\(id)").getData().decoded(as: QuickstartPost.self)
            #expect(read == post)
            #expect(try QuickstartPost(snapshot: try await database.reference(withPath: "user-posts/ada/\(id)").getData()) == post)
        }
    }

    @Test func savingAnExistingModelMergesAndKeepsFieldsItDoesNotKnow() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            var post = QuickstartPost(uid: "ada", title: "Hello")
            try await post.save(in: database)
            let id = try #require(post.identifier)
            // Another client adds what the model does not know about, in both copies.
            try await server.client().reference().updateChildValues(["posts/\(id)/stars/grace": true, "user-posts/ada/\(id)/stars/grace": true])

            post.title = "Hello, world"
            post.starCount = 1
            try await post.save(in: database)
            #expect(post.identifier == id)
            for path in ["posts/\(id)", "user-posts/ada/\(id)"] {
                let stored = try await server.value(at: path) as? [String: Any]
                #expect(stored?["title"] as? String == "Hello, world")
                #expect(stored?["starCount"] as? Int == 1)
                #expect(stored?["stars"] as? [String: Bool] == ["grace": true])
                #expect(stored?["identifier"] == nil)
            }
        }
    }

    @Test func deleteRemovesEveryCopyAndNeedsAnIdentifier() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            var post = QuickstartPost(uid: "ada", title: "Hello")
            await #expect(throws: DatabaseError(.invalidData, "QuickstartPost has no identifier: it was never saved")) { try await post.delete(in: database) }
            try await post.save(in: database)
            try await post.delete(in: database)
            #expect(try await server.json(at: "posts") == "null")
            #expect(try await server.json(at: "user-posts") == "null")
            await #expect(throws: DatabaseError.self) { var model = Overlapping(); try await model.save(in: database) }
        }
    }

    @Test func aRulesDenialOnOneEndpointLeavesEveryEndpointUnchanged() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            var saved = QuickstartPost(uid: "ada", title: "Before")
            try await saved.save(in: database)
            let id = try #require(saved.identifier)
            let before = try await server.json(at: "/")
            try await server.setRules(#"{"rules": {".read": true, "posts": {".write": true}, "user-posts": {".write": false}}}"#)

            func denied(_ write: () async throws -> Void) async -> Bool {
                do { try await write(); return false } catch { return (error as? DatabaseError)?.code == .permissionDenied }
            }
            var fresh = QuickstartPost(uid: "ada", title: "New")
            #expect(await denied { try await fresh.save(in: database) })
            #expect(fresh.identifier == nil)
            saved.title = "After"
            #expect(await denied { try await saved.save(in: database) })
            #expect(await denied { try await saved.delete(in: database) })

            // The server holds exactly what it held, and so does the client once it rolled back.
            #expect(try await server.json(at: "/") == before)
            let local = try await database.reference(withPath: "posts/\(id)").getData().decoded(as: QuickstartPost.self)
            #expect(local.title == "Before")
            #expect(try await database.reference(withPath: "posts").getData().childrenCount == 1)
        }
    }

    @Test func typedReadsKeepTheQueryOrderAndReportEachChildThatDoesNotDecode() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            try await database.reference(withPath: "posts").setValue([
                "a": ["uid": "ada", "title": "Three", "starCount": 3],
                "b": ["uid": "ada", "title": "One", "starCount": 1],
                "c": ["uid": "ada", "starCount": 2],
                "d": ["uid": "ada", "title": "Five", "starCount": "five"],
            ])
            let byStars = database.reference(withPath: "posts").queryOrdered(byChild: "starCount")
            let result = try await byStars.getDecodedChildren(as: QuickstartPost.self)
            #expect(result.keys == ["b", "a"])
            #expect(result.values.map(\.title) == ["One", "Three"])
            #expect(result.values.map(\.identifier) == ["b", "a"])
            #expect(result.failures == [
                SnapshotDecodingError(.invalidData, path: "/posts/c", reason: "missing key 'title' at the top level"),
                SnapshotDecodingError(.invalidData, path: "/posts/d", reason: "expected Int at starCount"),
            ])
            #expect(result.failures.map(\.key) == ["c", "d"])
            // Descriptions name the place, never the data.
            #expect(!result.failures.map(\.description).joined().contains("five"))

            // The live sequence delivers the same, then follows changes.
            var updates = byStars.decodedChildren(as: QuickstartPost.self).makeAsyncIterator()
            #expect(try await updates.next() == result)
            try await database.reference(withPath: "posts/d/starCount").setValue(0)
            let fixed = try #require(try await updates.next())
            #expect(fixed.keys == ["d", "b", "a"])
            #expect(fixed.failures.map(\.key) == ["c"])

            // One location: no data is its own code.
            let missing = try await database.reference(withPath: "posts/zzz").getData()
            #expect(throws: SnapshotDecodingError(.noData, path: "/posts/zzz", reason: "nothing is stored here")) {
                _ = try missing.decoded(as: QuickstartPost.self)
            }
            #expect(try missing.decoded(as: QuickstartPost?.self) == nil)
        }
    }
}
