import Foundation
import Hearth
import HearthStore
import HearthStoreTesting
import PostsCore
import HearthTestSupport
import Testing

/// The Posts core end to end: HearthStore's TestStore over a live server on loopback with the app's
/// real rules (the server installs them in the `posts` namespace). Every action the store
/// dispatches is asserted, in order, with its exact state change.
@MainActor
@Suite struct PostsStoreTests {
    static let password = "correct horse battery"

    /// A store on its own client, signed up as `username` (the profile written to `users/<uid>`).
    private func signedUp(_ server: TestServer, _ username: String) async throws -> (store: TestStore<PostsState>, uid: String) {
        let database = try server.client()
        let auth = Auth.auth(database: database)
        let store = TestStore(initialState: PostsState(), reducer: postsReducer, effects: postsEffects(database: database, auth: auth))
        let email = "\(username)@example.com"
        store.send(SignUpRequested(email: email, password: Self.password, username: username)) { $0.pendingUsername = username }
        let signedUp = await store.receive(UserSignedUp.self, where: { $0.email == email })
        let uid = try #require(signedUp?.userID)
        await store.receive(UserLoggedIn(userID: uid, email: email)) {
            $0.user = SignedInUser(uid: uid, email: email, username: username)
            $0.pendingUsername = nil
        }
        await store.receive(ObjectCreated<UserProfile>.self, where: { $0.key == uid && $0.object == UserProfile(username: username, email: email) })
        return (store, uid)
    }

    /// Publishes and returns the new post's id (no lists subscribed on this store).
    private func publish(_ store: TestStore<PostsState>, title: String, body: String) async throws -> Post {
        store.send(PublishRequested(title: title, body: body))
        let published = await store.receive(PostPublished.self, where: { $0.post.title == title })
        return try #require(published?.post)
    }

    @Test func signUpPublishListsLogOutAndLogIn() async throws {
        try await TestServer.run { server in
            let (store, uid) = try await signedUp(server, "ada")
            #expect(try await server.canonicalJSON(at: "users/\(uid)") == #"{"email":"ada@example.com","username":"ada"}"#)

            // A second client, signed in as someone else, follows the lists before the post exists.
            let (reader, _) = try await signedUp(server, "reader")
            reader.send(ListsRequested())
            await reader.receive(ObjectSubscribed<ListedPost<RecentList>>(isSubscribed: true)) { $0.recent.isSubscribed = true }
            await reader.receive(ObjectSubscribed<ListedPost<MyList>>(isSubscribed: true)) { $0.mine.isSubscribed = true }
            await reader.receive(ObjectSubscribed<ListedPost<TopList>>(isSubscribed: true)) { $0.top.isSubscribed = true }

            // Publish: both copies in one update; the reader's recent list gets it live.
            let published = try await publish(store, title: "Hello", body: "First post")
            let id = try #require(published.identifier)
            #expect(published == Post(identifier: id, uid: uid, author: "ada", title: "Hello", body: "First post"))
            var stored = published
            stored.identifier = nil  // the key, never a stored field
            await reader.receive(ObjectAdded(key: id, object: ListedPost<RecentList>(post: stored))) {
                $0.recent.objects[id] = ListedPost(post: stored)
            }
            #expect(reader.state.recentPosts == [published])
            #expect(reader.state.myPosts.isEmpty && reader.state.myTopPosts.isEmpty)

            let json = #"{"author":"ada","body":"First post","starCount":0,"title":"Hello","uid":"\#(uid)"}"#
            #expect(try await server.canonicalJSON(at: "posts/\(id)") == json)
            #expect(try await server.canonicalJSON(at: "user-posts/\(uid)/\(id)") == json)

            // The author's own lists: recent, mine and top each deliver the post.
            store.send(ListsRequested())
            await store.receive(ObjectSubscribed<ListedPost<RecentList>>(isSubscribed: true)) { $0.recent.isSubscribed = true }
            await store.receive(ObjectSubscribed<ListedPost<MyList>>(isSubscribed: true)) { $0.mine.isSubscribed = true }
            await store.receive(ObjectSubscribed<ListedPost<TopList>>(isSubscribed: true)) { $0.top.isSubscribed = true }
            await store.receive(ObjectAdded(key: id, object: ListedPost<RecentList>(post: stored))) { $0.recent.objects[id] = ListedPost(post: stored) }
            await store.receive(ObjectAdded(key: id, object: ListedPost<MyList>(post: stored))) { $0.mine.objects[id] = ListedPost(post: stored) }
            await store.receive(ObjectAdded(key: id, object: ListedPost<TopList>(post: stored))) { $0.top.objects[id] = ListedPost(post: stored) }
            #expect(store.state.recentPosts == [published])
            #expect(store.state.myPosts == [published])
            #expect(store.state.myTopPosts == [published])

            reader.send(LogOutRequested())
            await reader.receive(ObjectSubscribed<ListedPost<RecentList>>(isSubscribed: false)) { $0.recent.isSubscribed = false }
            await reader.receive(ObjectSubscribed<ListedPost<MyList>>(isSubscribed: false)) { $0.mine.isSubscribed = false }
            await reader.receive(ObjectSubscribed<ListedPost<TopList>>(isSubscribed: false)) { $0.top.isSubscribed = false }
            await reader.receive(UserLoggedOut()) { $0 = PostsState() }
            await reader.finish()

            // Log out: every subscription ends, then the state starts over.
            store.send(LogOutRequested())
            await store.receive(ObjectSubscribed<ListedPost<RecentList>>(isSubscribed: false)) { $0.recent.isSubscribed = false }
            await store.receive(ObjectSubscribed<ListedPost<MyList>>(isSubscribed: false)) { $0.mine.isSubscribed = false }
            await store.receive(ObjectSubscribed<ListedPost<TopList>>(isSubscribed: false)) { $0.top.isSubscribed = false }
            await store.receive(UserLoggedOut()) { $0 = PostsState() }

            // Log in again: the username comes back from users/<uid>.
            store.send(LogInRequested(email: "ada@example.com", password: Self.password))
            await store.receive(UserLoggedIn(userID: uid, email: "ada@example.com")) {
                $0.user = SignedInUser(uid: uid, email: "ada@example.com", username: nil)
            }
            await store.receive(ProfileLoaded(profile: UserProfile(username: "ada", email: "ada@example.com"))) { $0.user?.username = "ada" }

            // A wrong password is reported, not thrown.
            store.send(LogOutRequested())
            await store.receive(UserLoggedOut()) { $0 = PostsState() }
            store.send(LogInRequested(email: "ada@example.com", password: "wrong password"))
            await store.receive(UserAuthFailed.self, where: { $0.error.code == .logIn }) { state, failed in
                state.problem = failed.error.description
            }
            await store.finish()
        }
    }

