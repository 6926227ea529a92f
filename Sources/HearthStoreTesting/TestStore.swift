import HearthStore
import Testing

/// A ``Store`` for exhaustive tests: send an action and state exactly how the state changes, then
/// receive every action the effects dispatched, in order, each with its state change. Anything
/// left unasserted is a test failure (recorded with Swift Testing's `Issue.record`): a state change
/// the test did not describe, an action received but not asserted, an effect still running or a
/// subscription still listening at ``finish(timeout:sourceLocation:)``.
///
/// Database helpers run on the wrapped ``store``; what they dispatch arrives with ``receive(_:timeout:sourceLocation:assert:)``.
/// Awaited actions have a deadline (``timeout``), so a missing action fails instead of hanging.
///
/// For example:
/// ```swift
/// @MainActor @Test func loggingIn() async {
///     let store = TestStore(initialState: AppState(), reducer: appReducer)
///     store.send(LoginTapped()) { $0.isLoggingIn = true }
///     store.store.logIn(email: "ada@example.com", password: "correct horse", using: auth)
///     await store.receive(UserLoggedIn.self) { state, action in
///         state.isLoggingIn = false
///         state.userID = action.userID
///     }
///     await store.finish()
/// }
/// ```
@MainActor
public final class TestStore<State: Sendable & Equatable> {
    /// The store under test; call its helpers (subscribe, write, auth) to start effects.
    public let store: Store<State>
    /// The state as asserted so far.
    public private(set) var state: State
    /// How long ``receive(_:timeout:sourceLocation:assert:)`` and ``finish(timeout:sourceLocation:)``
    /// wait by default. Generous: it only matters when something is broken, and a loaded machine
    /// must not trip it.
    public var timeout: Duration

    /// Actions dispatched by anything but ``send(_:sourceLocation:assert:)``, with the state after each.
    private var received: [(action: any Action, state: State)] = []
    private var isSending = false
    private var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
    private var nextWaiterID = 0

    /// A test store starting from `initialState`, with the reducer and effects of the app.
    public init(
        initialState: State,
        reducer: Reducer<State>,
        effects: (@MainActor @Sendable (any Action, State) -> Effect<State>?)? = nil,
        timeout: Duration = .seconds(30)
    ) {
        store = Store(initialState: initialState, reducer: reducer, effects: effects)
        state = initialState
        self.timeout = timeout
        store.dispatchObserver = { [weak self] action, state in
            guard let self, !self.isSending else { return }
            self.received.append((action, state))
            self.wake()
        }
        store.effectEnded = { [weak self] in self?.wake() }
    }

    /// Dispatches `action` and checks that the state changed exactly as `update` describes (no
    /// closure: the state must not change). Received actions must all be asserted first.
    ///
    /// ```swift
    /// store.send(Increment()) { $0.count = 1 }
    /// ```
    public func send(_ action: any Action, sourceLocation: SourceLocation = #_sourceLocation, assert update: ((inout State) -> Void)? = nil) {
        if !received.isEmpty {
            Issue.record("Must assert \(received.count) received action(s) before sending \(action): \(describe(received))", sourceLocation: sourceLocation)
            received.removeAll()
        }
        isSending = true
        store.dispatch(action)
        isSending = false
        var expected = state
        update?(&expected)
        check(expected: expected, actual: store.state, after: "sending \(action)", sourceLocation)
        state = store.state
    }

    /// Waits for the next action an effect or subscription dispatched, checks that it equals
    /// `expected`, and that the state changed exactly as `update` describes.
    ///
    /// ```swift
    /// await store.receive(ObjectAdded(key: "p1", object: post)) { $0.posts.objects["p1"] = post }
    /// ```
    public func receive<A: Action & Equatable>(
        _ expected: A,
        timeout: Duration? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        assert update: ((inout State) -> Void)? = nil
    ) async {
        guard let (action, after) = await next(described: "\(expected)", timeout: timeout, sourceLocation) else { return }
        if let action = action as? A, action == expected {
            assertChange(to: after, by: "\(expected)", sourceLocation) { update?(&$0) }
        } else {
            Issue.record("Expected to receive \(expected), received \(action)", sourceLocation: sourceLocation)
            state = after
        }
    }

    /// Waits for the next action, checks that it is an `A` (for actions holding values the test
    /// cannot know in advance: new push IDs, user ids, server messages), and that the state changed
    /// exactly as `update` describes given the action.
    ///
    /// ```swift
    /// let login = await store.receive(UserLoggedIn.self) { state, action in state.userID = action.userID }
    /// ```
    ///
    /// - Returns: The action, or nil when it did not arrive or was not an `A`.
    @discardableResult
    public func receive<A: Action>(
        _ type: A.Type,
        timeout: Duration? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        assert update: ((inout State, A) -> Void)? = nil
    ) async -> A? {
        await receive(A.self, timeout: timeout, sourceLocation: sourceLocation, where: { _ in true }, assert: update)
    }

