// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseDatabase`).
//
// A Timeline user: `users/<uid>` = { username, bio?, url?, follows: { <uid>: true } }. Named
// TimelineUser so it does not clash with FirebaseAuth's `User`. Also Codable, for the modern
// `setValue(from:)` / `data(as:)` forms (see UserController+Async.swift).

import Foundation
import Hearth

public struct TimelineUser: FirebaseModel, Codable, Equatable {
    public var identifier: String? = nil
    public var username: String
    public var bio: String?
    public var url: String?
    /// The uids this user follows, as stored: `follows/<uid>: true`.
    public var follows: [String: Bool]?

    public var endpoint: String { return "users" }

    /// The uids this user follows.
    public var followedIdentifiers: [String] {
        return (follows ?? [:]).filter { $0.value }.map { $0.key }.sorted()
    }

    public func isFollowing(_ user: TimelineUser) -> Bool {
        guard let other = user.identifier else { return false }
        return follows?[other] == true
    }

    enum CodingKeys: String, CodingKey {
        case username, bio, url, follows
    }

    public init(identifier: String?, username: String, bio: String? = nil, url: String? = nil, follows: [String: Bool]? = nil) {
        self.identifier = identifier
        self.username = username
        self.bio = bio
        self.url = url
        self.follows = follows
    }

    public init?(snapshot: DataSnapshot) {
        guard let json = snapshot.value as? [String: Any],
              let username = json["username"] as? String else { return nil }
        self.identifier = snapshot.key
        self.username = username
        self.bio = json["bio"] as? String
        self.url = json["url"] as? String
        self.follows = json["follows"] as? [String: Bool]
    }

    public var dictionary: [String: Any] {
        var json: [String: Any] = ["username": username]
        if let bio = bio { json["bio"] = bio }
        if let url = url { json["url"] = url }
        if let follows = follows, !follows.isEmpty { json["follows"] = follows }
        return json
    }
}
