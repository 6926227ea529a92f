import HearthStorage

/// What the writer runs between batches in a cluster.
package enum ReplicaControl: Sendable {
    /// Apply the log entries committed since the last applied one.
    case catchUp
    /// Apply the entries owners pushed (``PushInbox``), reading the log if one is missing.
    case applyPushed
    /// This node took the lease: apply the log up to the lease's last entry, check that the lease is
    /// still this node's, then take writes.
    case becomeOwner(DatabaseLease)
    /// Another node owns the database now.
    case stepDown
    /// Give the database to the node that should own it: stop taking writes, then release the lease.
    case handOff
}
