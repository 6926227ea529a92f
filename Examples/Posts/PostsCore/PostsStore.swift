import Foundation
import Hearth
import HearthStore

/// The Posts app's store: ``PostsState`` changed by ``postsReducer``, with the work an action asks
/// for started by ``postsEffects(database:auth:)``.
@MainActor
public func makePostsStore(database: Database, auth: Auth, initialState: PostsState = PostsState()) -> Store<PostsState> {
    Store(initialState: initialState, reducer: postsReducer, effects: postsEffects(database: database, auth: auth))
}

/// Folds every action into ``PostsState``: the four subscriptions through HearthStore's
/// `subscribedObjects` reducer, the rest here.
public let postsReducer = Reducer<PostsState>.combine(
    .scope(\.recent, .subscribedObjects(ListedPost<RecentList>.self)),
    .scope(\.mine, .subscribedObjects(ListedPost<MyList>.self)),
    .scope(\.top, .subscribedObjects(ListedPost<TopList>.self)),
    .scope(\.comments, .subscribedObjects(PostComment.self)),
    Reducer { state, action in
        switch action {
        case let signUp as SignUpRequested:
            state.pendingUsername = signUp.username
            state.problem = nil
        case is LogInRequested:
            state.problem = nil
        case let login as UserLoggedIn:
            state.user = SignedInUser(uid: login.userID, email: login.email, username: state.pendingUsername)
            state.pendingUsername = nil
        case let failed as UserAuthFailed:
            state.pendingUsername = nil
            state.problem = failed.error.description
        case let loaded as ProfileLoaded:
            state.user?.username = loaded.profile.username
        case is UserLoggedOut:
            state = PostsState()
        case let opened as PostOpened:
            state.openPostID = opened.postID
        case is PostClosed:
            state.openPostID = nil
        case let failed as PostsFailed:
            state.problem = failed.reason
        case let failed as ObjectWriteFailed<PostComment>:
            state.problem = failed.error.description
        case let failed as ObjectWriteFailed<UserProfile>:
            state.problem = failed.error.description
        default:
            break
        }
    }
)

