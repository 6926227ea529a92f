// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseDatabase`).
//
// A post: `posts/<pushId>` = { uid, username, image (a Storage path), caption?, comments: {…},
// likes: { <uid>: true } }. Push IDs sort by time, so the newest post has the greatest identifier.

import Foundation
import Hearth

public struct Post: FirebaseModel, Equatable {
    public var identifier: String?
    public let uid: String
    public let username: String
    /// The image's path in Storage, e.g. `images/<postId>.jpg`.
    public var image: String
    public var caption: String?
    public var comments: [Comment]
    public var likes: [Like]

    public var endpoint: String { return "posts" }

    public var commentCount: Int { return comments.count }
    public var likeCount: Int { return likes.count }

    public func isLiked(by uid: String) -> Bool {
        return likes.contains { $0.uid == uid }
    }

    public init(uid: String, username: String, image: String, caption: String? = nil, identifier: String? = nil) {
        self.identifier = identifier
        self.uid = uid
        self.username = username
        self.image = image
        self.caption = caption
        self.comments = []
        self.likes = []
    }

    public init?(snapshot: DataSnapshot) {
        guard let json = snapshot.value as? [String: Any],
              let uid = json["uid"] as? String,
              let username = json["username"] as? String,
              let image = json["image"] as? String else { return nil }
        self.identifier = snapshot.key
        self.uid = uid
        self.username = username
        self.image = image
        self.caption = json["caption"] as? String

        var comments: [Comment] = []
        for case let child as DataSnapshot in snapshot.childSnapshot(forPath: "comments").children {
            if let comment = Comment(snapshot: child) {
                comments.append(comment)
            }
        }
        // Push IDs: oldest first.
        self.comments = comments.sorted { ($0.identifier ?? "") < ($1.identifier ?? "") }

        var likes: [Like] = []
        for case let child as DataSnapshot in snapshot.childSnapshot(forPath: "likes").children {
            if let like = Like(snapshot: child) {
                likes.append(like)
            }
        }
        self.likes = likes
    }

    /// What a new post writes (comments and likes are written on their own).
    public var dictionary: [String: Any] {
        var json: [String: Any] = ["uid": uid, "username": username, "image": image]
        if let caption = caption { json["caption"] = caption }
        return json
    }
}
