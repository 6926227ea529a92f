import Hearth
import Observation

/// The post detail screen, live: the photo, caption, likes and comments (oldest first); like and
/// unlike (and double-tap to like), add a comment, delete one's own comment or the post itself.
/// When the post is deleted elsewhere, ``isDeleted`` turns true (the UI closes the screen).
///
/// For example, in SwiftUI:
/// ```swift
/// @State var detail = PostDetailController(postID: id, viewer: me, posts: posts)
///
/// AsyncImage(url: detail.post?.imageURL.flatMap(URL.init)).onTapGesture(count: 2) { Task { await detail.doubleTap() } }
/// Button(detail.isLiked ? "♥ \(detail.likeCount)" : "♡ \(detail.likeCount)") { Task { await detail.toggleLike() } }
/// ForEach(detail.comments) { Text("\($0.username): \($0.text)") }
/// TextField("Add a comment", text: $detail.commentText).onSubmit { Task { await detail.sendComment() } }
/// ```
@MainActor
@Observable
public final class PostDetailController {
    public let postID: String
    public let viewer: TimelineUser
    public let posts: PostController
    public private(set) var post: TimelinePost?
    public private(set) var isDeleted = false
    /// The comment being written.
    public var commentText = ""
    public private(set) var errorMessage: String?

    @ObservationIgnored private var watch: Task<Void, Never>?

    public init(postID: String, viewer: TimelineUser, posts: PostController) {
        self.postID = postID
        self.viewer = viewer
        self.posts = posts
    }

    public var comments: [TimelineComment] { post?.sortedComments ?? [] }
    public var likeCount: Int { post?.likeCount ?? 0 }
    public var isLiked: Bool { post?.isLiked(by: viewer.uid) ?? false }
    /// Whether the viewer may delete the post (their own).
    public var canDelete: Bool { post?.uid == viewer.uid }
    public func canDelete(_ comment: TimelineComment) -> Bool { comment.uid == viewer.uid }

    public func start() {
        guard watch == nil else { return }
        let location = posts.database.reference(withPath: TimelinePost.collection).child(postID)
        watch = Task { [weak self] in
            do {
                for try await snapshot in location.values {
                    guard let self else { return }
                    if snapshot.exists() {
                        self.post = try? snapshot.decoded(as: TimelinePost.self)
                    } else if self.post != nil {
                        self.post = nil
                        self.isDeleted = true
                    }
                }
            } catch {
                self?.errorMessage = TimelineError(error).description
            }
        }
    }

    public func stop() {
        watch?.cancel()
        watch = nil
    }

    public func toggleLike() async {
        await perform { [self] in
            if isLiked { try await posts.unlike(postID) } else { try await posts.like(postID) }
        }
    }

    /// A double tap on the photo likes it (and never unlikes).
    public func doubleTap() async {
        guard !isLiked else { return }
        await perform { [self] in try await posts.like(postID) }
    }

    /// Sends ``commentText`` and clears it when the server has it.
    public func sendComment() async {
        await perform { [self] in
            _ = try await posts.comment(on: postID, text: commentText, as: viewer)
            commentText = ""
        }
    }

    public func delete(_ comment: TimelineComment) async {
        await perform { [self] in try await posts.delete(comment) }
    }

    /// Deletes the post and its photo; ``isDeleted`` turns true.
    public func deletePost() async {
        guard let post else { return }
        await perform { [self] in
            try await posts.delete(post)
            isDeleted = true
        }
    }

    private func perform(_ action: () async throws -> Void) async {
        errorMessage = nil
        do {
            try await action()
        } catch {
            errorMessage = TimelineError(error).description
        }
    }
}
