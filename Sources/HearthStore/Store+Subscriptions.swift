import Hearth

extension Store {
    /// Subscribes to the children of `query` as `T`: dispatches ``ObjectSubscribed`` (true) at once,
    /// then ``ObjectAdded`` for each child and, as they happen, ``ObjectChanged`` and
    /// ``ObjectRemoved``; a child that does not decode dispatches ``ObjectErrored`` instead. Events
    /// are dispatched in the order the database raised them, across all of the store's
    /// subscriptions. If the server refuses the listen (rules), the subscription ends with
    /// ``ObjectSubscribed`` (false) carrying the error.
    ///
    /// `isSubscribed` names the flag in the state that the reducer sets from ``ObjectSubscribed``:
    /// while it is true, subscribing again does nothing, so a view that appears twice does not
    /// listen twice. The same key path ends the subscription in ``unsubscribe(_:)``.
    ///
    /// For example:
    /// ```swift
    /// let recent = database.reference(withPath: "posts").queryLimited(toLast: 50)
    /// store.subscribe(Post.self, to: recent, isSubscribed: \.posts.isSubscribed)
    /// ```
    ///
    /// - Returns: Whether a new subscription started (false when the flag was already set, or a
    ///   subscription with this flag is still listening).
    @discardableResult
    public func subscribe<T: Decodable & Sendable>(
        _ type: T.Type,
        to query: DatabaseQuery,
        isSubscribed: KeyPath<State, Bool>,
        decoder: Database.Decoder? = nil
    ) -> Bool {
        // Checked and set on the main actor with no suspension between: two calls cannot both pass.
        guard !state[keyPath: isSubscribed], subscriptions[isSubscribed] == nil else { return false }
        let id = nextSubscriptionID
        nextSubscriptionID += 1
        dispatch(ObjectSubscribed<T>(isSubscribed: true))

        let inbox = openInbox()
        let handles = [DataEventType.childAdded, .childChanged, .childRemoved].map { eventType in
            query.observe(
                eventType,
                with: { snapshot in inbox.yield((id, .action(Self.action(for: eventType, snapshot, as: T.self, decoder: decoder)))) },
                withCancel: { error in inbox.yield((id, .refused(error as? DatabaseError ?? DatabaseError(.other, "\(error)")))) }
            )
        }
        subscriptions[isSubscribed] = ActiveSubscription(
            id: id, listeners: SubscriptionListeners(query: query, handles: handles),
            ended: { error in ObjectSubscribed<T>(isSubscribed: false, error: error) }
        )
        return true
    }

    /// Ends the subscription started with the flag `isSubscribed`: its listeners are removed (the
    /// client stops listening to the server), events not yet dispatched are dropped, and
    /// ``ObjectSubscribed`` (false) is dispatched.
    ///
    /// ```swift
    /// store.unsubscribe(\.posts.isSubscribed)
    /// ```
    ///
    /// - Returns: Whether there was such a subscription.
    @discardableResult
    public func unsubscribe(_ isSubscribed: KeyPath<State, Bool>) -> Bool {
        guard subscriptions[isSubscribed] != nil else { return false }
        end(isSubscribed, error: nil)
        return true
    }

    /// How many subscriptions are listening.
    package var activeSubscriptionCount: Int { subscriptions.count }

    /// Ends every subscription (a test ending with some left over).
    package func unsubscribeAll() {
        for key in Array(subscriptions.keys) { end(key, error: nil) }
    }

    private func end(_ isSubscribed: KeyPath<State, Bool>, error: DatabaseError?) {
        guard let subscription = subscriptions.removeValue(forKey: isSubscribed) else { return }
        subscription.listeners.remove()
        if subscriptions.isEmpty { inbox = nil }
        dispatch(subscription.ended(error))
    }

    /// The stream all subscriptions' listeners feed, with the task that dispatches from it; opened
    /// by the first subscription. One stream for all keeps the order the database raised events in,
    /// across subscriptions. Unbounded: every event changes the state, and dropping one would leave
    /// it wrong. The database's callbacks run on its serial callback queue, so the order holds.
    private func openInbox() -> AsyncStream<(Int, SubscriptionEvent)>.Continuation {
        if let inbox { return inbox.continuation }
        let (events, continuation) = AsyncStream.makeStream(of: (Int, SubscriptionEvent).self, bufferingPolicy: .unbounded)
        let task = Task { [weak self] in
            for await (id, event) in events {
                guard let self else { return }
                self.deliver(event, from: id)
            }
        }
        inbox = SubscriptionInbox(continuation: continuation, task: task)
        return continuation
    }

    private func deliver(_ event: SubscriptionEvent, from id: Int) {
        // Events still buffered from a subscription that has ended are dropped.
        guard let key = subscriptions.first(where: { $0.value.id == id })?.key else { return }
        switch event {
        case .action(let action): dispatch(action)
        case .refused(let error): end(key, error: error)
        }
    }

    /// The action for one child event; decoding happens here, on the callback queue, not on the
    /// main actor.
    private nonisolated static func action<T: Decodable & Sendable>(
        for eventType: DataEventType, _ snapshot: DataSnapshot, as type: T.Type, decoder: Database.Decoder?
    ) -> any Action {
        let decoded = Result { () throws(SnapshotDecodingError) in try snapshot.decoded(as: T.self, decoder: decoder) }
        switch (eventType, decoded) {
        case (.childRemoved, _):
            return ObjectRemoved<T>(key: snapshot.key, object: try? decoded.get())
        case (.childChanged, .success(let object)):
            return ObjectChanged(key: snapshot.key, object: object)
        case (_, .success(let object)):
            return ObjectAdded(key: snapshot.key, object: object)
        case (_, .failure(let error)):
            return ObjectErrored<T>(error: error)
        }
    }
}

/// What a subscription's listeners hand to the main actor.
enum SubscriptionEvent: Sendable {
    case action(any Action)
    case refused(DatabaseError)
}

/// A subscription in a store.
struct ActiveSubscription {
    let id: Int
    let listeners: SubscriptionListeners
    /// The ``ObjectSubscribed`` (false) for the subscription's type.
    let ended: @Sendable (DatabaseError?) -> any Action
}

/// A subscription's observers on the database, removed when the subscription ends or, at the
/// latest, when the store that holds them goes away.
final class SubscriptionListeners: Sendable {
    private let query: DatabaseQuery
    private let handles: [DatabaseHandle]

    init(query: DatabaseQuery, handles: [DatabaseHandle]) {
        self.query = query
        self.handles = handles
    }

    func remove() {
        // Removing a handle twice is harmless: the database ignores unknown handles.
        for handle in handles { query.removeObserver(withHandle: handle) }
    }

    deinit { remove() }
}

/// The stream the store's subscriptions feed and the task that dispatches from it. Dropped when
/// the last subscription ends (or with the store), which ends the task.
final class SubscriptionInbox: Sendable {
    let continuation: AsyncStream<(Int, SubscriptionEvent)>.Continuation
    private let task: Task<Void, Never>

    init(continuation: AsyncStream<(Int, SubscriptionEvent)>.Continuation, task: Task<Void, Never>) {
        self.continuation = continuation
        self.task = task
    }

    deinit {
        continuation.finish()
        task.cancel()
    }
}
