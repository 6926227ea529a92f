import HearthCore
import HearthRules
import HearthStorage
import Logging
import Synchronization

/// What the writer runs between batches in a cluster.
package enum ReplicaControl: Sendable {
    /// Apply the log entries committed since the last applied one.
    case catchUp
    /// Apply the entries owners pushed (``PushInbox``), reading the log if one is missing.
    case applyPushed
    /// This node took the lease (its storage session being `generation`): apply the log up to the
    /// lease's last entry, then take writes.
    case becomeOwner(DatabaseLease, generation: Int)
    /// Another node owns the database now.
    case stepDown
    /// Give the database to the node that should own it: stop taking writes, then release the lease.
    case handOff
}

/// This node's part in a database that a cluster shares: whether it owns it (and with which epoch), how
/// far it has applied the change log, who waits for which entry, and the writes it forwards to the owner.
///
/// The tree itself stays in ``Database``; its writer task is the only one that applies entries, so the
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
        var pending: [Database.Pending] = []
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
    /// Whether this node surely owns the database now: it holds the lease, its heartbeat is fresh, and its
    /// storage session has not broken since it last saw the lease in the storage (others may have taken
    /// it then).
    package var isLeaseFresh: Bool {
        let storage = cluster.storage
        let (owner, verified) = state.withLock { ($0.role != .follower, $0.verifiedGeneration) }
        return owner && storage.isLeaseFresh && verified == storage.sessionGeneration
    }

    /// The storage shows this node's lease as current, as seen in session `generation`.
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
    func forward(_ batch: [Database.Pending], from database: Database) {
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

    private func drainForwards(_ database: Database) async {
        while true {
            let batch: [Database.Pending] = forwards.withLock { queue in
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

// MARK: - The database's side

extension Database {
    enum ReplicatedCommit {
        case committed
        case fenced
        case failed(WriteError)
    }

    /// The owner's group commit: data and log entry in one fenced statement.
    func commitReplicated(_ mutations: [StorageMutation], _ changes: [Change], replica: DatabaseReplica) async -> ReplicatedCommit {
        guard case .owner(let epoch) = replica.role else { return .fenced }
        let entry = ReplicatedEntry.changes(changes.map { ReplicatedEntry.Write(path: $0.path, written: $0.written) }).payload
        do {
            let shared = replica.shared
            // Generous for big batches; a commit stuck on a broken connection must not hold the writer.
            let limit = Duration.seconds(5) + .milliseconds(mutations.count / 10)
            let sequence = try await Deadline.run(limit) { try await shared.commit(mutations, entry: entry, epoch: epoch) }
            // Committed under the fence, so it is the log's entry at `sequence` for good: the other nodes
            // may apply it at once. Pushed before this node publishes: their listeners need not wait for ours.
            replica.cluster.publishCommitted(namespace: namespace, LogEntry(sequence: sequence, payload: entry))
            if !replica.committed(sequence) { requestCatchUp() }
            Task { try? await shared.notify(sequence: sequence) }
            return .committed
        } catch let error as StorageError where error.code == .fenced {
            _ = replica.demote()
            logger.warning("Another node took this database over; forwarding its writes there")
            return .fenced
        } catch {
            logger.error("Storage commit failed", metadata: ["hearth.error": "\(error)"])
            // It may have committed after all, or may still: this node stops owning the database until it
            // claims it again with a new epoch (which fences that commit if it has not happened), then
            // applies the log, which tells.
            _ = replica.demote()
            requestCatchUp()
            return .failed(WriteError.unknownOutcome)
        }
    }

    /// Entries an owner pushed: the writer applies them between batches.
    package func receivePushed(_ entries: [LogEntry]) {
        guard let replica, replica.receivePushed(entries) else { return }
        queue.withLock { $0.controls.append(.applyPushed) }
        wake.yield()
    }

    /// Another node committed `sequence` (a wake-up, a lease check or a forwarded write's answer tells):
    /// left to the owner's push while its stream is live, else read from the log at once.
    package func expectCommitted(_ sequence: Int64) {
        guard let replica, replica.applied < sequence else { return }
        if replica.awaitsPush(sequence) { return }
        requestCatchUp()
    }

    /// Queues a catch-up with the change log (once, however often asked).
    package func requestCatchUp() {
        guard let replica, replica.queueCatchUp() else { return }
        queue.withLock { $0.controls.append(.catchUp) }
        wake.yield()
    }

    /// A node took (or lost) the lease: the writer switches roles between batches.
    package func changeRole(_ control: ReplicaControl) {
        queue.withLock { $0.controls.append(control) }
        wake.yield()
    }

    /// Writes forwarded back because this node owns the database after all.
    package func requeue(_ batch: [Pending]) {
        let accepted = queue.withLock { queue in
            guard !queue.closed else { return false }
            queue.pending.insert(contentsOf: batch, at: 0)
            return true
        }
        if accepted {
            wake.yield()
        } else {
            for pending in batch { pending.complete(.failure(WriteError(.unavailable, "The server is shutting down"))) }
        }
    }

    /// Waits until this node's tree includes every write committed before the call: a linearizable read
    /// follows. Free on the owner while its lease is fresh.
    public func readBarrier() async throws {
        guard let replica else { return }
        if replica.isLeaseFresh {
            // The owner's tree is the latest, except for a commit other nodes may already see that this
            // node has not published yet.
            await replica.waitForCommitsInFlight()
            if replica.isLeaseFresh { return }
        }
        let sequence: Int64
        do {
            sequence = try await replica.shared.committedSequence()
        } catch {
            throw WriteError(.unavailable, "The database is unavailable; try again")
        }
        if replica.applied >= sequence { return }
        requestCatchUp()
        guard await replica.wait(for: sequence, timeout: DatabaseReplica.forwardPatience) else { throw WriteError.behind }
    }

    /// Runs one control in the writer. Returns the new root.
    func handle(_ control: ReplicaControl, root: Node) async -> Node {
        guard let replica else { return root }
        switch control {
        case .catchUp:
            return await catchUp(root, replica)
        case .applyPushed:
            return await applyPushed(root, replica)
        case .becomeOwner(let lease, let generation):
            defer { replica.setClaimPending(false) }
            var root = root
            // A hot standby: only the tail of the log stands between this node and taking writes.
            var stalls = 0
            while replica.applied < lease.lastSequence {
                let before = replica.applied
                root = await catchUp(root, replica)
                if replica.applied == before {
                    stalls += 1
                    if stalls > 100 {
                        logger.error("Cannot catch up with the log to take the database over; will try again")
                        return root
                    }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            replica.setRole(.owner(epoch: lease.epoch))
            replica.verify(epoch: lease.epoch, generation: generation)
            logger.notice("This node owns the database now", metadata: ["hearth.cluster.epoch": "\(lease.epoch)"])
            return root
        case .handOff:
            guard case .owner(let epoch) = replica.role else { return root }
            _ = replica.demote()
            do {
                try await replica.shared.release(epoch: epoch)
                logger.notice("Handed the database over to its preferred node")
            } catch {
                logger.warning("Cannot release the database's lease; it moves when the lease lapses", metadata: ["hearth.error": "\(error)"])
            }
            return root
        case .stepDown:
            if replica.demote() { logger.notice("Another node owns the database now") }
            return root
        }
    }

    /// Applies the log entries after the last applied one, publishing and fanning out each.
    func catchUp(_ root: Node, _ replica: DatabaseReplica) async -> Node {
        replica.catchUpStarted()
        var root = root
        let page = 512
        while true {
            let after = replica.applied
            let entries: [LogEntry]
            do {
                let shared = replica.shared
                entries = try await Deadline.run(.seconds(5)) { try await shared.changes(after: after, limit: page) }
            } catch {
                logger.warning("Cannot read the change log; will try again", metadata: ["hearth.error": "\(error)"])
                break
            }
            guard let first = entries.first else { break }
            if first.sequence != after + 1 {
                // The entries this node missed were trimmed from the log: start again from a snapshot.
                guard let reloaded = await reload(root, replica) else { break }
                root = reloaded
                continue
            }
            var reloaded = false
            for entry in entries {
                (root, reloaded) = await applyEntry(entry, root: root, replica)
                if reloaded { break }
                replica.cluster.noteApplied(fromPush: false)
            }
            replica.resumeWaiters()
            if !reloaded && entries.count < page { break }
        }
        replica.resumeWaiters()
        return root
    }

    /// Applies the entries owners pushed, each only if it is the next one of the log (``PushInbox``), and
    /// reads the log when one is missing (a lost push, a rules change, entries dropped on overflow).
    func applyPushed(_ root: Node, _ replica: DatabaseReplica) async -> Node {
        var root = root
        let (entries, overflowed) = replica.takePushed()
        var missing = overflowed
        pushed: for entry in entries {
            switch PushInbox.decide(entry.sequence, applied: replica.applied) {
            case .ignore:
                continue
            case .catchUp:
                missing = true
                break pushed
            case .apply:
                let reloaded: Bool
                (root, reloaded) = await applyEntry(entry, root: root, replica)
                if !reloaded { replica.cluster.noteApplied(fromPush: true) }
            }
        }
        replica.resumeWaiters()
        if missing { root = await catchUp(root, replica) }
        return root
    }

    /// Applies one log entry, the next after the last applied (or one this node committed ahead of
    /// others), publishing it. Returns the new root, and whether the database was loaded again instead.
    private func applyEntry(_ entry: LogEntry, root: Node, _ replica: DatabaseReplica) async -> (Node, reloaded: Bool) {
        if replica.isOwnAhead(entry.sequence) {
            replica.markApplied(entry.sequence)
            return (root, false)
        }
        let decoded: ReplicatedEntry
        do {
            decoded = try ReplicatedEntry(payload: entry.payload)
        } catch {
            logger.error("A log entry cannot be read; loading the database again", metadata: ["hearth.error": "\(error)"])
            decoded = .reload
        }
        switch decoded {
        case .changes(let writes):
            let next = publishReplicated(writes, root: root)
            replica.markApplied(entry.sequence)
            return (next, false)
        case .rules:
            await reloadRules(replica)
            replica.markApplied(entry.sequence)
            return (root, false)
        case .reload:
            return (await reload(root, replica) ?? root, true)
        }
    }

    /// Applies another node's writes to the tree exactly as the owner did, then publishes them.
    private func publishReplicated(_ writes: [ReplicatedEntry.Write], root: Node) -> Node {
        var working = root
        var changes: [Change] = []
        changes.reserveCapacity(writes.count)
        for write in writes {
            let after = write.applied(to: working)
            changes.append(Change(path: write.path, written: write.written, before: working, after: after))
            working = after
        }
        hub.publish(changes) {
            realtime.publish(changes) { published.withLock { $0 = working } }
        }
        return working
    }

    /// Loads the whole database again from storage (after an import, or a gap in the log).
    private func reload(_ root: Node, _ replica: DatabaseReplica) async -> Node? {
        do {
            let shared = replica.shared
            let (stored, sequence) = try await Deadline.run(.seconds(60)) { try await shared.loadWithSequence() }
            let after = stored.root
            let change = Change(path: .root, written: .node(after), before: root, after: after)
            hub.publish([change]) {
                realtime.publish([change]) { published.withLock { $0 = after } }
            }
            replica.markApplied(sequence)
            if let source = stored.rulesSource, let rules = try? RulesDocument(source: source) { adopt(rules) }
            return after
        } catch {
            logger.warning("Cannot load the database again; will try again", metadata: ["hearth.error": "\(error)"])
            return nil
        }
    }

    private func reloadRules(_ replica: DatabaseReplica) async {
        do {
            let shared = replica.shared
            guard let source = try await Deadline.run(.seconds(5), { try await shared.rulesHistory(limit: 1) }).first?.source else { return }
            adopt(try RulesDocument(source: source))
        } catch {
            logger.warning("Cannot read the new rules", metadata: ["hearth.error": "\(error)"])
        }
    }
}
