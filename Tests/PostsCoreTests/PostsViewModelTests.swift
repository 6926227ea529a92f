import Hearth
import HearthStore
import HearthStoreTesting
import PostsCore
import Testing

/// The view models read the store: the actions a subscription would dispatch, sent by hand (no
/// server), show up in the lists in display order, and taps become actions.
@MainActor
@Suite struct PostsViewModelTests {
    private func post(_ uid: String, _ title: String, stars: Int, by starrers: [String] = []) -> Post {
        Post(uid: uid, author: uid, title: title, body: "", starCount: stars, stars: starrers.isEmpty ? nil : Dictionary(uniqueKeysWithValues: starrers.map { ($0, true) }))
    }

    @Test func listsShowTheStoresPostsInDisplayOrder() {
        var state = PostsState()
        state.user = SignedInUser(uid: "ada", email: nil, username: "ada")
        let store = Store(initialState: state, reducer: postsReducer)
        let recent = PostListViewModel(store: store, list: .recent)
        let top = PostListViewModel(store: store, list: .top)
        #expect(recent.posts.isEmpty && !recent.isLive)

        store.dispatch(ObjectSubscribed<ListedPost<RecentList>>(isSubscribed: true))
        store.dispatch(ObjectAdded(key: "p1", object: ListedPost<RecentList>(post: post("bob", "Older", stars: 0))))
        store.dispatch(ObjectAdded(key: "p2", object: ListedPost<RecentList>(post: post("ada", "Newer", stars: 1, by: ["ada"]))))
        #expect(recent.isLive)
        #expect(recent.posts.map(\.title) == ["Newer", "Older"])
        #expect(recent.posts.map(\.identifier) == ["p2", "p1"])
        #expect(recent.isStarred(recent.posts[0]) && !recent.isStarred(recent.posts[1]))

        store.dispatch(ObjectAdded(key: "p1", object: ListedPost<TopList>(post: post("ada", "Most", stars: 5))))
        store.dispatch(ObjectAdded(key: "p2", object: ListedPost<TopList>(post: post("ada", "Least", stars: 1))))
        #expect(top.posts.map(\.title) == ["Most", "Least"])
        // The lists are apart: a top-list action did not touch the recent list.
        #expect(recent.posts.map(\.title) == ["Newer", "Older"])

        store.dispatch(ObjectChanged(key: "p1", object: ListedPost<RecentList>(post: post("bob", "Older", stars: 3))))
        #expect(recent.posts.last?.starCount == 3)
    }

    @Test func detailShowsThePostAndItsComments() {
        let store = Store(initialState: PostsState(), reducer: postsReducer)
        store.dispatch(ObjectAdded(key: "p1", object: ListedPost<RecentList>(post: post("bob", "Hello", stars: 0))))
        let detail = PostDetailViewModel(store: store, postID: "p1")
        #expect(detail.post?.title == "Hello")
        #expect(detail.comments.isEmpty)

        detail.open()
        #expect(store.state.openPostID == "p1")
        let comment = PostComment(uid: "ada", author: "ada", text: "Hi")
        store.dispatch(ObjectAdded(key: "c1", object: comment))
        #expect(detail.comments == [comment])
        // Another post's view model shows none of them.
        #expect(PostDetailViewModel(store: store, postID: "p2").comments.isEmpty)

        detail.close()
        #expect(store.state.openPostID == nil)
    }

    /// Taps become exactly these actions (a TestStore fails on any other).
    @Test func tapsBecomeActions() async {
        let test = TestStore(initialState: PostsState(), reducer: postsReducer)
        let post = Post(identifier: "p1", uid: "bob", author: "bob", title: "Hello", body: "")
        let list = PostListViewModel(store: test.store, list: .recent)
        let detail = PostDetailViewModel(store: test.store, postID: "p1")

        list.appear()
        await test.receive(ListsRequested())
        list.toggleStar(post)
        await test.receive(StarToggleRequested(postID: "p1", authorUID: "bob"))
        list.publish(title: "T", body: "B")
        await test.receive(PublishRequested(title: "T", body: "B"))
        detail.open()
        await test.receive(PostOpened(postID: "p1")) { $0.openPostID = "p1" }
        detail.draft = "   "
        detail.sendComment()  // blank: nothing is sent
        detail.draft = " Nice "
        detail.sendComment()
        await test.receive(CommentRequested(text: "Nice"))
        #expect(detail.draft.isEmpty)
        detail.close()
        await test.receive(PostClosed()) { $0.openPostID = nil }
        await test.finish()
    }
}
