import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hearth
import HearthTestSupport
import Testing
import TimelineCore

/// Posts, photos, the timeline, likes and comments against a live server on loopback with the
/// app's database and storage rules, with two (or three) apps at once for the live behaviour.
@MainActor
@Suite struct TimelinePostTests {
    @Test func shareAPhotoWithACaptionThenDeleteIt() async throws {
        try await TestServer.run { server in
            let (app, ada) = try await server.signedUp("ada")
            let draft = NewPostController(posts: app.posts, author: ada)
            #expect(await draft.share() == nil)
            #expect(draft.errorMessage == "Pick a photo.")
            draft.pick(Data("not a picture".utf8), contentType: "text/plain", fileExtension: "txt")
            #expect(await draft.share() == nil)
            #expect(draft.errorMessage == "Not shared: That file is not an image.")

            draft.pick(Photo.png, contentType: "image/png", fileExtension: "png")
            draft.caption = "  Sunrise over the engine  "
            let post = try #require(await draft.share())
            #expect(draft.progress == 1 && draft.photo == nil && draft.caption.isEmpty)

            // The web app's shape: upload first, then the post pointing at it.
            let id = post.id
            #expect(post.image == "timeline/\(ada.uid)/\(id).png")
            let stored = try #require(try await server.value(at: "posts/\(id)") as? [String: Any])
            #expect(Set(stored.keys) == ["uid", "username", "image", "imageURL", "caption"])
            #expect(stored["uid"] as? String == ada.uid && stored["username"] as? String == "ada")
            #expect(stored["image"] as? String == post.image && stored["caption"] as? String == "Sunrise over the engine")
            let imageURL = try #require(stored["imageURL"] as? String)
            #expect(imageURL.hasPrefix("http://127.0.0.1:\(server.port)/v0/b/timeline.appspot.com/o/timeline%2F\(ada.uid)%2F\(id).png?alt=media&token="))
            let (downloaded, _) = try await URLSession.shared.data(from: try #require(URL(string: imageURL)))
            #expect(downloaded == Photo.png)

            // Another signed-in person reads the photo through the SDK.
            let (bobApp, _) = try await server.signedUp("bob")
            #expect(try await bobApp.images.data(at: post.image) == Photo.png)
            // The post without a caption leaves it out.
            let plain = try await app.share("   ", as: ada)
            #expect(try await server.canonicalJSON(at: "posts/\(plain.id)").contains("caption") == false)

            // Deleting removes the post and its photo.
            try await app.posts.delete(post)
            #expect(try await server.canonicalJSON(at: "posts/\(id)") == "null")
            await #expect(throws: TimelineError.self) { _ = try await bobApp.images.data(at: post.image) }
            #expect(try await app.posts.post(id) == nil)
        }
    }

    @Test func theStorageRulesKeepPhotosToTheirOwner() async throws {
        try await TestServer.run { server in
            let (ada, adaUser) = try await server.signedUp("ada")
            let (bob, _) = try await server.signedUp("bob")
            let post = try await ada.share("Mine", as: adaUser)
            // Bob cannot put a photo in Ada's folder, nor delete hers.
            let intoAdas = bob.images.storage.reference(withPath: "timeline/\(adaUser.uid)/forged.png")
            await #expect(throws: StorageError.self) { _ = try await intoAdas.putDataAsync(Photo.png, metadata: Self.png) }
            await #expect(throws: StorageError.self) { try await bob.images.storage.reference(withPath: post.image).delete() }
            #expect(try await ada.images.data(at: post.image) == Photo.png)
            // Not even Ada can store something that is not an image.
            let text = StorageMetadata()
            text.contentType = "text/plain"
            let notAnImage = ada.images.storage.reference(withPath: "timeline/\(adaUser.uid)/notes.txt")
            await #expect(throws: StorageError.self) { _ = try await notAnImage.putDataAsync(Data("notes".utf8), metadata: text) }
            // Signed out, photos cannot be read.
            try ada.users.logOut()
            await #expect(throws: TimelineError.self) { _ = try await ada.images.data(at: post.image) }
        }
    }

    static var png: StorageMetadata {
        let metadata = StorageMetadata()
        metadata.contentType = "image/png"
        return metadata
    }

    @Test func theTimelineShowsFollowedPostsLiveNewestFirst() async throws {
        try await TestServer.run { server in
            let (adaApp, ada) = try await server.signedUp("ada")
            let (bobApp, bob) = try await server.signedUp("bob")
            let (cyApp, cy) = try await server.signedUp("cy")
            let adaFirst = try await adaApp.share("Ada 1", as: ada)
            let cyFirst = try await cyApp.share("Cy 1", as: cy)

            // Bob follows nobody yet: his timeline is his own posts (none).
            let timeline = TimelineController(posts: bobApp.posts, uid: bob.uid)
            timeline.start()
            await waitUntil("the empty timeline is loaded") { timeline.isEmpty }
            #expect(timeline.people == [bob.uid])

            // B follows A: A's posts appear.
            try await bobApp.users.follow(ada.uid)
            await waitUntil("Ada's post appears") { timeline.posts.map(\.id) == [adaFirst.id] }

            // A posts: B's timeline updates live, newest first.
            let adaSecond = try await adaApp.share("Ada 2", as: ada)
            await waitUntil("Ada's new post appears first") { timeline.posts.map(\.id) == [adaSecond.id, adaFirst.id] }

            // B's own posts and C's (once followed) merge in by time.
            let bobFirst = try await bobApp.share("Bob 1", as: bob)
            try await bobApp.users.follow(cy.uid)
            // Newest first is largest push id first. Each client makes its ids from its own clock
            // (corrected by the server's offset), so across clients the order is the ids', not the calls'.
            let expected = [bobFirst, adaSecond, cyFirst, adaFirst].map(\.id).sorted(by: >)
            #expect(expected.firstIndex(of: adaSecond.id)! < expected.firstIndex(of: adaFirst.id)!)
            await waitUntil("four posts, newest first") { timeline.posts.map(\.id) == expected }
            #expect(Set(timeline.people) == [bob.uid, ada.uid, cy.uid])

            // The one-time read (every person's posts fetched at once) agrees, and so does refresh.
            #expect(try await bobApp.posts.timeline().map(\.id) == expected)
            await timeline.refresh()
            #expect(timeline.posts.map(\.id) == expected)
            // Someone not followed is not in it.
            let (dotApp, dot) = try await server.signedUp("dot")
            _ = try await dotApp.share("Dot 1", as: dot)

            // A like and a comment from elsewhere show in the timeline's counts.
            try await cyApp.posts.like(adaSecond.id)
            _ = try await cyApp.posts.comment(on: adaSecond.id, text: "Lovely", as: cy)
            await waitUntil("the counts change") {
                timeline.posts.first { $0.id == adaSecond.id }.map { $0.likeCount == 1 && $0.commentCount == 1 } ?? false
            }
            #expect(timeline.posts.map(\.id) == expected)

            // A deletes a post: it leaves B's timeline. B unfollows C: C's posts leave too.
            try await adaApp.posts.delete(adaFirst)
            await waitUntil("the deleted post leaves") { timeline.posts.map(\.id) == expected.filter { $0 != adaFirst.id } }
            try await bobApp.users.unfollow(cy.uid)
            await waitUntil("C's posts leave") { timeline.posts.map(\.id) == [bobFirst, adaSecond].map(\.id).sorted(by: >) }
            timeline.stop()
        }
    }

    @Test func likesAndCommentsAreSeenAcrossClients() async throws {
        try await TestServer.run { server in
            let (adaApp, ada) = try await server.signedUp("ada")
            let (bobApp, bob) = try await server.signedUp("bob")
            let post = try await adaApp.share("Like me", as: ada)

            let adaDetail = PostDetailController(postID: post.id, viewer: ada, posts: adaApp.posts)
            let bobDetail = PostDetailController(postID: post.id, viewer: bob, posts: bobApp.posts)
            adaDetail.start()
            bobDetail.start()
            await waitUntil("both read the post") { adaDetail.post != nil && bobDetail.post != nil }
            #expect(adaDetail.canDelete && !bobDetail.canDelete)

            // Bob likes; Ada sees it. A double tap by Ada likes; a second double tap does not unlike.
            await bobDetail.toggleLike()
            await waitUntil("Ada sees Bob's like") { adaDetail.likeCount == 1 && !adaDetail.isLiked }
            await adaDetail.doubleTap()
            await adaDetail.doubleTap()
            await waitUntil("Bob sees two likes") { bobDetail.likeCount == 2 }
            #expect(try await server.value(at: "posts/\(post.id)/likes") as? [String: Bool] == [ada.uid: true, bob.uid: true])

            // Bob comments; Ada sees it; an empty comment is not sent.
            bobDetail.commentText = "  Lovely  "
            await bobDetail.sendComment()
            #expect(bobDetail.commentText.isEmpty && bobDetail.errorMessage == nil)
            await waitUntil("Ada sees Bob's comment") { adaDetail.comments.map(\.text) == ["Lovely"] }
            adaDetail.commentText = "Thank you"
            await adaDetail.sendComment()
            // Oldest first by push id (as the web app): across two clients that is their clocks' order.
            await waitUntil("Bob sees both comments") { Set(bobDetail.comments.map(\.text)) == ["Lovely", "Thank you"] }
            #expect(bobDetail.comments.map(\.id) == bobDetail.comments.map(\.id).sorted())
            bobDetail.commentText = "   "
            await bobDetail.sendComment()
            #expect(bobDetail.errorMessage == "Write a comment first.")
            let bobsComment = try #require(adaDetail.comments.first { $0.text == "Lovely" })
            #expect(bobsComment.username == "bob" && bobsComment.postID == post.id)
            #expect(!adaDetail.canDelete(bobsComment) && bobDetail.canDelete(bobsComment))
            let stored = try await server.canonicalJSON(at: "posts/\(post.id)/comments/\(bobsComment.id)")
            #expect(stored == #"{"text":"Lovely","uid":"\#(bob.uid)","username":"bob"}"#)

            // Ada cannot delete Bob's comment (the rules refuse); Bob can.
            await adaDetail.delete(bobsComment)
            #expect(adaDetail.errorMessage?.hasPrefix("Not allowed") == true)
            #expect(try await server.canonicalJSON(at: "posts/\(post.id)/comments/\(bobsComment.id)") != "null")
            await bobDetail.delete(bobsComment)
            await waitUntil("Ada sees the comment go") { adaDetail.comments.map(\.text) == ["Thank you"] }

            // Bob unlikes; Ada sees one like left.
            await bobDetail.toggleLike()
            await waitUntil("one like left") { adaDetail.likeCount == 1 && adaDetail.isLiked }

            // Bob cannot delete Ada's post; Ada can, and Bob's screen learns it is gone.
            await bobDetail.deletePost()
            #expect(bobDetail.errorMessage?.hasPrefix("Not allowed") == true)
            #expect(try await server.canonicalJSON(at: "posts/\(post.id)") != "null")
            await adaDetail.deletePost()
            #expect(adaDetail.isDeleted)
            await waitUntil("Bob's detail closes") { bobDetail.isDeleted }
            adaDetail.stop()
            bobDetail.stop()
        }
    }

    @Test func theRulesRefuseActingAsSomeoneElse() async throws {
        try await TestServer.run { server in
            let (adaApp, ada) = try await server.signedUp("ada")
            let (bobApp, bob) = try await server.signedUp("bob")
            let post = try await adaApp.share("Original", as: ada)
            let before = try await server.canonicalJSON(at: "posts/\(post.id)")
            let posts = bobApp.database.reference(withPath: "posts")

            // Editing someone else's post: through the model's save, and field by field.
            var edited = post
            edited.caption = "Edited by Bob"
            await #expect(throws: DatabaseError.self) { try await edited.save(in: bobApp.database) }
            await #expect(throws: DatabaseError.self) { _ = try await posts.child(post.id).child("caption").setValue("Edited") }
            // Deleting it.
            await #expect(throws: DatabaseError.self) { try await post.delete(in: bobApp.database) }
            // Liking as someone else (Bob writes Ada's like).
            await #expect(throws: DatabaseError.self) { _ = try await posts.child(post.id).child("likes").child(ada.uid).setValue(true) }
            // Commenting as someone else.
            var forged = TimelineComment(postID: post.id, uid: ada.uid, username: "ada", text: "Forged")
            await #expect(throws: DatabaseError.self) { try await forged.save(in: bobApp.database) }
            // Posting as someone else.
            var asAda = TimelinePost(uid: ada.uid, username: "ada", image: "timeline/\(ada.uid)/x.png")
            await #expect(throws: DatabaseError.self) { try await asAda.save(in: bobApp.database) }
            // A like that is not `true`.
            await #expect(throws: DatabaseError.self) { _ = try await posts.child(post.id).child("likes").child(bob.uid).setValue("yes") }
            #expect(try await server.canonicalJSON(at: "posts/\(post.id)") == before)
            #expect(try await server.canonicalJSON(at: "posts").contains("Forged") == false)

            // Bob's own like, through the controller, is accepted.
            try await bobApp.posts.like(post.id)
            #expect(try await server.canonicalJSON(at: "posts/\(post.id)/likes") == #"{"\#(bob.uid)":true}"#)
        }
    }
}