    @Test func twoClientsStarTheSamePostAtOnce() async throws {
        try await TestServer.run { server in
            let (ada, adaUID) = try await signedUp(server, "ada")
            let (bob, bobUID) = try await signedUp(server, "bob")
            let post = try await publish(ada, title: "Star me", body: "Twice")
            let id = try #require(post.identifier)

            // Both at once: the transactions race on the server and retry; neither star is lost.
            ada.send(StarToggleRequested(post: post))
            bob.send(StarToggleRequested(post: post))
            await ada.receive(StarToggled(postID: id, starred: true))
            await bob.receive(StarToggled(postID: id, starred: true))
            let both = Post(uid: adaUID, author: "ada", title: "Star me", body: "Twice", starCount: 2, stars: [adaUID: true, bobUID: true])
            for path in ["posts/\(id)", "user-posts/\(adaUID)/\(id)"] {
                let stored = try JSONDecoder().decode(Post.self, from: Data(try await server.canonicalJSON(at: path).utf8))
                #expect(stored == both, "\(path)")
            }

            // Unstar: one star left, in both copies.
            ada.send(StarToggleRequested(post: post))
            await ada.receive(StarToggled(postID: id, starred: false))
            let starred = #"{"author":"ada","body":"Twice","starCount":1,"stars":{"\#(bobUID)":true},"title":"Star me","uid":"\#(adaUID)"}"#
            #expect(try await server.canonicalJSON(at: "posts/\(id)") == starred)
            #expect(try await server.canonicalJSON(at: "user-posts/\(adaUID)/\(id)") == starred)

            // The last star goes: no stars left, and the count is back to 0.
            bob.send(StarToggleRequested(post: post))
            await bob.receive(StarToggled(postID: id, starred: false))
            let unstarred = #"{"author":"ada","body":"Twice","starCount":0,"title":"Star me","uid":"\#(adaUID)"}"#
            #expect(try await server.canonicalJSON(at: "posts/\(id)") == unstarred)
            #expect(try await server.canonicalJSON(at: "user-posts/\(adaUID)/\(id)") == unstarred)

            // The rules refuse an empty title: nothing is written (in neither place), and it is reported.
            ada.send(PublishRequested(title: "", body: "No title"))
            await ada.receive(PostsFailed.self, where: { $0.reason.contains("permission") }) { state, failed in
                state.problem = failed.reason
            }
            #expect(try await server.canonicalJSON(at: "user-posts/\(adaUID)").contains("No title") == false)
            #expect(try await server.canonicalJSON(at: "posts").contains("No title") == false)
            await ada.finish()
            await bob.finish()
        }
    }

