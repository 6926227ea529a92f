import Hearth
import Observation
import Synchronization

/// The single source of truth of an app: its state, changed only by dispatching actions through a
/// pure ``Reducer``, with asynchronous work in ``Effect``s (unidirectional data flow, as ReSwift).
///
/// The store lives on the main actor, so SwiftUI observes ``state`` directly (`@Observable`) and
/// every change happens where a UI can show it. Anything else can follow the state as an
/// `AsyncSequence` with ``states``. Database subscriptions, writes and auth flows are helpers on
/// the store that dispatch typed actions: see ``subscribe(_:to:isSubscribed:decoder:)``,
/// ``createObject(_:at:underNewChildID:encoder:)`` and ``logIn(email:password:using:)``.
///
/// For example:
/// ```swift
/// struct Counter: Equatable, Sendable { var count = 0 }
/// struct Increment: Action, Equatable {}
///
/// let store = Store(initialState: Counter(), reducer: Reducer { state, action in
///     if action is Increment { state.count += 1 }
/// })
/// store.dispatch(Increment())
/// print(store.state.count)  // 1
/// ```
@MainActor
@Observable
public final class Store<State: Sendable> {
    /// The current state. Reading it inside a SwiftUI body (or `withObservationTracking`) tracks it.
    public private(set) var state: State

    @ObservationIgnored private let reducer: Reducer<State>
    @ObservationIgnored private let effects: (@MainActor @Sendable (any Action, State) -> Effect<State>?)?
    @ObservationIgnored private let streams = StateStreams<State>()
    @ObservationIgnored private var runningEffects: [Int: Task<Void, Never>] = [:]
    @ObservationIgnored private var nextEffectID = 0
    @ObservationIgnored var subscriptions: [KeyPath<State, Bool>: ActiveSubscription] = [:]
    @ObservationIgnored var nextSubscriptionID = 0
    @ObservationIgnored var inbox: SubscriptionInbox?

    /// Called after each action is reduced, with the action and the new state (for `TestStore`).
    @ObservationIgnored package var dispatchObserver: (@MainActor (any Action, State) -> Void)?
    /// Called when an effect ends (for `TestStore`, which waits for effects).
    @ObservationIgnored package var effectEnded: (@MainActor () -> Void)?

    /// A store that starts from `initialState`.
    ///
    /// - Parameters:
    ///   - initialState: The state before any action.
    ///   - reducer: Folds every action into the state.
    ///   - effects: Called after each action is reduced, with the action and the new state; the
    ///     effect it returns runs at once. Keeps reducers pure while letting an action (a button
    ///     tap) start work (a write).
    public init(
        initialState: State,
        reducer: Reducer<State>,
        effects: (@MainActor @Sendable (any Action, State) -> Effect<State>?)? = nil
    ) {
        self.state = initialState
        self.reducer = reducer
        self.effects = effects
    }

    /// Reduces `action` into the state, publishes the new state, then starts the effect the
    /// store's `effects` function returns for it, if any.
    ///
    /// ```swift
    /// store.dispatch(UserLoggedOut())
    /// ```
    public func dispatch(_ action: any Action) {
        reducer.reduce(&state, action)
        streams.yield(state)
        dispatchObserver?(action, state)
        if let effect = effects?(action, state) { run(effect) }
    }

    /// Starts `effect`; the returned task ends when it does (await its `value` to wait).
    ///
    /// ```swift
    /// await store.run(Effect { store in store.dispatch(Refreshed()) }).value
    /// ```
    @discardableResult
    public func run(_ effect: Effect<State>) -> Task<Void, Never> {
        let id = nextEffectID
        nextEffectID += 1
        // The task holds the store until the effect ends; the store holds the task so tests can
        // wait for it. Nothing else keeps either alive.
        let task = Task {
            await effect.operation(self)
            self.runningEffects[id] = nil
            self.effectEnded?()
        }
        runningEffects[id] = task
        return task
    }

    /// The state now and after every action, as an `AsyncSequence`. Ending the loop or cancelling
    /// the task stops the stream.
    ///
    /// Buffering: the newest state only (`.bufferingNewest(1)`): a slow reader skips intermediate
    /// states but always gets the latest. To see every action, use a `TestStore`.
    ///
    /// ```swift
    /// for await state in store.states where state.userID != nil { break }
    /// ```
    public var states: AsyncStream<State> { streams.make(startingWith: state) }

    /// How many effects are running.
    package var runningEffectCount: Int { runningEffects.count }

    /// Cancels every running effect (a test ending with effects left over).
    package func cancelEffects() {
        for task in runningEffects.values { task.cancel() }
        runningEffects.removeAll()
    }
}

/// The continuations of ``Store/states``, behind a lock so a stream's termination (which can run on
/// any thread) can remove its own without a hop to the main actor.
final class StateStreams<State: Sendable>: Sendable {
    private let continuations = Mutex<(next: Int, all: [Int: AsyncStream<State>.Continuation])>((0, [:]))

    func make(startingWith current: State) -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(1))
        let id = continuations.withLock { state in
            defer { state.next += 1 }
            state.all[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.continuations.withLock { _ = $0.all.removeValue(forKey: id) }
        }
        continuation.yield(current)
        return stream
    }

    func yield(_ state: State) {
        for continuation in continuations.withLock({ Array($0.all.values) }) { continuation.yield(state) }
    }

    // The store is gone: no state will follow, so readers' loops end.
    deinit {
        for continuation in continuations.withLock({ Array($0.all.values) }) { continuation.finish() }
    }
}
