import HearthCore
import HearthStorage
import Logging

/// What a database's replica needs of the cluster it belongs to: the shared storage, the node's name,
/// which peers are live, the commit push, the metrics, and the way to the owner. ``ClusterContext``
/// implements it; the engine knows the cluster only through it.
package protocol ClusterLink: AnyObject, Sendable {
    var storage: any SharedDatabaseStorage { get }
    var nodeName: String { get }
    var logger: Logger { get }
    /// Whether a peer's push stream to this node is live (it then pushes its commits here).
    func isPeerLive(_ node: String) -> Bool
    /// Pushes an entry this node committed to the nodes that follow it.
    func publishCommitted(namespace: String, _ entry: LogEntry)
    /// Counts a log entry applied here, pushed by its owner or read from the log.
    func noteApplied(fromPush: Bool)
    /// Sends a batch of writes to the database's owner and completes each write with its outcome
    /// once this node's tree shows it (or requeues them here if this node owns the database again).
    func sendToOwner(_ batch: [DatabaseInstance.Pending], of database: DatabaseInstance, replica: DatabaseReplica) async
}

extension WriteError {
    /// A forwarded write whose owner failed while storing it.
    package static let unknownOutcome = WriteError(
        .unavailable, "The database's owner failed while storing the write, which may or may not have happened; read it back, then try again"
    )
    package static let noOwner = WriteError(.unavailable, "No node owns the database right now; try again")
    package static let behind = WriteError(.unavailable, "This node fell behind the database's log; try again")
}
