// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseAuth`, `import FirebaseDatabase` and
// `import FirebaseStorage`).
//
// Posts: create (upload the photo, then write the post), the timeline (the followed users' posts and
// your own, newest first, read concurrently), comments, likes, deletes.

import Foundation
import Hearth

public class PostController {
    public static let shared = PostController()

    var postsRef: DatabaseReference {
        return Database.database().reference().child("posts")
    }

    public init() {}

    // MARK: Creating

    /// Uploads the photo to `images/<postId>.jpg`, then writes the post under that push ID.
    public func createPost(imageData: Data, caption: String?, completion: @escaping (Post?, Error?) -> Void) {
        guard let uid = Auth.auth().currentUser?.uid else {
            completion(nil, TimelineError.notSignedIn)
            return
        }
        UserController.shared.fetchUser(identifier: uid) { user in
            guard let user = user else {
                completion(nil, TimelineError.notFound)
                return
            }
            // The push ID first, so the image and the post share it.
            let postRef = self.postsRef.childByAutoId()
            guard let postIdentifier = postRef.key else {
                completion(nil, TimelineError.invalidData)
                return
            }
            let imagePath = ImageController.shared.imagePath(for: postIdentifier)
            ImageController.shared.uploadImage(imageData, toPath: imagePath) { metadata, error in
                if let error = error {
                    completion(nil, error)
                    return
                }
                var post = Post(uid: uid, username: user.username, image: metadata?.path ?? imagePath,
                                caption: caption, identifier: postIdentifier)
                post.save { error in
                    if let error = error {
                        completion(nil, error)
                        return
                    }
                    completion(post, nil)
                }
            }
        }
    }

    // MARK: Reading

    public func fetchPost(identifier: String, completion: @escaping (Post?) -> Void) {
        postsRef.child(identifier).observeSingleEvent(of: .value, with: { snapshot in
            completion(Post(snapshot: snapshot))
        }, withCancel: { error in
            print("Error reading post \(identifier): \(error.localizedDescription)")
            completion(nil)
        })
    }

    /// One user's posts, newest first.
    public func fetchPosts(forUserIdentifier uid: String, completion: @escaping ([Post]) -> Void) {
        postsRef.queryOrdered(byChild: "uid").queryEqual(toValue: uid).observeSingleEvent(of: .value, with: { snapshot in
            var posts: [Post] = []
            for child in snapshot.children {
                if let child = child as? DataSnapshot, let post = Post(snapshot: child) {
                    posts.append(post)
                }
            }
            completion(PostController.sortedNewestFirst(posts))
        }, withCancel: { error in
            print("Error reading the posts of \(uid): \(error.localizedDescription)")
            completion([])
        })
    }

    /// The timeline of `user`: the posts of everyone they follow and their own, newest first. The
    /// per-user queries run at the same time; `completion` runs (on the main queue) once all answered.
    public func fetchTimeline(for user: TimelineUser, completion: @escaping ([Post]) -> Void) {
        guard let uid = user.identifier else {
            completion([])
            return
        }
        let group = DispatchGroup()
        var allPosts: [Post] = []
        for identifier in [uid] + user.followedIdentifiers {
            group.enter()
            fetchPosts(forUserIdentifier: identifier) { posts in
                allPosts += posts
                group.leave()
            }
        }
        group.notify(queue: .main) {
            completion(PostController.sortedNewestFirst(allPosts))
        }
    }

    /// The signed-in user's timeline (their profile read first, for the follows).
    public func fetchTimelineForCurrentUser(completion: @escaping ([Post]) -> Void) {
        UserController.shared.loadCurrentUser { user in
            guard let user = user else {
                completion([])
                return
            }
            self.fetchTimeline(for: user, completion: completion)
        }
    }

    /// Push IDs sort by creation time: the greatest is the newest.
    static func sortedNewestFirst(_ posts: [Post]) -> [Post] {
        return posts.sorted { ($0.identifier ?? "") > ($1.identifier ?? "") }
    }

    /// Calls `block` with the post now and after every change (likes, comments); returns the handle
    /// for ``stopObservingPost(identifier:handle:)``.
    @discardableResult
    public func observePost(identifier: String, block: @escaping (Post?) -> Void) -> DatabaseHandle {
        return postsRef.child(identifier).observe(.value, with: { snapshot in
            block(Post(snapshot: snapshot))
        })
    }

    public func stopObservingPost(identifier: String, handle: DatabaseHandle) {
        postsRef.child(identifier).removeObserver(withHandle: handle)
    }

    // MARK: Comments and likes

    public func addComment(_ text: String, to post: Post, completion: @escaping (Comment?, Error?) -> Void) {
        guard let postIdentifier = post.identifier, let uid = Auth.auth().currentUser?.uid else {
            completion(nil, TimelineError.notSignedIn)
            return
        }
        UserController.shared.fetchUser(identifier: uid) { user in
            var comment = Comment(postIdentifier: postIdentifier, uid: uid, username: user?.username ?? "", text: text)
            comment.save { error in
                completion(error == nil ? comment : nil, error)
            }
        }
    }

    public func deleteComment(_ comment: Comment, completion: @escaping (Error?) -> Void) {
        comment.delete(completion: completion)
    }

    public func like(_ post: Post, completion: @escaping (Like?, Error?) -> Void) {
        guard let postIdentifier = post.identifier, let uid = Auth.auth().currentUser?.uid else {
            completion(nil, TimelineError.notSignedIn)
            return
        }
        var like = Like(postIdentifier: postIdentifier, uid: uid)
        like.save { error in
            completion(error == nil ? like : nil, error)
        }
    }

    public func deleteLike(_ like: Like, completion: @escaping (Error?) -> Void) {
        like.delete(completion: completion)
    }

    /// Likes the post, or takes the signed-in user's like back (the double-tap on a photo).
    public func toggleLike(on post: Post, completion: @escaping (Error?) -> Void) {
        guard let uid = Auth.auth().currentUser?.uid else {
            completion(TimelineError.notSignedIn)
            return
        }
        if let like = post.likes.first(where: { $0.uid == uid }) {
            deleteLike(like, completion: completion)
        } else {
            self.like(post) { _, error in completion(error) }
        }
    }

    // MARK: Deleting

    /// Deletes the post (its comments and likes with it), then its image.
    public func deletePost(_ post: Post, completion: @escaping (Error?) -> Void) {
        post.delete { error in
            if let error = error {
                completion(error)
                return
            }
            ImageController.shared.deleteImage(atPath: post.image) { error in
                completion(error)
            }
        }
    }
}
