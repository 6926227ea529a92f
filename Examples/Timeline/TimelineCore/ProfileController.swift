import Hearth
import Observation

/// A person's profile screen, live: the header (username, bio, web address, followers and
/// following counts), the grid of their posts (newest first), and the follow / unfollow button —
/// which on one's own profile is the log-out button instead (``isMine``).
///
/// For example, in SwiftUI:
/// ```swift
/// @State var profile = ProfileController(uid: uid, viewer: me.uid, users: users, posts: posts)
///
/// ProfileHeader(profile.user, followers: profile.followerCount, following: profile.followingCount)
/// if profile.isMine { Button("Log out") { session.logOut() } }
/// else { Button(profile.isFollowing ? "Unfollow" : "Follow") { Task { await profile.toggleFollow() } } }
/// PostGrid(profile.posts).task { profile.start() }
/// ```
@MainActor
@Observable
public final class ProfileController {
    public let uid: String
    public let viewer: String
    public let users: UserController
    public let posts: PostController
    /// The profile; nil until read, or when there is no such person (``isMissing``).
    public private(set) var user: TimelineUser?
    public private(set) var isMissing = false
    /// Their posts, newest first.
    public private(set) var grid: [TimelinePost] = []
    public private(set) var followerCount = 0
    public private(set) var isFollowing = false
    public private(set) var errorMessage: String?

    @ObservationIgnored private var watches: [Task<Void, Never>] = []

    public init(uid: String, viewer: String, users: UserController, posts: PostController) {
        self.uid = uid
        self.viewer = viewer
        self.users = users
        self.posts = posts
    }

    public var isMine: Bool { uid == viewer }
    public var followingCount: Int { user?.followedUIDs.count ?? 0 }

    public func start() {
        guard watches.isEmpty else { return }
        // Everyone, as the web app reads it: the follower count is how many profiles follow this one.
        let everyone = users.database.reference(withPath: TimelineUser.collection)
        watches.append(Task { [weak self] in
            do {
                for try await snapshot in everyone.values {
                    self?.received(users: snapshot.decodedChildren(as: TimelineUser.self).values)
                }
            } catch {
                self?.errorMessage = TimelineError(error).description
            }
        })
        let theirs = posts.postsQuery(by: uid)
        watches.append(Task { [weak self] in
            do {
                for try await snapshot in theirs.values {
                    self?.grid = snapshot.decodedChildren(as: TimelinePost.self).values.newestFirst()
                }
            } catch {
                self?.errorMessage = TimelineError(error).description
            }
        })
    }

    public func stop() {
        for watch in watches { watch.cancel() }
        watches = []
    }

    /// Follows or unfollows (never oneself: the rules refuse it, and the button is not there).
    public func toggleFollow() async {
        guard !isMine else { return }
        errorMessage = nil
        do {
            if isFollowing { try await users.unfollow(uid) } else { try await users.follow(uid) }
        } catch {
            errorMessage = TimelineError(error).description
        }
    }

    private func received(users everyone: [TimelineUser]) {
        user = everyone.first { $0.uid == uid }
        isMissing = user == nil
        followerCount = everyone.followerCount(of: uid)
        isFollowing = everyone.first { $0.uid == viewer }?.isFollowing(uid) ?? false
    }
}
