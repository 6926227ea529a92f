import Hearth

// The actions a subscription dispatches (see `Store.subscribe(_:to:isSubscribed:decoder:)`), generic
// over the model type so a reducer matches only its own: `action as? ObjectAdded<Post>`.

/// A child appeared in a subscribed query (each existing child, then each new one), decoded as `T`.
///
/// ```swift
/// if let added = action as? ObjectAdded<Post> { state.posts[added.key] = added.object }
/// ```
public struct ObjectAdded<T: Sendable>: Action {
    /// The child's key (for a ``DatabaseModel``, also its identifier).
    public let key: String
    public let object: T

    public init(key: String, object: T) {
        self.key = key
        self.object = object
    }
}

/// A child of a subscribed query changed; `object` is its new value.
public struct ObjectChanged<T: Sendable>: Action {
    public let key: String
    public let object: T

    public init(key: String, object: T) {
        self.key = key
        self.object = object
    }
}

/// A child left a subscribed query (removed, or out of its range or limit).
///
/// `object` is its last value, or nil when that did not decode as `T`: a removal is reported by
/// key either way, so state that tracked the child (or its error) can drop it.
public struct ObjectRemoved<T: Sendable>: Action {
    public let key: String
    public let object: T?

    public init(key: String, object: T?) {
        self.key = key
        self.object = object
    }
}

/// A child of a subscribed query that has no data or does not decode as `T`. The error says where
/// (``SnapshotDecodingError/path``) and why.
///
/// ```swift
/// if let failed = action as? ObjectErrored<Post> { state.brokenPosts[failed.key] = failed.error }
/// ```
public struct ObjectErrored<T: Sendable>: Action, Equatable {
    public let error: SnapshotDecodingError

    public init(error: SnapshotDecodingError) {
        self.error = error
    }

    /// The child's key.
    public var key: String { error.key }
    /// The child's location, from the root.
    public var path: String { error.path }
}

/// A subscription for `T` started (`isSubscribed` true) or ended. It ends when unsubscribed
/// (`error` nil) or when the server refuses or revokes the listen (`error` says why, such as
/// ``DatabaseError/Code/permissionDenied``). A reducer keeps `isSubscribed` in the state: it is the
/// flag that stops a second subscription.
public struct ObjectSubscribed<T: Sendable>: Action, Equatable {
    public let isSubscribed: Bool
    public let error: DatabaseError?

    public init(isSubscribed: Bool, error: DatabaseError? = nil) {
        self.isSubscribed = isSubscribed
        self.error = error
    }
}

extension ObjectAdded: Equatable where T: Equatable {}
extension ObjectChanged: Equatable where T: Equatable {}
extension ObjectRemoved: Equatable where T: Equatable {}
