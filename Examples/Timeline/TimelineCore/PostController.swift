import Foundation
import Hearth

/// Every call about posts: sharing a photo, reading one person's posts and the timeline, likes,
/// comments, and deleting. Stateless and `Sendable`; ``TimelineController``,
/// ``PostDetailController`` and ``NewPostController`` go through it.
///
/// The timeline is the signed-in user's posts and those of everyone they follow: one query per
/// person (`posts` ordered by `uid`, equal to theirs), all run at once in a task group, and merged
/// newest first once every one has answered.
///
/// For example:
/// ```swift
/// let posts = PostController(database: database, auth: auth, images: ImageController(storage: Storage.storage(database: database)))
/// let post = try await posts.share(photo: jpeg, contentType: "image/jpeg", fileExtension: "jpg", caption: "Sunrise", as: me)
/// try await posts.like(post.id)
/// let feed = try await posts.timeline()      // newest first
/// ```
public final class PostController: Sendable {
    public let database: Database
    public let auth: Auth
    public let images: ImageController

    public init(database: Database, auth: Auth, images: ImageController) {
        self.database = database
        self.auth = auth
        self.images = images
    }

    private var posts: DatabaseReference { database.reference(withPath: TimelinePost.collection) }

    private func currentUID() throws(TimelineError) -> String {
        guard let uid = auth.currentUser?.uid else { throw .signedOut }
        return uid
    }

    // MARK: Sharing

    /// Uploads the photo to `timeline/<uid>/<post id>.<extension>`, then creates the post (as the
    /// web app: upload first, so a post never points at a missing photo). The caption is trimmed;
    /// a blank one is left out.
    public func share(
        photo: Data, contentType: String, fileExtension: String, caption: String, as author: TimelineUser,
        onProgress: (@Sendable (Double) -> Void)? = nil
    ) async throws -> TimelinePost {
        let uid = try currentUID()
        try ImageController.validate(photo, contentType: contentType)
        let caption = caption.trimmingWhitespace
        guard caption.count <= 2000 else { throw TimelineError.invalidInput("A caption has at most 2000 characters.") }
        guard let id = posts.childByAutoId().key else { throw TimelineError.refused("No post id") }
        let path = ImageController.path(uid: uid, postID: id, fileExtension: fileExtension)
        let stored = try await images.upload(photo, contentType: contentType, to: path, onProgress: onProgress)
        var post = TimelinePost(
            identifier: id, uid: uid, username: author.username, image: stored.path, imageURL: stored.downloadURL,
            caption: caption.isEmpty ? nil : caption
        )
        do {
            try await post.save(in: database)
        } catch {
            try? await images.delete(at: stored.path)  // no post points at it
            throw TimelineError(error)
        }
        return post
    }

    // MARK: Reading

    /// One post, or nil when it does not exist (any more).
    public func post(_ id: String) async throws -> TimelinePost? {
        let snapshot = try await posts.child(id).getData()
        guard snapshot.exists() else { return nil }
        return try snapshot.decoded(as: TimelinePost.self)
    }

    /// The query of one person's posts (the index the rules declare on `uid`).
    public func postsQuery(by uid: String) -> DatabaseQuery {
        posts.queryOrdered(byChild: "uid").queryEqual(toValue: uid)
    }

    /// One person's posts, newest first.
    public func posts(by uid: String) async throws -> [TimelinePost] {
        try await postsQuery(by: uid).getDecodedChildren(as: TimelinePost.self).values.newestFirst()
    }

    /// The signed-in user's timeline, read once: their follows, then every person's posts
    /// fetched concurrently; returns when all are done.
    public func timeline() async throws -> [TimelinePost] {
        let me = try currentUID()
        let follows = try await database.reference(withPath: TimelineUser.collection).child(me).child("follows").getData()
        let uids = [me] + follows.children.filter { $0.value as? Bool == true }.map(\.key)
        return try await timeline(of: uids)
    }

    /// The posts of `uids`, each person's fetched at once in a task group, merged newest first.
    public func timeline(of uids: [String]) async throws -> [TimelinePost] {
        let lists = try await withThrowingTaskGroup(of: [TimelinePost].self) { group in
            for uid in Set(uids) {
                group.addTask { try await self.posts(by: uid) }
            }
            var lists: [[TimelinePost]] = []
            for try await list in group { lists.append(list) }
            return lists
        }
        return Self.merge(lists)
    }

    /// Posts from several people, newest first (push ids sort by creation time), each once.
    public static func merge(_ lists: [[TimelinePost]]) -> [TimelinePost] {
        var seen = Set<String>()
        return lists.joined().filter { seen.insert($0.id).inserted }.newestFirst()
    }

    // MARK: Likes and comments

    /// Likes the post as the signed-in user (`posts/<id>/likes/<uid>: true`).
    public func like(_ postID: String) async throws {
        try await write(posts.child(postID).child("likes").child(try currentUID()), true)
    }

    public func unlike(_ postID: String) async throws {
        try await write(posts.child(postID).child("likes").child(try currentUID()), nil)
    }

    /// Adds a comment as the signed-in user; the text is trimmed and must not be empty.
    public func comment(on postID: String, text: String, as author: TimelineUser) async throws -> TimelineComment {
        let text = text.trimmingWhitespace
        guard !text.isEmpty else { throw TimelineError.invalidInput("Write a comment first.") }
        guard text.count <= 1000 else { throw TimelineError.invalidInput("A comment has at most 1000 characters.") }
        var comment = TimelineComment(postID: postID, uid: try currentUID(), username: author.username, text: text)
        do {
            try await comment.save(in: database)
        } catch {
            throw TimelineError(error)
        }
        return comment
    }

    public func delete(_ comment: TimelineComment) async throws {
        do {
            try await comment.delete(in: database)
        } catch {
            throw TimelineError(error)
        }
    }

    /// Deletes the post, then its photo (the post first: the photo of a post the rules keep must stay).
    public func delete(_ post: TimelinePost) async throws {
        do {
            try await post.delete(in: database)
        } catch {
            throw TimelineError(error)
        }
        try? await images.delete(at: post.image)
    }

    private func write(_ location: DatabaseReference, _ value: Bool?) async throws {
        do {
            _ = try await location.setValue(value)
        } catch {
            throw TimelineError(error)
        }
    }
}

extension Sequence<TimelinePost> {
    /// Newest first: push ids sort by creation time.
    public func newestFirst() -> [TimelinePost] {
        sorted { $0.id > $1.id }
    }
}
