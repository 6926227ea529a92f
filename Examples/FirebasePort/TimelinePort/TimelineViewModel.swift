// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseAuth`).
//
// The timeline screen's logic, without the views: the posts for a list (newest first), pull to
// refresh, likes from the list, and callbacks the view controller sets to redraw.

import Foundation
import Hearth

public class TimelineViewModel {
    public private(set) var posts: [Post] = []
    public private(set) var isLoading = false

    /// Called (on the main queue) when `posts` changed.
    public var onPostsChanged: (([Post]) -> Void)?
    /// Called with a message for people when something failed.
    public var onError: ((String) -> Void)?
    /// Called when nobody is signed in: the app shows the sign-up / log-in screen.
    public var onSignedOut: (() -> Void)?

    let postController: PostController

    public init(postController: PostController = .shared) {
        self.postController = postController
    }

    public var numberOfRows: Int { return posts.count }

    public func post(at index: Int) -> Post { return posts[index] }

    /// "12 likes · 3 comments" under a photo.
    public func summary(at index: Int) -> String {
        let post = posts[index]
        let likes = post.likeCount == 1 ? "1 like" : "\(post.likeCount) likes"
        let comments = post.commentCount == 1 ? "1 comment" : "\(post.commentCount) comments"
        return "\(likes) · \(comments)"
    }

    /// Pull to refresh: reads the timeline again.
    public func refresh(completion: (() -> Void)? = nil) {
        guard Auth.auth().currentUser != nil else {
            posts = []
            onPostsChanged?(posts)
            onSignedOut?()
            completion?()
            return
        }
        isLoading = true
        postController.fetchTimelineForCurrentUser { posts in
            self.isLoading = false
            self.posts = posts
            self.onPostsChanged?(posts)
            completion?()
        }
    }

    /// The double-tap on a photo: like it, or take the like back; then refresh that post.
    public func toggleLike(at index: Int, completion: (() -> Void)? = nil) {
        let post = posts[index]
        postController.toggleLike(on: post) { error in
            if let error = error {
                self.onError?(error.localizedDescription)
                completion?()
                return
            }
            guard let identifier = post.identifier else {
                completion?()
                return
            }
            self.postController.fetchPost(identifier: identifier) { updated in
                if let updated = updated, let row = self.posts.firstIndex(where: { $0.identifier == identifier }) {
                    self.posts[row] = updated
                    self.onPostsChanged?(self.posts)
                }
                completion?()
            }
        }
    }
}
