/// Asynchronous work for a ``Store``: an action creator that reads the state and dispatches
/// actions as results arrive. It runs on the main actor, so reading `store.state` between awaits
/// always sees the current state.
///
/// Run one with ``Store/run(_:)``, or return one from the store's `effects` function so an action
/// starts it.
///
/// For example:
/// ```swift
/// let loadProfile = Effect<AppState> { store in
///     guard let uid = store.state.userID else { return }
///     let snapshot = try? await database.reference(withPath: "users/\(uid)").getData()
///     if let profile = try? snapshot?.decoded(as: Profile.self) { store.dispatch(ProfileLoaded(profile: profile)) }
/// }
/// store.run(loadProfile)
/// ```
public struct Effect<State: Sendable>: Sendable {
    let operation: @MainActor @Sendable (Store<State>) async -> Void

    public init(_ operation: @escaping @MainActor @Sendable (Store<State>) async -> Void) {
        self.operation = operation
    }
}
