import Foundation
import HearthCore
import Synchronization

/// A location with an order, a range and a limit, to observe or read (FirebaseDatabase's
/// `DatabaseQuery`). Queries are immutable; the `query…` methods return new ones.
///
/// For example:
/// ```swift
/// let top = database.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 3)
/// let handle = top.observe(.childAdded) { snapshot in print(snapshot.key) }
/// top.removeObserver(withHandle: handle)
/// ```
public class DatabaseQuery: @unchecked Sendable {
    // Every stored property is an immutable value: instances are safe to share.
    /// The database this query belongs to.
    public let database: Database
    let path: DatabasePath
    let query: Query

    init(database: Database, path: DatabasePath, query: Query = .all) {
        self.database = database
        self.path = path
        self.query = query
    }

    var spec: QuerySpec { QuerySpec(path: path, query: query) }
    var repo: Repo { database.repo }

    /// The reference to the query's location.
    public var ref: DatabaseReference { DatabaseReference(database: database, path: path) }

    // MARK: Observing

    /// Calls `block` for every event of `eventType`; returns a handle for ``removeObserver(withHandle:)``.
    @discardableResult
    public func observe(_ eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void) -> DatabaseHandle {
        repo.addObserver(spec: spec, type: eventType, callback: { snapshot, _ in block(snapshot) }, cancel: nil)
    }

    /// As ``observe(_:with:)``, with `cancelBlock` called if the server refuses or revokes the listen.
    @discardableResult
    public func observe(
        _ eventType: DataEventType,
        with block: @escaping @Sendable (DataSnapshot) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        repo.addObserver(spec: spec, type: eventType, callback: { snapshot, _ in block(snapshot) }, cancel: cancelBlock)
    }

    /// Calls `block` with each snapshot and the key of the child before it in the query's order.
    @discardableResult
    public func observe(
        _ eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void
    ) -> DatabaseHandle {
        repo.addObserver(spec: spec, type: eventType, callback: block, cancel: nil)
    }

    @discardableResult
    public func observe(
        _ eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        repo.addObserver(spec: spec, type: eventType, callback: block, cancel: cancelBlock)
    }

    /// Calls `block` once, for the first event of `eventType`, then stops observing.
    public func observeSingleEvent(of eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void) {
        observeSingleEvent(of: eventType, andPreviousSiblingKeyWith: { snapshot, _ in block(snapshot) }, withCancel: nil)
    }

    /// As ``observeSingleEvent(of:with:)``, with `cancelBlock` called if the listen is refused.
    public func observeSingleEvent(
        of eventType: DataEventType,
        with block: @escaping @Sendable (DataSnapshot) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) {
        observeSingleEvent(of: eventType, andPreviousSiblingKeyWith: { snapshot, _ in block(snapshot) }, withCancel: cancelBlock)
    }

    /// Calls `block` once with the first event and the previous sibling's key.
    public func observeSingleEvent(
        of eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void
    ) {
        observeSingleEvent(of: eventType, andPreviousSiblingKeyWith: block, withCancel: nil)
    }

    /// As ``observeSingleEvent(of:andPreviousSiblingKeyWith:)``, with a cancel block.
    public func observeSingleEvent(
        of eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) {
        let once = Mutex<(fired: Bool, handle: DatabaseHandle?)>((false, nil))
        let repo = self.repo
        let handle = repo.addObserver(spec: spec, type: eventType, callback: { snapshot, previous in
            let (first, handle) = once.withLock { state -> (Bool, DatabaseHandle?) in
                defer { state.fired = true }
                return (!state.fired, state.handle)
            }
            guard first else { return }
            if let handle { repo.removeObserver(handle) }
            block(snapshot, previous)
        }, cancel: cancelBlock)
        // Callbacks run on the callback queue, after this assignment is visible under the lock.
        let fired = once.withLock { state -> Bool in
            state.handle = handle
            return state.fired
        }
        if fired { repo.removeObserver(handle) }
    }

    /// The first event of `eventType`, with the previous sibling's key.
    public func observeSingleEventAndPreviousSiblingKey(of eventType: DataEventType) async -> (DataSnapshot, String?) {
        await withCheckedContinuation { continuation in
            observeSingleEvent(of: eventType, andPreviousSiblingKeyWith: { continuation.resume(returning: ($0, $1)) })
        }
    }

    /// Reads the current value: from the client's complete data when it has it, else from the server.
    /// On an error the snapshot is `nil`, as in FirebaseDatabase.
    public func getData(completion block: @escaping @Sendable ((any Error)?, DataSnapshot?) -> Void) {
        let reference = ref
        let index = query.index
        let spec = spec
        repo.getValue(spec: spec) { result in
            switch result {
            case .success(let node):
                let shown = spec.loadsAllData ? node : spec.query.evaluate(on: node)
                block(nil, DataSnapshot(reference: reference, node: shown, index: index))
            case .failure(let error):
                block(error, nil)
            }
        }
    }

