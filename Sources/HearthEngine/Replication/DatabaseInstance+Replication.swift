import HearthCore
import HearthRules
import HearthStorage
import Logging
import Synchronization

extension DatabaseInstance {
    enum ReplicatedCommit {
        case committed
        case fenced
        /// The log has entries this node has not applied (another node's rules change, an import): the
        /// batch was checked against a stale tree or stale rules, and nothing was committed.
        case behind
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
            // Fenced by the lease, and by the log's last entry: everything before this commit is in the tree
            // (and the rules) the batch was checked against.
            let after = replica.applied
            let sequence = try await Deadline.run(limit) { try await shared.commit(mutations, entry: entry, epoch: epoch, after: after) }
            // Committed under the fence, so it is the log's entry at `sequence` for good: the other nodes
            // may apply it at once. Pushed before this node publishes: their listeners need not wait for ours.
            replica.cluster.publishCommitted(namespace: namespace, LogEntry(sequence: sequence, payload: entry))
            if !replica.committed(sequence) { requestCatchUp() }
            Task { try? await shared.notify(sequence: sequence) }
            return .committed
        } catch let error as DatabaseStorageError where error.code == .behind {
            return .behind
        } catch let error as DatabaseStorageError where error.code == .fenced {
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
        if replica.applied < sequence {
            requestCatchUp()
            guard await replica.wait(for: sequence, timeout: DatabaseReplica.forwardPatience) else { throw WriteError.behind }
        }
        // An owner counts its own commit applied before it publishes the tree (the others may see it
        // already): that tree must be out before this read.
        await replica.waitForCommitsInFlight()
    }

    /// Runs one control in the writer. Returns the new root.
    func handle(_ control: ReplicaControl, root: Node) async -> Node {
        guard let replica else { return root }
        switch control {
        case .catchUp:
            return await catchUp(root, replica)
        case .applyPushed:
            return await applyPushed(root, replica)
        case .becomeOwner(let lease):
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
            // The claim may be old by now (a catch-up that waited on the storage), and the others may
            // have taken the lease since: the claim counts only if the storage still shows it. Read
            // while this node's heartbeat is fresh, that also lets its tree answer alone.
            let generation = replica.cluster.storage.freshGeneration
            let current: DatabaseLease?
            do {
                let shared = replica.shared
                current = try await Deadline.run(.seconds(2)) { try await shared.lease() }
            } catch {
                logger.warning("Cannot check the lease to take the database over; will try again", metadata: ["hearth.error": "\(error)"])
                return root
            }
            guard let current, current.owner == replica.cluster.nodeName, current.epoch == lease.epoch else {
                if replica.demote() || current != nil { logger.notice("Another node took the database over before this node could") }
                if let current { expectCommitted(current.lastSequence) }
                return root
            }
            replica.setRole(.owner(epoch: lease.epoch))
            if let generation { replica.verify(epoch: lease.epoch, generation: generation) }
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
            var outcome = EntryOutcome.applied
            for entry in entries {
                (root, outcome) = await applyEntry(entry, root: root, replica)
                if outcome != .applied { break }
                replica.cluster.noteApplied(fromPush: false)
            }
            replica.resumeWaiters()
            // Stalled: the entry is left for the next catch-up (a wake-up or lease check asks for one).
            if outcome == .stalled || (outcome == .applied && entries.count < page) { break }
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
                let outcome: EntryOutcome
                (root, outcome) = await applyEntry(entry, root: root, replica)
                if outcome == .applied { replica.cluster.noteApplied(fromPush: true) }
                if outcome == .stalled { break pushed }
            }
        }
        replica.resumeWaiters()
        if missing { root = await catchUp(root, replica) }
        return root
    }

    /// What applying one log entry did.
    enum EntryOutcome {
        /// The entry is applied: the next one may follow.
        case applied
        /// The database was loaded again instead (the entries after it must be read again).
        case reloaded
        /// The entry could not be applied now (its rules could not be read): nothing after it may be.
        case stalled
    }

    /// Applies one log entry, the next after the last applied (or one this node committed ahead of
    /// others), publishing it. Returns the new root, and what was done.
    private func applyEntry(_ entry: LogEntry, root: Node, _ replica: DatabaseReplica) async -> (Node, EntryOutcome) {
        if replica.isOwnAhead(entry.sequence) {
            replica.markApplied(entry.sequence)
            return (root, .applied)
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
            return (next, .applied)
        case .rules:
            // Marked applied only once the rules are in force: else this node would keep the old ones.
            guard await reloadRules(replica) else { return (root, .stalled) }
            replica.markApplied(entry.sequence)
            return (root, .applied)
        case .reload:
            guard let reloaded = await reload(root, replica) else { return (root, .stalled) }
            return (reloaded, .reloaded)
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
            // The rules stored by then, or newer, by their version: none older than those in force is put back.
            guard await reloadRules(replica) else { return nil }
            let after = stored.root
            let change = Change(path: .root, written: .node(after), before: root, after: after)
            hub.publish([change]) {
                realtime.publish([change]) { published.withLock { $0 = after } }
            }
            replica.markApplied(sequence)
            return after
        } catch {
            logger.warning("Cannot load the database again; will try again", metadata: ["hearth.error": "\(error)"])
            return nil
        }
    }

    /// Puts the newest stored rules in force (unless newer ones already are). False if they cannot be read
    /// (a storage error: the caller tries again later); stored rules that do not parse put the default
    /// rules in force, as opening the database does, rather than hold up the log for good.
    private func reloadRules(_ replica: DatabaseReplica) async -> Bool {
        let latest: RulesVersion?
        do {
            let shared = replica.shared
            latest = try await Deadline.run(.seconds(5), { try await shared.rulesHistory(limit: 1) }).first
        } catch {
            logger.warning("Cannot read the new rules; will try again", metadata: ["hearth.error": "\(error)"])
            return false
        }
        guard let latest else { return true }
        do {
            adopt(try RulesDocument(source: latest.source), version: latest.version)
        } catch {
            logger.error("Stored rules do not parse; using the defaults", metadata: ["hearth.rules.version": "\(latest.version)"])
            adopt(defaultRules, version: latest.version)
        }
        return true
    }
}
