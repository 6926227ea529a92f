import Dispatch
import Foundation
public import Observation
import Synchronization

/// The children of a query as an array kept in the query's order, with every change reported as an
/// index delta — the Swift counterpart of FirebaseUI's `FUIArray` and `FirebaseArray`.
///
/// Report changes to a delegate, a closure (``onChange``) or an `AsyncSequence` (``changes``); SwiftUI
/// observes ``elements`` directly (the array is `Observable`). The deltas, applied in order to a copy of
/// the array, always reproduce it. Elements are snapshots, or any type a transform makes of them:
/// typed arrays decode each child with `Codable`, and a child that does not decode is left out (and
/// reported to ``onError``) without disturbing the order of the others.
///
/// ```swift
/// struct Message: Codable, Sendable { var text: String }
///
/// let messages = SyncedArray(query: db.reference(withPath: "messages").queryOrdered(byChild: "sentAt"),
///                            decoding: Message.self)
/// messages.onChange = { change in print(change) }   // .inserted(Message(text: "hi"), at: 0), …
/// messages.start()
/// for await change in messages.changes { … }           // or as an AsyncSequence
/// ```
///
/// Events are applied on the database's `callbackQueue`; ``onChange`` and the delegate are called there,
/// one change at a time, after the array reflects it.
public final class SyncedArray<Element: Sendable>: Observable, Sendable {
    /// The query whose children this array holds.
    public let query: DatabaseQuery
    private let transform: @Sendable (DataSnapshot) throws -> Element
    private let state = Mutex(State())
    private let registrar = ObservationRegistrar()

    struct State {
        var children = OrderedChildren<Element>()
        var handles: [DatabaseHandle] = []
        var onChange: (@Sendable (SyncedArrayChange<Element>) -> Void)?
        var onError: (@Sendable (SyncedArrayError) -> Void)?
        var delegate: WeakDelegate<Element>?
        var subscribers: [UInt64: AsyncStream<SyncedArrayChange<Element>>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
    }

    /// An array of `query`'s children made by `transform` (which may throw: that child is left out).
    public init(query: DatabaseQuery, transform: @escaping @Sendable (DataSnapshot) throws -> Element) {
        self.query = query
        self.transform = transform
    }

    deinit {
        stop()
    }

    // MARK: Starting and stopping

    /// Starts observing the query (idempotent). Children arrive as `inserted` changes.
    public func start() {
        let alreadyStarted = state.withLock { !$0.handles.isEmpty }
        guard !alreadyStarted else { return }
        // Weak: the observers must not keep the array alive; `deinit` stops them.
        let cancel: @Sendable (any Error) -> Void = { [weak self] error in self?.report(.cancelled(error)) }
        let handles = [
            query.observe(.childAdded, andPreviousSiblingKeyWith: { [weak self] snapshot, previous in
                self?.apply(snapshot) { children, key, element in children.add(key, element, after: previous) }
            }, withCancel: cancel),
            query.observe(.childChanged, andPreviousSiblingKeyWith: { [weak self] snapshot, _ in
                self?.apply(snapshot) { children, key, element in children.change(key, element) }
            }, withCancel: nil),
            query.observe(.childRemoved, andPreviousSiblingKeyWith: { [weak self] snapshot, _ in
                self?.apply(snapshot, converting: false) { children, key, _ in children.remove(key) }
            }, withCancel: nil),
            query.observe(.childMoved, andPreviousSiblingKeyWith: { [weak self] snapshot, previous in
                self?.apply(snapshot) { children, key, element in children.move(key, element, after: previous) }
            }, withCancel: nil),
        ]
        state.withLock { $0.handles = handles }
    }

