import Foundation
import Hearth
import HearthStore
import Observation

// The MVVM layer: thin view models that read from the store and turn taps into actions. They hold
// no data of their own: the store is the single source of truth, and because it is @Observable, a
// view reading a view model's computed properties redraws when the store's state changes.

/// One of the three post lists, for a list screen.
@MainActor
@Observable
public final class PostListViewModel {
    public let list: PostList
    private let store: Store<PostsState>

    public init(store: Store<PostsState>, list: PostList) {
        self.store = store
        self.list = list
    }

    /// The list's posts, in display order (newest first; most stars first for ``PostList/top``).
    public var posts: [Post] { store.state.posts(in: list) }
    /// Whether the list is live (its subscription is listening).
    public var isLive: Bool {
        switch list {
        case .recent: store.state.recent.isSubscribed
        case .mine: store.state.mine.isSubscribed
        case .top: store.state.top.isSubscribed
        }
    }
    public var problem: String? { store.state.problem }
    /// Whether the signed-in user starred `post` (a filled star).
    public func isStarred(_ post: Post) -> Bool { post.isStarred(by: store.state.user?.uid) }

    /// Starts the lists' subscriptions (once: a screen appearing again does not listen twice).
    public func appear() { store.dispatch(ListsRequested()) }
    public func toggleStar(_ post: Post) { store.dispatch(StarToggleRequested(post: post)) }
    public func publish(title: String, body: String) { store.dispatch(PublishRequested(title: title, body: body)) }
}

/// One post and its live comments, for a detail screen.
@MainActor
@Observable
public final class PostDetailViewModel {
    public let postID: String
    /// The comment being typed.
    public var draft = ""
    private let store: Store<PostsState>

    public init(store: Store<PostsState>, postID: String) {
        self.store = store
        self.postID = postID
    }

    public var post: Post? { store.state.post(withID: postID) }
    public var isStarred: Bool { post?.isStarred(by: store.state.user?.uid) ?? false }
    /// The comments, oldest first; empty unless this post is the open one.
    public var comments: [PostComment] { store.state.openPostID == postID ? store.state.openComments : [] }
    public var problem: String? { store.state.problem }

    /// Subscribes to the comments (ending another post's).
    public func open() { store.dispatch(PostOpened(postID: postID)) }
    public func close() {
        if store.state.openPostID == postID { store.dispatch(PostClosed()) }
    }
    public func toggleStar() {
        guard let post else { return }
        store.dispatch(StarToggleRequested(post: post))
    }
    /// Sends the draft as a comment and clears it; a blank draft sends nothing.
    public func sendComment() {
        let text = draft.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return }
        store.dispatch(CommentRequested(text: text))
        draft = ""
    }
}
