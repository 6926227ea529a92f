import Foundation
import HearthCore

/// The data a transaction block reads and changes (FirebaseDatabase's `MutableData`). Only valid
/// inside the block; not `Sendable`.
///
/// For example:
/// ```swift
/// ref.runTransactionBlock { data in
///     data.value = ((data.value as? Int) ?? 0) + 1
///     return .success(withValue: data)
/// }
/// ```
public final class MutableData {
    /// Shared by a root and the children made from it.
    final class Storage {
        var node: Node
        /// Ms since 1970 on the database's clock, for `ServerValue.timestamp()` assigned in the block.
        let now: () -> Double
        init(node: Node, now: @escaping () -> Double) {
            self.node = node
            self.now = now
        }
    }

    let storage: Storage
    let path: DatabasePath
    /// The key of the location the transaction runs on (for the root of the data).
    private let rootKey: String?

    init(node: Node, key: String?, now: @escaping () -> Double) {
        storage = Storage(node: node, now: now)
        path = .root
        rootKey = key
    }

    private init(storage: Storage, path: DatabasePath) {
        self.storage = storage
        self.path = path
        rootKey = nil
    }

    var node: Node {
        get { storage.node.child(at: path) }
        set { storage.node = storage.node.setting(newValue, at: path) }
    }

    /// The data here as Foundation values; assign to change it (`nil` removes it).
    public var value: Any? {
        get { FoundationValue.value(of: node) }
        set {
            guard let json = try? FoundationValue.json(from: newValue) else { return }
            let existing = node
            let context = ServerValueContext(now: storage.now().rounded(), existing: existing)
            guard let converted = try? Node(json: json, depth: path.count, context: context) else { return }
            node = converted.withPriority(converted.priority ?? (converted.isLeaf == existing.isLeaf ? existing.priority : nil))
        }
    }

    /// The priority here; assign to change it.
    public var priority: Any? {
        get { node.priority.map(FoundationValue.priorityValue) }
        set {
            guard let json = try? FoundationValue.priorityJSON(newValue) else { return }
            node = node.withPriority(try? Node.convertPriority(json, context: nil))
        }
    }

    /// The last segment of the location.
    public var key: String? { path.last?.string ?? rootKey }

    /// Whether the data here is an object with at least one child.
    public func hasChildren() -> Bool { node.childCount > 0 }

    /// Whether there is data at a path below.
    public func hasChild(atPath path: String) -> Bool { !node.child(at: Database.parsePath(path)).isEmpty }

    /// The number of direct children.
    public var childrenCount: UInt { UInt(node.childCount) }

    /// The data at a path below, which can be changed through the result.
    public func childData(byAppendingPath path: String) -> MutableData {
        MutableData(storage: storage, path: self.path.appending(Database.parsePath(path)))
    }

    /// The children, in key order.
    public var children: [MutableData] {
        node.sortedChildren.map { MutableData(storage: storage, path: path.child($0.key)) }
    }
}

/// What a transaction block returns: the new data, or abort (FirebaseDatabase's `TransactionResult`).
public final class TransactionResult: Sendable {
    let committed: Bool
    let node: Node?

    private init(committed: Bool, node: Node?) {
        self.committed = committed
        self.node = node
    }

    /// Commit this data.
    public static func success(withValue value: MutableData) -> TransactionResult {
        TransactionResult(committed: true, node: value.storage.node)
    }

    /// Stop without writing; the completion gets `committed == false` and the current data.
    public static func abort() -> TransactionResult {
        TransactionResult(committed: false, node: nil)
    }
}

/// Placeholders the server replaces when it applies a write (FirebaseDatabase's `ServerValue`).
///
/// For example:
/// ```swift
/// ref.child("updatedAt").setValue(ServerValue.timestamp())
/// ref.child("likes").setValue(ServerValue.increment(1))
/// ```
public enum ServerValue {
    /// The server's time, in milliseconds since 1970.
    public static func timestamp() -> [AnyHashable: Any] { [".sv": "timestamp"] }

    /// The current number plus `delta` (or `delta` when there is no number).
    public static func increment(_ delta: NSNumber) -> [AnyHashable: Any] { [".sv": ["increment": delta]] }
}