/// The work each action starts. Auth goes through HearthStore's flows, the lists and comments
/// through its typed subscriptions, comments and the profile through its write helpers; a new
/// post is one multi-path update (``Post``'s secondary endpoint), a star two transactions.
public func postsEffects(database: Database, auth: Auth) -> @MainActor @Sendable (any Action, PostsState) -> Effect<PostsState>? {
    { action, state in
        switch action {
        case let signUp as SignUpRequested:
            return Effect { store in await store.signUp(email: signUp.email, password: signUp.password, using: auth).value }

        case let signedUp as UserSignedUp:
            // The profile the web app writes at sign-up; its author name signs posts and comments.
            let profile = UserProfile(username: state.pendingUsername ?? "", email: signedUp.email)
            let ref = database.reference(withPath: "users/\(signedUp.userID)")
            return Effect { store in _ = store.createObject(profile, at: ref) }

        case let login as LogInRequested:
            return Effect { store in await store.logIn(email: login.email, password: login.password, using: auth).value }

        case let login as UserLoggedIn where state.user?.username == nil:
            let ref = database.reference(withPath: "users/\(login.userID)")
            return Effect { store in
                do {
                    let profile = try await ref.getData().decoded(as: UserProfile.self)
                    store.dispatch(ProfileLoaded(profile: profile))
                } catch {
                    store.dispatch(PostsFailed(reason: "Could not read the profile: \(error)"))
                }
            }

        case is ListsRequested:
            guard let uid = state.user?.uid else { return nil }
            let posts = database.reference(withPath: "posts")
            let userPosts = database.reference(withPath: "user-posts/\(uid)")
            return Effect { store in
                store.subscribe(ListedPost<RecentList>.self, to: posts.queryLimited(toLast: 100), isSubscribed: \.recent.isSubscribed)
                store.subscribe(ListedPost<MyList>.self, to: userPosts.queryLimited(toLast: 100), isSubscribed: \.mine.isSubscribed)
                store.subscribe(
                    ListedPost<TopList>.self, to: userPosts.queryOrdered(byChild: "starCount").queryLimited(toLast: 100),
                    isSubscribed: \.top.isSubscribed
                )
            }

        case let publish as PublishRequested:
            guard let user = state.user else { return nil }
            return Effect { store in
                // posts/<id> and user-posts/<uid>/<id> in one atomic multi-path update.
                var post = Post(uid: user.uid, author: user.username ?? user.email ?? "", title: publish.title, body: publish.body)
                do {
                    try await post.save(in: database)
                    store.dispatch(PostPublished(post: post))
                } catch {
                    store.dispatch(PostsFailed(reason: "Could not publish: \(error)"))
                }
            }

        case let toggle as StarToggleRequested:
            guard let uid = state.user?.uid else { return nil }
            let copies = [
                database.reference(withPath: "posts/\(toggle.postID)"),
                database.reference(withPath: "user-posts/\(toggle.authorUID)/\(toggle.postID)"),
            ]
            return Effect { store in
                do {
                    // One transaction per copy, as the web app and Firebase's quickstart do.
                    async let main: (Bool, DataSnapshot) = copies[0].runTransactionBlock(toggleStar(of: uid))
                    async let copy: (Bool, DataSnapshot) = copies[1].runTransactionBlock(toggleStar(of: uid))
                    let (committed, snapshot) = try await main
                    let (copyCommitted, _) = try await copy
                    guard committed, copyCommitted else {
                        return store.dispatch(PostsFailed(reason: "The post is gone"))
                    }
                    let starred = snapshot.childSnapshot(forPath: "stars/\(uid)").exists()
                    store.dispatch(StarToggled(postID: toggle.postID, starred: starred))
                } catch {
                    store.dispatch(PostsFailed(reason: "Could not star: \(error)"))
                }
            }

        case let opened as PostOpened:
            let comments = database.reference(withPath: "post-comments/\(opened.postID)")
            return Effect { store in
                store.unsubscribe(\.comments.isSubscribed)
                store.subscribe(PostComment.self, to: comments, isSubscribed: \.comments.isSubscribed)
            }

        case is PostClosed:
            return Effect { store in store.unsubscribe(\.comments.isSubscribed) }

        case let request as CommentRequested:
            guard let user = state.user, let postID = state.openPostID else { return nil }
            let comment = PostComment(uid: user.uid, author: user.username ?? user.email ?? "", text: request.text)
            let comments = database.reference(withPath: "post-comments/\(postID)")
            return Effect { store in _ = store.createObject(comment, at: comments, underNewChildID: true) }

        case is LogOutRequested:
            return Effect { store in
                for flag: KeyPath<PostsState, Bool> in [\.recent.isSubscribed, \.mine.isSubscribed, \.top.isSubscribed, \.comments.isSubscribed] {
                    store.unsubscribe(flag)
                }
                store.logOut(using: auth)
            }

        default:
            return nil
        }
    }
}

/// The transaction that flips `uid`'s star on one copy of a post and keeps `starCount` in step
/// (the web app's `toggleStarIn`). An absent value (nothing cached yet) is returned unchanged; the
/// server then sends the real value and the block runs again.
func toggleStar(of uid: String) -> @Sendable (MutableData) -> TransactionResult {
    { data in
        guard var post = data.value as? [String: Any] else { return .success(withValue: data) }
        var stars = post["stars"] as? [String: Any] ?? [:]
        var count = integer(post["starCount"])
        if stars[uid] != nil {
            stars[uid] = nil
            count = max(0, count - 1)
        } else {
            stars[uid] = true
            count += 1
        }
        post["starCount"] = count
        post["stars"] = stars.isEmpty ? nil : stars
        data.value = post
        return .success(withValue: data)
    }
}

private func integer(_ value: Any?) -> Int {
    switch value {
    case let value as Int: value
    case let value as Double: Int(value)
    case let value as NSNumber: value.intValue
    default: 0
    }
}
