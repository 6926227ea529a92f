import Hearth
import HearthStore

/// A post, stored at `posts/<id>` with a copy at `user-posts/<uid>/<id>` (the web app's data model,
/// `docs/apps.md` §3). Saving a new one writes both copies in one atomic multi-path update.
public struct Post: DatabaseModel, Equatable, Hashable {
    public var identifier: String?
    public var uid: String
    public var author: String
    public var title: String
    public var body: String
    public var starCount: Int
    /// The users who starred the post (`stars/<uid>: true`); absent when nobody has.
    public var stars: [String: Bool]?

    public var endpoint: String { "posts" }
    public var secondaryEndpoints: [String] { ["user-posts/\(uid)"] }

    public init(identifier: String? = nil, uid: String, author: String, title: String, body: String, starCount: Int = 0, stars: [String: Bool]? = nil) {
        self.identifier = identifier
        self.uid = uid
        self.author = author
        self.title = title
        self.body = body
        self.starCount = starCount
        self.stars = stars
    }

    /// Whether `uid` starred the post.
    public func isStarred(by uid: String?) -> Bool {
        guard let uid else { return false }
        return stars?[uid] == true
    }
}

/// A comment at `post-comments/<postId>/<commentId>`.
public struct PostComment: Codable, Sendable, Equatable, Hashable {
    public var uid: String
    public var author: String
    public var text: String

    public init(uid: String, author: String, text: String) {
        self.uid = uid
        self.author = author
        self.text = text
    }
}

/// A user's profile at `users/<uid>`.
public struct UserProfile: Codable, Sendable, Equatable {
    public var username: String
    public var email: String?

    public init(username: String, email: String?) {
        self.username = username
        self.email = email
    }
}

/// The three post lists. Each is its own subscription; the subscription actions are typed by the
/// model, so each list decodes its children as its own type (``ListedPost``) and the reducers keep
/// the lists apart (`ObjectAdded<ListedPost<RecentList>>` is not `ObjectAdded<ListedPost<MyList>>`).
public enum PostList: Sendable, Hashable, CaseIterable {
    /// The newest 100 posts of everyone (`posts`, last 100 by key).
    case recent
    /// The signed-in user's newest 100 posts (`user-posts/<uid>`).
    case mine
    /// The signed-in user's 100 most starred posts (`user-posts/<uid>` by `starCount`).
    case top
}

public enum RecentList: Sendable {}
public enum MyList: Sendable {}
public enum TopList: Sendable {}

/// A ``Post`` as delivered by one list's subscription (`Tag` names the list).
public struct ListedPost<Tag: Sendable>: Decodable, Sendable, Equatable {
    public var post: Post

    public init(post: Post) { self.post = post }

    public init(from decoder: any Decoder) throws {
        post = try Post(from: decoder)
    }
}

/// The signed-in user.
public struct SignedInUser: Equatable, Sendable {
    public var uid: String
    public var email: String?
    /// The name posts and comments are signed with; nil until the profile is loaded.
    public var username: String?

    public init(uid: String, email: String?, username: String?) {
        self.uid = uid
        self.email = email
        self.username = username
    }
}

/// The whole app's state: who is signed in, the three lists, the open post and its comments.
public struct PostsState: Equatable, Sendable {
    public var user: SignedInUser?
    /// The username typed at sign-up, kept until the account exists and the profile is written.
    public var pendingUsername: String?
    public var recent = SubscribedObjects<ListedPost<RecentList>>()
    public var mine = SubscribedObjects<ListedPost<MyList>>()
    public var top = SubscribedObjects<ListedPost<TopList>>()
    /// The post whose comments are subscribed.
    public var openPostID: String?
    public var comments = SubscribedObjects<PostComment>()
    /// The last thing that went wrong, for the UI to show.
    public var problem: String?

    public init() {}

    /// The recent posts, newest first (push IDs sort by time).
    public var recentPosts: [Post] { Self.posts(recent).sorted { $0.identifier! > $1.identifier! } }
    /// The signed-in user's posts, newest first.
    public var myPosts: [Post] { Self.posts(mine).sorted { $0.identifier! > $1.identifier! } }
    /// The signed-in user's posts, most stars first (newest first among equals).
    public var myTopPosts: [Post] {
        Self.posts(top).sorted { ($0.starCount, $0.identifier!) > ($1.starCount, $1.identifier!) }
    }

    public func posts(in list: PostList) -> [Post] {
        switch list {
        case .recent: recentPosts
        case .mine: myPosts
        case .top: myTopPosts
        }
    }

    /// The post with `id`, from whichever list holds it (the recent list first).
    public func post(withID id: String) -> Post? {
        (recent.objects[id]?.post ?? mine.objects[id]?.post ?? top.objects[id]?.post).map { post in
            var post = post
            post.identifier = id
            return post
        }
    }

    /// The open post's comments, oldest first.
    public var openComments: [PostComment] { comments.inKeyOrder }

    private static func posts<Tag>(_ list: SubscribedObjects<ListedPost<Tag>>) -> [Post] {
        list.objects.map { key, listed in
            var post = listed.post
            post.identifier = key
            return post
        }
    }
}
