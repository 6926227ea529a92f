import Hearth
import Observation

/// The timeline screen, live: the signed-in user's posts and those of everyone they follow,
/// newest first. It watches the user's follows; for each person it keeps one live query of their
/// posts (started together, stopped when they are unfollowed), and shows the merge once every
/// query has answered — so a new follow, a new post, a like or a comment anywhere appears at
/// once. ``refresh()`` is the pull to refresh: a one-time read through ``PostController/timeline()``.
///
/// For example, in SwiftUI:
/// ```swift
/// @State var timeline = TimelineController(posts: posts, uid: me.uid)
///
/// List(timeline.posts) { post in PostCard(post, liked: post.isLiked(by: me.uid)) }
///     .task { timeline.start() }
///     .refreshable { await timeline.refresh() }
/// ```
@MainActor
@Observable
public final class TimelineController {
    public let postController: PostController
    public let uid: String
    /// The posts, newest first.
    public private(set) var posts: [TimelinePost] = []
    /// False until every person's posts have been read once.
    public private(set) var isLoaded = false
    /// Whose posts are shown: the user, then the people they follow.
    public private(set) var people: [String] = []
    public private(set) var errorMessage: String?

    @ObservationIgnored private var followsWatch: Task<Void, Never>?
    @ObservationIgnored private var postWatches: [String: Task<Void, Never>] = [:]
    @ObservationIgnored private var lists: [String: [TimelinePost]] = [:]

    public init(posts: PostController, uid: String) {
        self.postController = posts
        self.uid = uid
    }

    /// Whether nothing is shown because there is nothing to show.
    public var isEmpty: Bool { isLoaded && posts.isEmpty }

    /// Starts the live timeline (again, if it was stopped).
    public func start() {
        guard followsWatch == nil else { return }
        let me = uid
        let follows = postController.database.reference(withPath: TimelineUser.collection).child(me).child("follows")
        followsWatch = Task { [weak self] in
            do {
                for try await snapshot in follows.values {
                    let followed = snapshot.children.filter { $0.value as? Bool == true }.map(\.key).sorted()
                    self?.show([me] + followed)
                }
            } catch {
                self?.errorMessage = TimelineError(error).description
            }
        }
    }

    public func stop() {
        followsWatch?.cancel()
        followsWatch = nil
        for watch in postWatches.values { watch.cancel() }
        postWatches = [:]
        lists = [:]
    }

    /// Reads the timeline once (every person's posts at once) and shows it.
    public func refresh() async {
        do {
            posts = try await postController.timeline()
            isLoaded = true
            errorMessage = nil
        } catch {
            errorMessage = TimelineError(error).description
        }
    }

    /// Keeps one live query per person in `uids`: new people get one, people no longer followed lose theirs.
    private func show(_ uids: [String]) {
        people = uids
        let wanted = Set(uids)
        for (uid, watch) in postWatches where !wanted.contains(uid) {
            watch.cancel()
            postWatches[uid] = nil
            lists[uid] = nil
        }
        for uid in uids where postWatches[uid] == nil {
            let query = postController.postsQuery(by: uid)
            postWatches[uid] = Task { [weak self] in
                do {
                    for try await snapshot in query.values {
                        self?.received(snapshot.decodedChildren(as: TimelinePost.self).values, of: uid)
                    }
                } catch {
                    self?.errorMessage = TimelineError(error).description
                }
            }
        }
        publishIfComplete()
    }

    private func received(_ list: [TimelinePost], of uid: String) {
        guard postWatches[uid] != nil else { return }
        lists[uid] = list
        publishIfComplete()
    }

    /// Shows the merge once every person's posts are in (so the timeline never shows half of it).
    private func publishIfComplete() {
        guard people.allSatisfy({ lists[$0] != nil }) else { return }
        posts = PostController.merge(people.compactMap { lists[$0] })
        isLoaded = true
    }
}
