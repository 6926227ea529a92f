import Hearth

/// A shared photo, stored at `posts/<push id>` in the web app's shape: `{uid, username, image (the
/// photo's storage path), imageURL, caption?, likes: {<uid>: true}, comments: {<id>: comment}}`.
/// Push ids sort by creation time, so ordering by identifier is ordering by age.
///
/// For example:
/// ```swift
/// let post = try TimelinePost(snapshot: try await database.reference(withPath: "posts/\(id)").getData())
/// print(post.username, post.likeCount, post.sortedComments.map(\.text))
/// ```
public struct TimelinePost: DatabaseModel, Equatable, Identifiable {
    public var identifier: String?
    /// The author's uid.
    public var uid: String
    /// The author's username when the post was shared.
    public var username: String
    /// The photo's path in the bucket (`timeline/<uid>/<post id>.<extension>`).
    public var image: String
    /// Where to download the photo (its download URL, with the token that lets anyone signed in read it).
    public var imageURL: String?
    public var caption: String?
    public var likes: [String: Bool]?
    public var comments: [String: TimelineComment]?

    public var endpoint: String { TimelinePost.collection }
    /// Where every post is kept.
    public static let collection = "posts"

    public init(
        identifier: String? = nil, uid: String, username: String, image: String, imageURL: String? = nil, caption: String? = nil,
        likes: [String: Bool]? = nil, comments: [String: TimelineComment]? = nil
    ) {
        self.identifier = identifier
        self.uid = uid
        self.username = username
        self.image = image
        self.imageURL = imageURL
        self.caption = caption
        self.likes = likes
        self.comments = comments
    }

    public var id: String { identifier ?? "" }
    public var likeCount: Int { (likes ?? [:]).values.filter { $0 }.count }
    public var commentCount: Int { comments?.count ?? 0 }
    public func isLiked(by uid: String) -> Bool { likes?[uid] == true }

    /// The comments, oldest first (by push id), each with its identifier and post set.
    public var sortedComments: [TimelineComment] {
        (comments ?? [:]).sorted { $0.key < $1.key }.map { key, comment in
            var comment = comment
            comment.identifier = key
            comment.postID = id
            return comment
        }
    }
}

/// A comment on a post, stored at `posts/<post id>/comments/<push id>` as `{uid, username, text}`.
///
/// For example:
/// ```swift
/// var comment = TimelineComment(postID: post.id, uid: me.uid, username: me.username, text: "Lovely")
/// try await comment.save(in: database)     // a new push id under the post's comments
/// try await comment.delete(in: database)
/// ```
public struct TimelineComment: DatabaseModel, Equatable, Identifiable {
    public var identifier: String?
    /// The post it belongs to: part of its location, never a stored field.
    public var postID: String
    public var uid: String
    public var username: String
    public var text: String

    public var endpoint: String { "\(TimelinePost.collection)/\(postID)/comments" }

    public init(identifier: String? = nil, postID: String, uid: String, username: String, text: String) {
        self.identifier = identifier
        self.postID = postID
        self.uid = uid
        self.username = username
        self.text = text
    }

    public var id: String { identifier ?? "" }

    private enum CodingKeys: String, CodingKey {
        case identifier, uid, username, text
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        identifier = try container.decodeIfPresent(String.self, forKey: .identifier)
        postID = ""
        uid = try container.decode(String.self, forKey: .uid)
        username = try container.decode(String.self, forKey: .username)
        text = try container.decode(String.self, forKey: .text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uid, forKey: .uid)
        try container.encode(username, forKey: .username)
        try container.encode(text, forKey: .text)
    }
}

/// What went wrong, worded for a person (the web app's messages where it has them).
public enum TimelineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A form field is not acceptable; the message says which and why.
    case invalidInput(String)
    /// Nobody is signed in.
    case signedOut
    /// The server refused (the rules, a wrong password, …); the message says why.
    case refused(String)

    public var description: String {
        switch self {
        case .invalidInput(let message), .refused(let message): message
        case .signedOut: "Log in first."
        }
    }
}
