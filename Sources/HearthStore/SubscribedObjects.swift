import Hearth

/// The state of one subscription: its flag and the objects its actions delivered, kept by the
/// ``Reducer/subscribedObjects(_:)`` reducer. Use it as a part of the app state, or write a reducer
/// of your own for a different shape.
///
/// For example:
/// ```swift
/// struct AppState: Equatable, Sendable { var posts = SubscribedObjects<Post>() }
/// let reducer = Reducer<AppState>.scope(\.posts, .subscribedObjects(Post.self))
/// // store.subscribe(Post.self, to: postsQuery, isSubscribed: \.posts.isSubscribed)
/// ```
public struct SubscribedObjects<T: Sendable>: Sendable {
    /// Set by ``ObjectSubscribed``: the flag that prevents a second subscription.
    public var isSubscribed = false
    /// The children that decoded, by key.
    public var objects: [String: T] = [:]
    /// The children that did not decode, by key (their data is not in ``objects``).
    public var failures: [String: SnapshotDecodingError] = [:]
    /// Why the server ended the subscription, if it did.
    public var error: DatabaseError?

    public init(isSubscribed: Bool = false, objects: [String: T] = [:], failures: [String: SnapshotDecodingError] = [:], error: DatabaseError? = nil) {
        self.isSubscribed = isSubscribed
        self.objects = objects
        self.failures = failures
        self.error = error
    }

    /// The objects in key order: creation order for push IDs.
    public var inKeyOrder: [T] {
        objects.sorted { $0.key < $1.key }.map(\.value)
    }
}

extension SubscribedObjects: Equatable where T: Equatable {}

extension Reducer {
    /// Folds the subscription actions for `T` into a ``SubscribedObjects``. Subscribing again starts
    /// from an empty collection (the subscription delivers every child again); unsubscribing keeps
    /// the last objects.
    public static func subscribedObjects<T: Sendable>(_ type: T.Type) -> Reducer<SubscribedObjects<T>> where State == SubscribedObjects<T> {
        Reducer { state, action in
            switch action {
            case let subscribed as ObjectSubscribed<T>:
                if subscribed.isSubscribed { state = SubscribedObjects(isSubscribed: true) }
                state.isSubscribed = subscribed.isSubscribed
                state.error = subscribed.error
            case let added as ObjectAdded<T>:
                state.objects[added.key] = added.object
                state.failures[added.key] = nil
            case let changed as ObjectChanged<T>:
                state.objects[changed.key] = changed.object
                state.failures[changed.key] = nil
            case let removed as ObjectRemoved<T>:
                state.objects[removed.key] = nil
                state.failures[removed.key] = nil
            case let errored as ObjectErrored<T>:
                // Data that no longer decodes replaces what the object was.
                state.objects[errored.key] = nil
                state.failures[errored.key] = errored.error
            default:
                break
            }
        }
    }
}