    /// Stops observing the query. The elements stay as they were; ``changes`` sequences end.
    public func stop() {
        let (handles, subscribers) = state.withLock { state in
            defer {
                state.handles = []
                state.subscribers = [:]
            }
            return (state.handles, Array(state.subscribers.values))
        }
        for handle in handles { query.removeObserver(withHandle: handle) }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// Whether the array is observing its query.
    public var isStarted: Bool { state.withLock { !$0.handles.isEmpty } }

    // MARK: Reading

    /// The elements, in the query's order.
    public var elements: [Element] {
        registrar.access(self, keyPath: \.elements)
        return state.withLock { $0.children.elements }
    }

    /// The number of elements.
    public var count: Int {
        registrar.access(self, keyPath: \.elements)
        return state.withLock { $0.children.count }
    }

    /// The element at `index`.
    public subscript(index: Int) -> Element {
        registrar.access(self, keyPath: \.elements)
        return state.withLock { $0.children.element(at: index) }
    }

    /// The keys of the elements, in order.
    public var keys: [String] {
        registrar.access(self, keyPath: \.elements)
        return state.withLock { $0.children.keys }
    }

    /// The index of the child `key`, if it is in the array.
    public func index(ofKey key: String) -> Int? {
        state.withLock { $0.children.index(ofKey: key) }
    }

    // MARK: Being told

    /// Called with each change, on the database's callback queue, after the array reflects it.
    public var onChange: (@Sendable (SyncedArrayChange<Element>) -> Void)? {
        get { state.withLock { $0.onChange } }
        set { state.withLock { $0.onChange = newValue } }
    }

    /// Called when a child does not convert, or the server refuses or revokes the query.
    public var onError: (@Sendable (SyncedArrayError) -> Void)? {
        get { state.withLock { $0.onError } }
        set { state.withLock { $0.onError = newValue } }
    }

    /// Told of each change, like ``onChange``. Held weakly.
    public var delegate: (any SyncedArrayDelegate<Element>)? {
        get { state.withLock { $0.delegate?.value } }
        set { state.withLock { $0.delegate = newValue.map(WeakDelegate.init) } }
    }

    /// Every change from now on, as an `AsyncSequence`; it ends when the array stops or the task is
    /// cancelled. Unbounded buffering on purpose: a consumer that skipped a delta could no longer
    /// reproduce the array, and the changes are at most what the query holds.
    public var changes: AsyncStream<SyncedArrayChange<Element>> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncedArrayChange<Element>.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: Applying events

    private func apply(
        _ snapshot: DataSnapshot,
        converting: Bool = true,
        _ update: (inout OrderedChildren<Element>, String, Element?) -> SyncedArrayChange<Element>?
    ) {
        let key = snapshot.key
        var element: Element?
        var failure: (any Error)?
        if converting {
            do { element = try transform(snapshot) } catch { failure = error }
        }
        if let failure { report(.conversionFailed(key: key, path: snapshot.ref.url, error: failure)) }
        var change: SyncedArrayChange<Element>?
        registrar.withMutation(of: self, keyPath: \.elements) {
            change = state.withLock { update(&$0.children, key, element) }
        }
        guard let change else { return }
        let (onChange, delegate, subscribers) = state.withLock { ($0.onChange, $0.delegate?.value, Array($0.subscribers.values)) }
        onChange?(change)
        delegate?.syncedArray(self, didApply: change)
        for subscriber in subscribers { subscriber.yield(change) }
    }

    private func report(_ error: SyncedArrayError) {
        let (onError, delegate) = state.withLock { ($0.onError, $0.delegate?.value) }
        onError?(error)
        delegate?.syncedArray(self, didFailWith: error)
    }
}

extension SyncedArray where Element == DataSnapshot {
    /// An array of `query`'s children as snapshots.
    public convenience init(query: DatabaseQuery) {
        self.init(query: query) { $0 }
    }
}

extension SyncedArray where Element: Decodable {
    /// An array of `query`'s children decoded as `type`; a child that does not decode is left out and
    /// reported to ``onError``.
    public convenience init(query: DatabaseQuery, decoding type: Element.Type, decoder: Database.Decoder = Database.Decoder()) {
        self.init(query: query) { snapshot in try snapshot.data(as: type, decoder: decoder) }
    }
}

/// Told of a ``SyncedArray``'s changes (FirebaseUI's `FUICollectionDelegate`): either each change as
/// one ``SyncedArrayChange`` (``syncedArray(_:didApply:)``), or — when that is not implemented — one
/// callback per kind, with the indexes, as FirebaseArray's delegate has them.
///
/// ```swift
/// final class MessagesScreen: SyncedArrayDelegate, @unchecked Sendable {
///     func syncedArray(_ array: SyncedArray<Message>, didAdd message: Message, at index: Int) { … }
///     func syncedArray(_ array: SyncedArray<Message>, didChange message: Message, at index: Int) { … }
///     func syncedArray(_ array: SyncedArray<Message>, didRemove message: Message, at index: Int) { … }
///     func syncedArray(_ array: SyncedArray<Message>, didMove message: Message, from: Int, to: Int) { … }
/// }
/// ```
public protocol SyncedArrayDelegate<Element>: AnyObject, Sendable {
    associatedtype Element: Sendable
    /// The array changed; `change` says where. By default, calls the callback for the change's kind.
    func syncedArray(_ array: SyncedArray<Element>, didApply change: SyncedArrayChange<Element>)
    /// `element` was added at `index`.
    func syncedArray(_ array: SyncedArray<Element>, didAdd element: Element, at index: Int)
    /// The element at `index` changed to `element`.
    func syncedArray(_ array: SyncedArray<Element>, didChange element: Element, at index: Int)
    /// `element` was removed from `index`.
    func syncedArray(_ array: SyncedArray<Element>, didRemove element: Element, at index: Int)
    /// `element` moved from `fromIndex` to `toIndex`.
    func syncedArray(_ array: SyncedArray<Element>, didMove element: Element, from fromIndex: Int, to toIndex: Int)
    /// A child did not convert, or the query was refused or revoked.
    func syncedArray(_ array: SyncedArray<Element>, didFailWith error: SyncedArrayError)
}

extension SyncedArrayDelegate {
    public func syncedArray(_ array: SyncedArray<Element>, didApply change: SyncedArrayChange<Element>) {
        switch change {
        case .inserted(let element, let index): syncedArray(array, didAdd: element, at: index)
        case .updated(let element, let index): syncedArray(array, didChange: element, at: index)
        case .removed(let element, let index): syncedArray(array, didRemove: element, at: index)
        case .moved(let element, let from, let to): syncedArray(array, didMove: element, from: from, to: to)
        }
    }
    public func syncedArray(_ array: SyncedArray<Element>, didAdd element: Element, at index: Int) {}
    public func syncedArray(_ array: SyncedArray<Element>, didChange element: Element, at index: Int) {}
    public func syncedArray(_ array: SyncedArray<Element>, didRemove element: Element, at index: Int) {}
    public func syncedArray(_ array: SyncedArray<Element>, didMove element: Element, from fromIndex: Int, to toIndex: Int) {}
    public func syncedArray(_ array: SyncedArray<Element>, didFailWith error: SyncedArrayError) {}
}

/// What can go wrong while a ``SyncedArray`` follows its query.
public enum SyncedArrayError: Error, Sendable {
    /// The child `key` (at `path`) did not convert to an element; it is left out of the array.
    case conversionFailed(key: String, path: String, error: any Error)
    /// The server refused or revoked the query (for example, rules deny reading it).
    case cancelled(any Error)
}

struct WeakDelegate<Element: Sendable>: Sendable {
    weak var value: (any SyncedArrayDelegate<Element>)?
    init(_ value: any SyncedArrayDelegate<Element>) { self.value = value }
}
