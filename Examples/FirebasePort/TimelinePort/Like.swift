// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseDatabase`).
//
// A like: `posts/<postId>/likes/<uid>` = true — one per user and post, keyed by the liker's uid (so
// the identifier is the uid and the stored value is `true`, as the app's security rules want).

import Foundation
import Hearth

public struct Like: FirebaseModel, Equatable {
    /// The liker's uid.
    public var identifier: String?
    public let postIdentifier: String

    public var endpoint: String { return "posts/\(postIdentifier)/likes" }

    public var uid: String { return identifier ?? "" }

    public init(postIdentifier: String, uid: String) {
        self.postIdentifier = postIdentifier
        self.identifier = uid
    }

    public init?(snapshot: DataSnapshot) {
        guard snapshot.value as? Bool == true,
              let postIdentifier = snapshot.ref.parent?.parent?.key else { return nil }
        self.identifier = snapshot.key
        self.postIdentifier = postIdentifier
    }

    public var dictionary: [String: Any] {
        return ["post": postIdentifier, "uid": uid]
    }

    /// Stored as `true` under the liker's uid.
    public var firebaseValue: Any { return true }
}
