// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseDatabase`).
//
// A comment: `posts/<postId>/comments/<pushId>` = { post, uid, username, text }.

import Foundation
import Hearth

public struct Comment: FirebaseModel, Equatable {
    public var identifier: String?
    public let postIdentifier: String
    public let uid: String
    public let username: String
    public let text: String

    public var endpoint: String { return "posts/\(postIdentifier)/comments" }

    public init(postIdentifier: String, uid: String, username: String, text: String, identifier: String? = nil) {
        self.postIdentifier = postIdentifier
        self.uid = uid
        self.username = username
        self.text = text
        self.identifier = identifier
    }

    public init?(snapshot: DataSnapshot) {
        guard let json = snapshot.value as? [String: Any],
              let uid = json["uid"] as? String,
              let username = json["username"] as? String,
              let text = json["text"] as? String,
              let postIdentifier = json["post"] as? String ?? snapshot.ref.parent?.parent?.key else { return nil }
        self.identifier = snapshot.key
        self.postIdentifier = postIdentifier
        self.uid = uid
        self.username = username
        self.text = text
    }

    public var dictionary: [String: Any] {
        return ["post": postIdentifier, "uid": uid, "username": username, "text": text]
    }
}
