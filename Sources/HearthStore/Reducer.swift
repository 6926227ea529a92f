/// The pure function that folds an action into the state: the only place state changes.
///
/// A reducer does no I/O and dispatches nothing; work that has to wait goes in an ``Effect``.
/// Reducers for parts of the state combine into one for the whole with ``combine(_:)`` and
/// ``scope(_:_:)``.
///
/// For example:
/// ```swift
/// struct AppState: Equatable, Sendable {
///     var posts = SubscribedObjects<Post>()
///     var userID: String?
/// }
///
/// let appReducer = Reducer<AppState>.combine(
///     .scope(\.posts, .subscribedObjects(Post.self)),
///     Reducer { state, action in
///         if let login = action as? UserLoggedIn { state.userID = login.userID }
///         if action is UserLoggedOut { state.userID = nil }
///     }
/// )
/// ```
public struct Reducer<State>: Sendable {
    private let body: @Sendable (inout State, any Action) -> Void

    /// A reducer that runs `body` for every action.
    public init(_ body: @escaping @Sendable (inout State, any Action) -> Void) {
        self.body = body
    }

    /// Folds `action` into `state`.
    public func reduce(_ state: inout State, _ action: any Action) {
        body(&state, action)
    }

    /// A reducer that runs `reducers` in order.
    public static func combine(_ reducers: Reducer<State>...) -> Reducer<State> {
        Reducer { state, action in
            for reducer in reducers { reducer.reduce(&state, action) }
        }
    }

    /// A reducer that runs `child` on the part of the state at `keyPath`.
    public static func scope<Child>(_ keyPath: any WritableKeyPath<State, Child> & Sendable, _ child: Reducer<Child>) -> Reducer<State> {
        Reducer { state, action in child.reduce(&state[keyPath: keyPath], action) }
    }
}