    /// Reads the current value once.
    ///
    /// ```swift
    /// let snapshot = try await ref.getData()
    /// ```
    public func getData() async throws -> DataSnapshot {
        try await withCheckedThrowingContinuation { continuation in
            getData { error, snapshot in
                if let snapshot { continuation.resume(returning: snapshot) } else { continuation.resume(throwing: error ?? DatabaseError(.other, "No data")) }
            }
        }
    }

    /// Stops one observer.
    public func removeObserver(withHandle handle: DatabaseHandle) {
        repo.removeObserver(handle)
    }

    /// Stops every observer at this query's location.
    public func removeAllObservers() {
        repo.removeAllObservers(at: path)
    }

    /// Keeps this query's data synchronized even without observers (until called with `false`).
    public func keepSynced(_ keepSynced: Bool) {
        repo.keepSynced(spec: spec, keepSynced)
    }

    // MARK: Building queries

    private func with(_ change: (inout Query) -> Void) -> DatabaseQuery {
        var query = self.query
        change(&query)
        return DatabaseQuery(database: database, path: path, query: query)
    }

    /// The first `limit` children in the query's order.
    public func queryLimited(toFirst limit: UInt) -> DatabaseQuery { with { $0.limit = .first(Int(limit)) } }

    /// The last `limit` children in the query's order.
    public func queryLimited(toLast limit: UInt) -> DatabaseQuery { with { $0.limit = .last(Int(limit)) } }

    /// Orders children by the value at `key` (a path) under each child.
    public func queryOrdered(byChild key: String) -> DatabaseQuery {
        with { $0.index = .child(Database.parsePath(key)) }
    }

    /// Orders children by key (the default order).
    public func queryOrderedByKey() -> DatabaseQuery { with { $0.index = .key } }
    /// Orders children by their own value.
    public func queryOrderedByValue() -> DatabaseQuery { with { $0.index = .value } }
    /// Orders children by priority.
    public func queryOrderedByPriority() -> DatabaseQuery { with { $0.index = .priority } }

    /// Children from `startValue` on (inclusive).
    public func queryStarting(atValue startValue: Any?) -> DatabaseQuery { queryStarting(atValue: startValue, childKey: nil) }

    /// Children from `startValue` on; among equal values, from the child `childKey` on.
    public func queryStarting(atValue startValue: Any?, childKey: String?) -> DatabaseQuery {
        with { $0.start = bound(startValue, childKey, inclusive: true, index: $0.index) }
    }

    /// Children strictly after `startValue`.
    public func queryStarting(afterValue startValue: Any?) -> DatabaseQuery { queryStarting(afterValue: startValue, childKey: nil) }

    /// Children after `startValue`; among equal values, after the child `childKey`.
    public func queryStarting(afterValue startValue: Any?, childKey: String?) -> DatabaseQuery {
        with { $0.start = bound(startValue, childKey, inclusive: false, index: $0.index) }
    }

    /// Children up to `endValue` (inclusive).
    public func queryEnding(atValue endValue: Any?) -> DatabaseQuery { queryEnding(atValue: endValue, childKey: nil) }

    /// Children up to `endValue`; among equal values, up to the child `childKey`.
    public func queryEnding(atValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        with { $0.end = bound(endValue, childKey, inclusive: true, index: $0.index) }
    }

    /// Children strictly before `endValue`.
    public func queryEnding(beforeValue endValue: Any?) -> DatabaseQuery { queryEnding(beforeValue: endValue, childKey: nil) }

    /// Children before `endValue`; among equal values, before the child `childKey`.
    public func queryEnding(beforeValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        with { $0.end = bound(endValue, childKey, inclusive: false, index: $0.index) }
    }

    /// Children whose ordered value equals `value`.
    public func queryEqual(toValue value: Any?) -> DatabaseQuery { queryEqual(toValue: value, childKey: nil) }

    /// The child whose ordered value is `value` and whose key is `childKey`.
    public func queryEqual(toValue value: Any?, childKey: String?) -> DatabaseQuery {
        with {
            $0.start = bound(value, childKey, inclusive: true, index: $0.index)
            $0.end = bound(value, childKey, inclusive: true, index: $0.index)
        }
    }

    private func bound(_ value: Any?, _ childKey: String?, inclusive: Bool, index: QueryIndex) -> Query.Bound {
        guard let json = try? FoundationValue.json(from: value), let node = Node(primitive: json) else {
            fatalError("Hearth: query bounds must be strings, numbers, booleans or nil")
        }
        return Query.Bound(value: node, name: childKey.map { Query.BoundName($0) }, inclusive: inclusive)
    }
}
