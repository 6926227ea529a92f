import HearthAccess
public import HearthCore

/// A write submitted to a ``DatabaseInstance``: what to change, an optional compare-and-set, and who asks.
public struct WriteRequest: Sendable {
    public enum Operation: Sendable {
        /// Replace the value at the path (PUT, POST to a new child, DELETE as `null`).
        case set(DatabasePath, JSONValue)
        /// Set only the priority of the node at the path (`PUT …/.priority.json`).
        case setPriority(DatabasePath, JSONValue)
        /// Multi-location update (PATCH): each relative path replaced; all or nothing.
        case update(DatabasePath, [(path: DatabasePath, value: JSONValue)])
    }

    public var operation: Operation
    /// `if-match`: the write happens only if the ETag of the location still equals this.
    public var ifMatch: String?
    /// The WebSocket protocol's compare-and-set: the write happens only if the data's hash still equals this.
    public var expectedHash: String?
    public var identity: Identity
    /// The most leaves (removed plus written) the write may touch; nil for no limit.
    public var maximumLeaves: Int?

    public init(
        _ operation: Operation,
        ifMatch: String? = nil,
        expectedHash: String? = nil,
        identity: Identity,
        maximumLeaves: Int? = nil
    ) {
        self.operation = operation
        self.ifMatch = ifMatch
        self.expectedHash = expectedHash
        self.identity = identity
        self.maximumLeaves = maximumLeaves
    }

    /// The location the request addresses.
    public var path: DatabasePath {
        switch operation {
        case .set(let p, _), .setPriority(let p, _), .update(let p, _): p
        }
    }
}

/// What became of a write.
public enum WriteOutcome: Sendable {
    /// Durably written. `value` is the new data at the request's location, `written` the resolved data
    /// of the request (what PUT and PATCH echo).
    case written(value: Node, written: WrittenData)
    /// The `if-match` ETag (or the expected hash) did not match; nothing was written. Carries the current data.
    case preconditionFailed(current: Node)
}

/// The resolved data of a write, for echoing it back and for `patch` events.
public enum WrittenData: Sendable {
    case node(Node)
    case update([(path: DatabasePath, node: Node)])
}

/// Why the engine refused a write.
public typealias WriteError = CodedError<WriteErrorCode>

/// What went wrong, for matching in code.
public enum WriteErrorCode: Sendable, Equatable {
    case invalidData, permissionDenied, tooLarge, unavailable
}
