import Synchronization

/// A query's children kept in the query's order, for lists and table views (FirebaseUI's
/// `FUIArray`). Every change is reported as an index delta; applying a batch's deltas in order to a
/// copy of the previous array always reproduces the new one.
///
/// Batches end at the query's `value` event, so one write that touches several children arrives as
/// one batch. Unknown keys never trap: a removal of an unknown key is ignored, an unknown previous
/// sibling appends, a change or move of an unknown key inserts.
///
/// For example:
/// ```swift
/// let messages = SyncedArray(query: database.reference(withPath: "messages").queryLimited(toLast: 50))
/// messages.onChange = { changes in print(changes, messages.count) }
/// messages.start()
/// for await batch in messages.changes { apply(batch) }   // or the closure
/// ```
public final class SyncedArray: Sendable {
    /// One step of a batch, relative to the array as it is after the steps before it, with the key
    /// of the child concerned.
    public enum Change: Sendable, Hashable {
        case added(String, at: Int)
        case changed(String, at: Int)
        case removed(String, at: Int)
        case moved(String, from: Int, to: Int)
    }

    private struct State {
        var items: [DataSnapshot] = []
        var pending: [Change] = []
        var handles: [DatabaseHandle] = []
        var onChange: (@Sendable ([Change]) -> Void)?
        var listeners: [AsyncStream<[Change]>.Continuation] = []
        var isLoaded = false
    }

    /// The query whose children this array holds.
    public let query: DatabaseQuery
    private let state = Mutex(State())

    /// An array for `query`; call ``start()`` to fill it.
    public init(query: DatabaseQuery) {
        self.query = query
    }

    deinit {
        let handles = state.withLock { $0.handles }
        for handle in handles { query.removeObserver(withHandle: handle) }
    }

    /// The children, in order.
    public var items: [DataSnapshot] { state.withLock { $0.items } }

    public var keys: [String] { items.map(\.key) }

    public var count: Int { state.withLock { $0.items.count } }

    public subscript(index: Int) -> DataSnapshot { state.withLock { $0.items[index] } }

    /// Whether the first batch (the query's initial data) has arrived.
    public var isLoaded: Bool { state.withLock { $0.isLoaded } }

    /// The children decoded as `T`; a child that does not decode is reported as `.failure`.
    public func elements<T: Decodable>(as type: T.Type, decoder: Database.Decoder = Database.Decoder()) -> [Result<T, any Error>] {
        items.map { snapshot in Result { try snapshot.data(as: T.self, decoder: decoder) } }
    }

    /// Called on the database's callback queue with each batch.
    public var onChange: (@Sendable ([Change]) -> Void)? {
        get { state.withLock { $0.onChange } }
        set { state.withLock { $0.onChange = newValue } }
    }

    /// The batches as an `AsyncSequence` (unbounded buffering: every delta matters). Ends at ``stop()``
    /// or when the loop ends.
    public var changes: AsyncStream<[Change]> {
        let (stream, continuation) = AsyncStream<[Change]>.makeStream()
        state.withLock { $0.listeners.append(continuation) }
        return stream
    }

    /// Starts observing (idempotent).
    public func start() {
        let started = state.withLock { !$0.handles.isEmpty }
        guard !started else { return }
        var handles: [DatabaseHandle] = []
        for type in [DataEventType.childAdded, .childRemoved, .childChanged, .childMoved] {
            handles.append(query.observe(type, andPreviousSiblingKeyWith: { [weak self] snapshot, previous in
                self?.apply(type, snapshot, previous)
            }))
        }
        handles.append(query.observe(.value, with: { [weak self] _ in self?.endBatch() }))
        state.withLock { $0.handles = handles }
    }

    /// Stops observing; the array keeps its last contents and the change sequences end.
    public func stop() {
        let (handles, listeners) = state.withLock { state -> ([DatabaseHandle], [AsyncStream<[Change]>.Continuation]) in
            defer {
                state.handles = []
                state.listeners = []
            }
            return (state.handles, state.listeners)
        }
        for handle in handles { query.removeObserver(withHandle: handle) }
        for listener in listeners { listener.finish() }
    }

    private func apply(_ type: DataEventType, _ snapshot: DataSnapshot, _ previous: String?) {
        state.withLock { state in
            func index(of key: String) -> Int? { state.items.firstIndex { $0.key == key } }
            func insertionIndex() -> Int {
                guard let previous else { return 0 }
                return index(of: previous).map { $0 + 1 } ?? state.items.count
            }
            switch type {
            case .childAdded:
                if let existing = index(of: snapshot.key) {
                    state.items[existing] = snapshot
                    state.pending.append(.changed(snapshot.key, at: existing))
                } else {
                    let at = insertionIndex()
                    state.items.insert(snapshot, at: at)
                    state.pending.append(.added(snapshot.key, at: at))
                }
            case .childRemoved:
                guard let at = index(of: snapshot.key) else { return }
                state.items.remove(at: at)
                state.pending.append(.removed(snapshot.key, at: at))
            case .childChanged:
                if let at = index(of: snapshot.key) {
                    state.items[at] = snapshot
                    state.pending.append(.changed(snapshot.key, at: at))
                } else {
                    let at = insertionIndex()
                    state.items.insert(snapshot, at: at)
                    state.pending.append(.added(snapshot.key, at: at))
                }
            case .childMoved:
                if let from = index(of: snapshot.key) {
                    state.items.remove(at: from)
                    let to = insertionIndex()
                    state.items.insert(snapshot, at: to)
                    state.pending.append(.moved(snapshot.key, from: from, to: to))
                } else {
                    let at = insertionIndex()
                    state.items.insert(snapshot, at: at)
                    state.pending.append(.added(snapshot.key, at: at))
                }
            case .value:
                break
            }
        }
    }

    private func endBatch() {
        let (batch, onChange, listeners) = state.withLock { state -> ([Change], (@Sendable ([Change]) -> Void)?, [AsyncStream<[Change]>.Continuation]) in
            let first = !state.isLoaded
            state.isLoaded = true
            guard !state.pending.isEmpty || first else { return ([], nil, []) }
            defer { state.pending = [] }
            return (state.pending, state.onChange, state.listeners)
        }
        guard onChange != nil || !listeners.isEmpty else { return }
        onChange?(batch)
        for listener in listeners { listener.yield(batch) }
    }
}

extension SyncedArray.Change {
    /// Applies this step to a list of keys (a copy of the array's order, as a data source keeps it).
    public func apply(to keys: inout [String]) {
        switch self {
        case .added(let key, let at): keys.insert(key, at: at)
        case .changed(let key, let at): keys[at] = key
        case .removed(_, let at): keys.remove(at: at)
        case .moved(let key, let from, let to):
            keys.remove(at: from)
            keys.insert(key, at: to)
        }
    }
}