    /// As the `receive(_:timeout:sourceLocation:assert:)` that takes a type; the action must also satisfy
    /// `matches`.
    ///
    /// ```swift
    /// await store.receive(UserAuthFailed.self, where: { $0.error.code == .logIn }) { state, failed in
    ///     state.authError = failed.error
    /// }
    /// ```
    @discardableResult
    public func receive<A: Action>(
        _ type: A.Type,
        timeout: Duration? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        where matches: (A) -> Bool,
        assert update: ((inout State, A) -> Void)? = nil
    ) async -> A? {
        guard let (action, after) = await next(described: "\(A.self)", timeout: timeout, sourceLocation) else { return nil }
        guard let typed = action as? A, matches(typed) else {
            Issue.record("Expected to receive a matching \(A.self), received \(action)", sourceLocation: sourceLocation)
            state = after
            return nil
        }
        assertChange(to: after, by: "\(typed)", sourceLocation) { update?(&$0, typed) }
        return typed
    }

    /// Ends the test: waits (up to `timeout`) for running effects, then fails on effects still
    /// running, actions received but not asserted, and subscriptions still listening. Stops them
    /// all, so nothing outlives the test.
    public func finish(timeout: Duration? = nil, sourceLocation: SourceLocation = #_sourceLocation) async {
        let limit = timeout ?? self.timeout
        let deadline = ContinuousClock.now + limit
        while store.runningEffectCount > 0, ContinuousClock.now < deadline {
            await waitForChange(until: deadline)
        }
        if store.runningEffectCount > 0 {
            Issue.record("\(store.runningEffectCount) effect(s) still running after \(limit)", sourceLocation: sourceLocation)
            store.cancelEffects()
        }
        if !received.isEmpty {
            Issue.record("\(received.count) received action(s) not asserted: \(describe(received))", sourceLocation: sourceLocation)
            received.removeAll()
        }
        if store.activeSubscriptionCount > 0 {
            Issue.record("\(store.activeSubscriptionCount) subscription(s) still listening: unsubscribe before the test ends", sourceLocation: sourceLocation)
            isSending = true
            store.unsubscribeAll()
            isSending = false
        }
    }

    // MARK: Waiting

    /// The next received action, waiting for it up to the timeout.
    private func next(described description: String, timeout: Duration?, _ sourceLocation: SourceLocation) async -> (any Action, State)? {
        let limit = timeout ?? self.timeout
        let deadline = ContinuousClock.now + limit
        while received.isEmpty {
            guard ContinuousClock.now < deadline else {
                Issue.record("Timed out after \(limit) waiting to receive \(description)", sourceLocation: sourceLocation)
                return nil
            }
            await waitForChange(until: deadline)
        }
        return received.removeFirst()
    }

    /// Returns when an action is received or an effect ends, or at `deadline`.
    private func waitForChange(until deadline: ContinuousClock.Instant) async {
        let id = nextWaiterID
        nextWaiterID += 1
        // Everything here runs on the main actor, so the timer cannot wake a later waiter: it checks
        // the id, and it is cancelled before another waiter exists.
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            guard !Task.isCancelled, let self, self.waiter?.id == id else { return }
            self.wake()
        }
        await withCheckedContinuation { continuation in waiter = (id, continuation) }
        timer.cancel()
    }

    private func wake() {
        guard let waiter else { return }
        self.waiter = nil
        waiter.continuation.resume()
    }

    // MARK: Checking

    private func assertChange(to actual: State, by action: String, _ sourceLocation: SourceLocation, _ update: (inout State) -> Void) {
        var expected = state
        update(&expected)
        check(expected: expected, actual: actual, after: "receiving \(action)", sourceLocation)
        state = actual
    }

    private func check(expected: State, actual: State, after event: String, _ sourceLocation: SourceLocation) {
        guard expected != actual else { return }
        Issue.record("State after \(event) is not the expected state (− expected, + actual):\n\(Self.diff(expected, actual))", sourceLocation: sourceLocation)
    }

    private func describe(_ actions: [(action: any Action, state: State)]) -> String {
        actions.map { "\($0.action)" }.joined(separator: ", ")
    }

    /// A line diff of the two values' dumps.
    static func diff(_ expected: State, _ actual: State) -> String {
        func lines(_ value: State) -> [String] {
            var text = ""
            dump(value, to: &text)
            return text.split(separator: "\n").map(String.init)
        }
        let old = lines(expected)
        let new = lines(actual)
        let difference = new.difference(from: old)
        func offset(_ change: CollectionDifference<String>.Change) -> Int {
            switch change {
            case .insert(let offset, _, _), .remove(let offset, _, _): offset
            }
        }
        let removed = Set(difference.removals.map(offset))
        let inserted = Set(difference.insertions.map(offset))
        var output: [String] = []
        var i = 0
        var j = 0
        while i < old.count || j < new.count {
            if i < old.count, removed.contains(i) {
                output.append("− \(old[i])")
                i += 1
            } else if j < new.count, inserted.contains(j) {
                output.append("+ \(new[j])")
                j += 1
            } else {
                output.append("  \(old[i])")
                i += 1
                j += 1
            }
        }
        return output.joined(separator: "\n")
    }
}