    /// Star contention with many users: ten clients star the same post at once, then all unstar at
    /// once; every transaction retries until it lands, so the counts end exact in both copies.
    @Test func tenClientsStarAndUnstarAtOnceEndingExact() async throws {
        try await TestServer.run { server in
            let (author, authorUID) = try await signedUp(server, "author")
            let post = try await publish(author, title: "Popular", body: "Star me, everyone")
            let id = try #require(post.identifier)
            var fans: [(store: TestStore<PostsState>, uid: String)] = []
            for number in 1...10 { fans.append(try await signedUp(server, "fan\(number)")) }

            for fan in fans { fan.store.send(StarToggleRequested(post: post)) }
            for fan in fans { await fan.store.receive(StarToggled(postID: id, starred: true)) }
            let everyone = Dictionary(uniqueKeysWithValues: fans.map { ($0.uid, true) })
            let starred = Post(uid: authorUID, author: "author", title: "Popular", body: "Star me, everyone", starCount: 10, stars: everyone)
            for path in ["posts/\(id)", "user-posts/\(authorUID)/\(id)"] {
                let stored = try JSONDecoder().decode(Post.self, from: Data(try await server.canonicalJSON(at: path).utf8))
                #expect(stored == starred, "\(path)")
            }

            for fan in fans { fan.store.send(StarToggleRequested(post: post)) }
            for fan in fans { await fan.store.receive(StarToggled(postID: id, starred: false)) }
            let unstarred = #"{"author":"author","body":"Star me, everyone","starCount":0,"title":"Popular","uid":"\#(authorUID)"}"#
            #expect(try await server.canonicalJSON(at: "posts/\(id)") == unstarred)
            #expect(try await server.canonicalJSON(at: "user-posts/\(authorUID)/\(id)") == unstarred)
            for fan in fans { await fan.store.finish() }
            await author.finish()
        }
    }

    @Test func aCommentFromAnotherClientArrivesInTheOpenPost() async throws {
        try await TestServer.run { server in
            let (ada, _) = try await signedUp(server, "ada")
            let (bob, bobUID) = try await signedUp(server, "bob")
            let post = try await publish(ada, title: "Discuss", body: "Comments welcome")
            let id = try #require(post.identifier)

            ada.send(PostOpened(postID: id)) { $0.openPostID = id }
            await ada.receive(ObjectSubscribed<PostComment>(isSubscribed: true)) { $0.comments.isSubscribed = true }
            bob.send(PostOpened(postID: id)) { $0.openPostID = id }
            await bob.receive(ObjectSubscribed<PostComment>(isSubscribed: true)) { $0.comments.isSubscribed = true }

            let comment = PostComment(uid: bobUID, author: "bob", text: "Nice one")
            bob.send(CommentRequested(text: "Nice one"))
            let added = await bob.receive(ObjectAdded<PostComment>.self, where: { $0.object == comment }) { state, added in
                state.comments.objects[added.key] = added.object
            }
            let key = try #require(added?.key)
            await bob.receive(ObjectCreated<PostComment>.self, where: { $0.key == key && $0.object == comment })
            await ada.receive(ObjectAdded(key: key, object: comment)) { $0.comments.objects[key] = comment }
            #expect(ada.state.openComments == [comment])

            ada.send(PostClosed()) { $0.openPostID = nil }
            await ada.receive(ObjectSubscribed<PostComment>(isSubscribed: false)) { $0.comments.isSubscribed = false }
            bob.send(LogOutRequested())
            await bob.receive(ObjectSubscribed<PostComment>(isSubscribed: false)) { $0.comments.isSubscribed = false }
            await bob.receive(UserLoggedOut()) { $0 = PostsState() }
            await ada.finish()
            await bob.finish()
        }
    }
}
