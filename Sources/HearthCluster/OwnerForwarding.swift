import HearthCore
import HearthEngine
import HearthStorage
import Logging

/// Forwarding writes to a database's owner: the cluster's side of ``ClusterLink/sendToOwner(_:of:replica:)``.
extension ClusterContext {
    /// Sends a batch to the owner, giving up (nil) as soon as the lease it was sent under moves to another
    /// node or epoch: a hung owner must not hold up the writes behind this batch past the lease time.
    private func forwardWatchingLease(
        _ batch: [DatabaseInstance.Pending], _ database: DatabaseInstance, replica: DatabaseReplica, to address: String, lease: DatabaseLease
    ) async throws -> OwnerClient.Answer? {
        let requests = batch.map(\.request)
        let namespace = database.namespace
        let client = self.client
        let secret = self.secret
        return try await withThrowingTaskGroup(of: OwnerClient.Answer?.self) { group in
            group.addTask { try await client.forward(requests, namespace: namespace, to: address, secret: secret) }
            group.addTask {
                while true {
                    try await Task.sleep(for: .milliseconds(25))
                    if let now = replica.cachedLease, now.owner != lease.owner || now.epoch != lease.epoch { return nil }
                }
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// One batch to the owner: retried while it surely did not arrive (no owner, refused, not the
    /// owner any more), failed as unknown when it may have.
    package func sendToOwner(_ batch: [DatabaseInstance.Pending], of database: DatabaseInstance, replica: DatabaseReplica) async {
        let deadline = ContinuousClock.now + DatabaseReplica.forwardPatience
        var lease = replica.cachedLease
        while true {
            if let current = lease, current.owner == nodeName, replica.isOwner {
                // This node owns the database (again): its own writer runs the writes.
                database.requeue(batch)
                return
            }
            if let current = lease, current.owner != nodeName, let address = current.ownerAddress {
                do {
                    guard let answer = try await forwardWatchingLease(batch, database, replica: replica, to: address, lease: current) else {
                        // The owner hung and lost the lease with the writes in flight: they may have committed
                        // before it stopped, or not at all (it can never commit them now).
                        for pending in batch { pending.complete(.failure(WriteError.unknownOutcome)) }
                        return
                    }
                    let refused = answer.outcomes.allSatisfy { outcome in
                        if case .failure(let error) = outcome { return error.message == WriteError.noOwner.message }
                        return false
                    }
                    if refused && ContinuousClock.now < deadline {
                        // The node gave the database up as the writes arrived and applied none: send them
                        // again, in the same order, to the new owner.
                        try? await Task.sleep(for: .milliseconds(20))
                        lease = try? await replica.shared.lease()
                        replica.noteLease(lease)
                        continue
                    }
                    // Pipelined: the next batch goes out while this one waits for the log to arrive here.
                    Task {
                        let reached = await replica.wait(for: answer.sequence, timeout: DatabaseReplica.forwardPatience)
                        if !reached {
                            for pending in batch { pending.complete(.failure(WriteError.behind)) }
                            return
                        }
                        for (pending, outcome) in zip(batch, answer.outcomes) {
                            pending.complete(outcome.mapError { $0 })
                        }
                    }
                    database.expectCommitted(answer.sequence)
                    return
                } catch let error as OwnerClient.Failure where !error.mayHaveArrived {
                    // Not applied anywhere: try again, with the lease read again.
                } catch {
                    logger.warning(
                        "A forwarded write's outcome is unknown",
                        metadata: ["hearth.namespace": "\(database.namespace)", "hearth.error": "\(error)"]
                    )
                    for pending in batch { pending.complete(.failure(WriteError.unknownOutcome)) }
                    return
                }
            }
            if ContinuousClock.now > deadline {
                for pending in batch { pending.complete(.failure(WriteError.noOwner)) }
                return
            }
            try? await Task.sleep(for: .milliseconds(20))
            lease = try? await replica.shared.lease()
            replica.noteLease(lease)
        }
    }
}
