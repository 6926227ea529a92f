import Hearth
import HearthStore

// What the user asks for (dispatched by the view models), and what the effects report back.
// Auth, subscription and write results arrive as HearthStore's own typed actions (UserLoggedIn,
// ObjectAdded<ListedPost<RecentList>>, ObjectCreated<PostComment>, …).

/// Create an account, then write `users/<uid>` with `username`.
public struct SignUpRequested: Action, Equatable {
    public var email: String
    public var password: String
    public var username: String
    public init(email: String, password: String, username: String) {
        self.email = email
        self.password = password
        self.username = username
    }
}

/// Log in with an existing account (its username is then read from `users/<uid>`).
public struct LogInRequested: Action, Equatable {
    public var email: String
    public var password: String
    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

/// Stop every subscription and log out.
public struct LogOutRequested: Action, Equatable {
    public init() {}
}

/// The signed-in user's profile was read or written.
public struct ProfileLoaded: Action, Equatable {
    public var profile: UserProfile
    public init(profile: UserProfile) { self.profile = profile }
}

/// Start the three list subscriptions for the signed-in user.
public struct ListsRequested: Action, Equatable {
    public init() {}
}

/// Publish a new post in `posts` and `user-posts/<uid>` at once.
public struct PublishRequested: Action, Equatable {
    public var title: String
    public var body: String
    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }
}

/// The post is on the server, in both places.
public struct PostPublished: Action, Equatable {
    public var post: Post
    public init(post: Post) { self.post = post }
}

/// Star the post, or unstar it if the user starred it, in both copies.
public struct StarToggleRequested: Action, Equatable {
    public var postID: String
    /// The author's uid: the second copy is at `user-posts/<authorUID>/<postID>`.
    public var authorUID: String
    public init(postID: String, authorUID: String) {
        self.postID = postID
        self.authorUID = authorUID
    }
    public init(post: Post) {
        self.init(postID: post.identifier ?? "", authorUID: post.uid)
    }
}

/// Both copies' transactions committed; `starred` says whether the user's star is now set.
public struct StarToggled: Action, Equatable {
    public var postID: String
    public var starred: Bool
    public init(postID: String, starred: Bool) {
        self.postID = postID
        self.starred = starred
    }
}

/// Open a post: subscribe to its comments (ending the previous post's).
public struct PostOpened: Action, Equatable {
    public var postID: String
    public init(postID: String) { self.postID = postID }
}

/// Close the open post: unsubscribe from its comments.
public struct PostClosed: Action, Equatable {
    public init() {}
}

/// Add a comment to the open post.
public struct CommentRequested: Action, Equatable {
    public var text: String
    public init(text: String) { self.text = text }
}

/// Something failed (a write the rules refused, a transaction that did not commit, …).
public struct PostsFailed: Action, Equatable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}
