import Hearth

// The actions the store's write helpers dispatch when the server confirms or refuses a write.

/// ``Store/createObject(_:at:underNewChildID:encoder:)`` succeeded: `object` is at `key`.
public struct ObjectCreated<T: Sendable>: Action {
    /// The key of the location written (the new push ID when created under one).
    public let key: String
    public let object: T

    public init(key: String, object: T) {
        self.key = key
        self.object = object
    }
}

/// ``Store/updateObject(_:at:encoder:)`` succeeded: `changes` were merged at `key`.
public struct ObjectUpdated<T: Sendable>: Action {
    public let key: String
    public let changes: T

    public init(key: String, changes: T) {
        self.key = key
        self.changes = changes
    }
}

/// ``Store/removeObject(_:at:)`` succeeded: nothing is at `key` any more.
public struct ObjectDeleted<T: Sendable>: Action, Equatable {
    public let key: String

    public init(key: String) {
        self.key = key
    }
}

/// A create, update or remove of a `T` failed; the error says which and why.
///
/// ```swift
/// if let failed = action as? ObjectWriteFailed<Post>, failed.error.underlying.code == .permissionDenied {
///     state.alert = "You can't change this post"
/// }
/// ```
public struct ObjectWriteFailed<T: Sendable>: Action, Equatable {
    public let error: ObjectWriteError

    public init(error: ObjectWriteError) {
        self.error = error
    }
}

/// Why a write from the store failed: the operation, the location's key and the database's error.
public struct ObjectWriteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The write that failed.
    public enum Operation: Sendable, Hashable {
        case create, update, remove
    }

    public let operation: Operation
    /// The key of the location written.
    public let key: String
    /// The database's error (for example ``DatabaseError/Code/permissionDenied``); a value that did
    /// not encode is ``DatabaseError/Code/invalidData``.
    public let underlying: DatabaseError

    public init(_ operation: Operation, key: String, underlying: DatabaseError) {
        self.operation = operation
        self.key = key
        self.underlying = underlying
    }

    public var description: String { "\(operation) at \(key) failed: \(underlying)" }
}

extension ObjectCreated: Equatable where T: Equatable {}
extension ObjectUpdated: Equatable where T: Equatable {}
