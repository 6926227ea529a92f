import Hearth

/// A person in the Timeline app, stored at `users/<uid>` in the web app's shape:
/// `{username, bio?, url?, follows: {<uid>: true}}`. The identifier is the account's uid.
///
/// For example:
/// ```swift
/// var ada = TimelineUser(uid: user.uid, username: "ada", bio: "Counting engines")
/// try await ada.save(in: database)        // merges username and bio into users/<uid>
/// ```
public struct TimelineUser: DatabaseModel, Equatable, Identifiable {
    public var identifier: String?
    public var username: String
    public var bio: String?
    public var url: String?
    /// The people this user follows (uid → `true`, as the rules require).
    public var follows: [String: Bool]?

    public var endpoint: String { TimelineUser.collection }
    /// Where every user is kept.
    public static let collection = "users"

    public init(uid: String, username: String, bio: String? = nil, url: String? = nil, follows: [String: Bool]? = nil) {
        self.identifier = uid
        self.username = username
        self.bio = bio
        self.url = url
        self.follows = follows
    }

    /// The account's uid (the key under `users/`).
    public var uid: String { identifier ?? "" }
    public var id: String { uid }

    /// The uids this user follows, sorted.
    public var followedUIDs: [String] { (follows ?? [:]).filter(\.value).map(\.key).sorted() }

    public func isFollowing(_ uid: String) -> Bool { follows?[uid] == true }
}

/// The fields of the sign-up and profile forms, checked as the rules check them (so a refusal is
/// explained before the write): a username of 1–30 characters, a bio and a web address of at most
/// 300. Blank optional fields are left out.
///
/// For example:
/// ```swift
/// let profile = try ProfileForm(username: " ada ", bio: "", url: "https://ada.example").validated()
/// // ProfileFields(username: "ada", bio: nil, url: "https://ada.example")
/// ```
public struct ProfileForm: Equatable, Sendable {
    public var username: String
    public var bio: String
    public var url: String

    public init(username: String = "", bio: String = "", url: String = "") {
        self.username = username
        self.bio = bio
        self.url = url
    }

    /// The form of an existing profile (for editing).
    public init(_ user: TimelineUser) {
        self.init(username: user.username, bio: user.bio ?? "", url: user.url ?? "")
    }

    /// The trimmed fields, or the first problem.
    public func validated() throws(TimelineError) -> ProfileFields {
        let username = username.trimmingWhitespace
        let bio = bio.trimmingWhitespace
        let url = url.trimmingWhitespace
        guard !username.isEmpty else { throw .invalidInput("Choose a username.") }
        guard username.count <= 30 else { throw .invalidInput("A username has at most 30 characters.") }
        guard bio.count <= 300 else { throw .invalidInput("A bio has at most 300 characters.") }
        guard url.count <= 300 else { throw .invalidInput("A web address has at most 300 characters.") }
        return ProfileFields(username: username, bio: bio.isEmpty ? nil : bio, url: url.isEmpty ? nil : url)
    }
}

/// A valid profile: what ``ProfileForm/validated()`` returns and ``UserController`` writes.
public struct ProfileFields: Equatable, Sendable {
    public var username: String
    public var bio: String?
    public var url: String?

    public init(username: String, bio: String? = nil, url: String? = nil) {
        self.username = username
        self.bio = bio
        self.url = url
    }
}

extension String {
    /// Without leading and trailing spaces and newlines (Foundation-free, as the web app's `trim()`).
    var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
