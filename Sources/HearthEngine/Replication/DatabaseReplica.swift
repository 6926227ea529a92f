import HearthCore
import HearthRules
import HearthStorage
import Logging
import Synchronization

/// This node's part in a database that a cluster shares: whether it owns it (and with which epoch), how
/// far it has applied the change log, who waits for which entry, and the writes it forwards to the owner.
///
/// The tree itself stays in ``DatabaseInstance``; its writer task is the only one that applies entries, so the
/// log and local writes never interleave.
///
/// For example:
/// ```swift
/// if database.replica?.isOwner == false { try await database.readBarrier() }
/// ```
package final class DatabaseReplica: Sendable {
    /// How long a write waits for an owner to appear, and for the log to bring its result here.
    package static let forwardPatience: Duration = .seconds(5)

    package enum Role: Sendable, Equatable {
        case follower
        case owner(epoch: Int64)
    }

    struct State {
        var role: Role = .follower
        /// The last log entry the published tree includes.
        var applied: Int64
        /// The last entry this node committed as the owner.
        var lastCommitted: Int64 = 0
        /// Entries this node committed (and published) past entries it has not applied yet (a rules
        /// change another node appended in between): skipped when the log reaches them.
        var ownAhead: Set<Int64> = []
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
        var catchUpQueued = false
        /// The lease as last read, for forwarding writes to the owner.
        var lease: DatabaseLease?
        /// Since when the database has had no live owner, as this node sees it.
        var orphanedSince: ContinuousClock.Instant?
        /// The storage session during which this node last saw its lease (as owner) in the storage; its
        /// tree answers alone only while that session lasts.
        var verifiedGeneration: Int?
        /// A `becomeOwner` is queued for the writer: do not claim again meanwhile.
        var claimPending = false
        /// Group commits the owner started, and the ones whose tree it published (or gave up on): a
        /// commit is visible to other nodes before this node publishes it, so a read here waits for it.
        var commitsStarted: Int64 = 0
        var commitsSettled: Int64 = 0
        var settleWaiters: [(round: Int64, continuation: CheckedContinuation<Void, Never>)] = []
        /// Entries owners pushed, and the committed ones a push should bring.
        var inbox = PushInbox()
    }

    struct Waiter {
        var sequence: Int64
        var continuation: CheckedContinuation<Bool, Never>
        var timeout: Task<Void, Never>?
    }

    struct ForwardQueue {
        var pending: [DatabaseInstance.Pending] = []
        var running = false
    }

    package let shared: any SharedNamespaceStorage
    package let cluster: any ClusterLink
    let state: Mutex<State>
    let forwards = Mutex(ForwardQueue())

    init(shared: any SharedNamespaceStorage, cluster: any ClusterLink, applied: Int64) {
        self.shared = shared
        self.cluster = cluster
        self.state = Mutex(State(applied: applied))
    }

    package var role: Role { state.withLock { $0.role } }
    package var applied: Int64 { state.withLock { $0.applied } }
    package var isOwner: Bool { role != .follower }
    /// Whether this node surely owns the database now: it holds the lease, its heartbeat is fresh, and
    /// its heartbeats have not broken since it last saw the lease in the storage while fresh (others may
    /// have taken it then).
    package var isLeaseFresh: Bool {
        let (owner, verified) = state.withLock { ($0.role != .follower, $0.verifiedGeneration) }
        guard owner, let verified else { return false }
        return verified == cluster.storage.freshGeneration
    }

    /// The storage shows this node's lease as current, read after seeing ``SharedDatabaseStorage/freshGeneration``
    /// `generation`.
    package func verify(epoch: Int64, generation: Int) {
        state.withLock { state in
            if state.role == .owner(epoch: epoch) { state.verifiedGeneration = generation }
        }
    }

    /// Gives up ownership at once (not after the writer's current batch): another node has the lease,
    /// so this tree must no longer answer alone. The writer's commits are fenced anyway.
    package func demote() -> Bool {
        state.withLock { state in
            guard state.role != .follower else { return false }
            state.role = .follower
            state.verifiedGeneration = nil
            return true
        }
    }

    package func setClaimPending(_ pending: Bool) {
        state.withLock { $0.claimPending = pending }
    }

    package var isClaimPending: Bool { state.withLock { $0.claimPending } }
    /// The highest entry this node knows to be committed: what a forwarding node must reach.
    package var visibleSequence: Int64 { state.withLock { max($0.applied, $0.lastCommitted) } }

    func setRole(_ role: Role) {
        state.withLock { $0.role = role }
    }

    /// Records this node's own commit of `sequence`, whose tree it is about to publish.
    /// Returns false when entries of other nodes come before it, which the log must bring first.
    func committed(_ sequence: Int64) -> Bool {
        state.withLock { state in
            state.lastCommitted = sequence
            if sequence == state.applied + 1 {
                state.applied = sequence
                return true
            }
            state.ownAhead.insert(sequence)
            return false
        }
    }

    /// Marks every entry up to `sequence` applied.
    func markApplied(_ sequence: Int64) {
        state.withLock { state in
            state.applied = max(state.applied, sequence)
            state.ownAhead = state.ownAhead.filter { $0 > state.applied }
        }
    }

    func isOwnAhead(_ sequence: Int64) -> Bool {
        state.withLock { $0.ownAhead.contains(sequence) }
    }

    /// Returns true when a catch-up must be queued (none is queued yet).
    func queueCatchUp() -> Bool {
        state.withLock { state in
            if state.catchUpQueued { return false }
            state.catchUpQueued = true
            return true
        }
    }

    func catchUpStarted() {
        state.withLock { $0.catchUpQueued = false }
    }

    // MARK: Pushed entries

    /// Queues entries an owner pushed. Returns true when the writer must be asked to apply them.
    func receivePushed(_ entries: [LogEntry]) -> Bool {
        state.withLock { $0.inbox.receive(entries) }
    }

    /// The pushed entries for the writer, sorted, and whether some were dropped (the log has them).
    func takePushed() -> (entries: [LogEntry], overflowed: Bool) {
        state.withLock { $0.inbox.take() }
    }

    /// Whether `sequence`, committed by another node, may be left to the owner's push: true while the
    /// owner's push stream is live (the entry is then expected, and read from the log only if it has
    /// not come a round later); false when the log must be read now.
    func awaitsPush(_ sequence: Int64) -> Bool {
        guard let owner = cachedLease?.owner, owner != cluster.nodeName, cluster.isPeerLive(owner) else { return false }
        state.withLock { _ = $0.inbox.expect(sequence) }
        return true
    }

    /// One round of the push's grace: true when an entry known committed a round ago has neither been
    /// pushed nor applied.
    package func pushOverdue() -> Bool {
        state.withLock { state in state.inbox.overdue(applied: state.applied) }
    }

    func beginCommit() {
        state.withLock { $0.commitsStarted += 1 }
    }

    /// The commit begun last is published, or failed: reads that waited for it go on.
    func settleCommit() {
        let ready: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.commitsSettled = state.commitsStarted
            let ready = state.settleWaiters.filter { $0.round <= state.commitsSettled }.map(\.continuation)
            state.settleWaiters.removeAll { $0.round <= state.commitsSettled }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Waits until every commit started before the call is published (or failed).
    func waitForCommitsInFlight() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let settled: Bool = state.withLock { state in
                if state.commitsSettled >= state.commitsStarted { return true }
                state.settleWaiters.append((state.commitsStarted, continuation))
                return false
            }
            if settled { continuation.resume() }
        }
    }

    /// Waits until the published tree includes `sequence`; false after `timeout`.
    package func wait(for sequence: Int64, timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let id: Int? = state.withLock { state in
                if state.applied >= sequence { return nil }
                let id = state.nextWaiter
                state.nextWaiter += 1
                state.waiters[id] = Waiter(sequence: sequence, continuation: continuation)
                return id
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            let timer = Task { [weak self] in
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled, let self else { return }
                let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                waiter?.continuation.resume(returning: false)
            }
            state.withLock { state in
                if state.waiters[id] != nil { state.waiters[id]?.timeout = timer }
            }
        }
    }

    /// Resumes the waiters whose entry the published tree now includes.
    func resumeWaiters() {
        let ready: [Waiter] = state.withLock { state in
            let ready = state.waiters.filter { $0.value.sequence <= state.applied }
            for id in ready.keys { state.waiters.removeValue(forKey: id) }
            return Array(ready.values)
        }
        for waiter in ready {
            waiter.timeout?.cancel()
            waiter.continuation.resume(returning: true)
        }
    }

    /// Shutting down: nobody waits any longer.
    package func resumeAllWaiters() {
        let all = state.withLock { state in
            let all = Array(state.waiters.values)
            state.waiters = [:]
            return all
        }
        for waiter in all {
            waiter.timeout?.cancel()
            waiter.continuation.resume(returning: false)
        }
    }

    package func noteLease(_ lease: DatabaseLease?) {
        state.withLock { $0.lease = lease }
    }

    package var cachedLease: DatabaseLease? { state.withLock { $0.lease } }

    /// How long the database has been without a live owner (nil while it has one), updating the record.
    package func orphaned(_ orphaned: Bool, now: ContinuousClock.Instant) -> Duration? {
        state.withLock { state in
            guard orphaned else {
                state.orphanedSince = nil
                return nil
            }
            let since = state.orphanedSince ?? now
            state.orphanedSince = since
            return now - since
        }
    }

    // MARK: Forwarding

    /// Sends writes to the owner, in the order they arrive; each completes once this node's tree shows it.
    func forward(_ batch: [DatabaseInstance.Pending], from database: DatabaseInstance) {
        let start = forwards.withLock { queue in
            queue.pending += batch
            if queue.running { return false }
            queue.running = true
            return true
        }
        if start {
            Task { await self.drainForwards(database) }
        }
    }

    private func drainForwards(_ database: DatabaseInstance) async {
        while true {
            let batch: [DatabaseInstance.Pending] = forwards.withLock { queue in
                if queue.pending.isEmpty {
                    queue.running = false
                    return []
                }
                let batch = Array(queue.pending.prefix(512))
                queue.pending.removeFirst(batch.count)
                return batch
            }
            if batch.isEmpty { return }
            await cluster.sendToOwner(batch, of: database, replica: self)
        }
    }
}
