import Foundation
import HearthAccess
public import HearthCore
public import HearthRules
import HearthStorage
import Logging
import Synchronization

/// One database namespace: the in-memory tree, its single serial writer, and its listeners.
///
/// Writes queue up and one writer task applies them in order to the tree, then commits the whole
/// batch to storage in one transaction (group commit: many writes, one fsync), and only then publishes
/// the new tree, fans out events and acknowledges. Readers take the latest published tree, an
/// immutable value, and never wait for the writer.
///
/// For example:
/// ```swift
/// let outcome = try await database.write(WriteRequest(.set(path, .number(1)), identity: .admin))
/// let value = database.snapshot().child(at: path)
/// ```
public final class DatabaseInstance: Sendable {
    public let namespace: String
    package let storage: any NamespaceStorage
    let logger: Logger
    let clock: @Sendable () -> Double

    /// The latest durable tree. Held only for pointer-sized copies.
    let published: Mutex<Node>
    let queue = Mutex(WriteQueue())
    private let wakeups: AsyncStream<Void>
    let wake: AsyncStream<Void>.Continuation
    package let hub: SubscriptionHub
    package let realtime: RealtimeHub
    let rulesState: Mutex<RulesInForce>
    /// The rules put in force when stored rules do not parse, as when the database is opened.
    let defaultRules: RulesDocument
    /// Each rules document put in force counts its evaluations (emulator mode: `/.inspect/coverage`).
    let countsRulesCoverage: Bool
    /// In a cluster: this node's part in the database (owner or follower of its change log); nil on a
    /// single node.
    package let replica: DatabaseReplica?
    /// Whether the tree is all in memory yet: after a start, a large database answers reads from its file
    /// while it loads, and writes and listens wait (`docs/decisions/0012-compact-tree-and-warm-start.md`).
    let warmth: Mutex<Warmth>
    /// With a memory limit: the tree stays in the file but for what writes changed, which the writer
    /// drops when the process is over the limit (``MemoryLimit``).
    let memoryLimit: MemoryLimit?

    enum Warmth {
        case warming(waiters: [CheckedContinuation<Void, Never>])
        case warm
        /// Shut down before the load finished: nothing waits any more, and nothing is written.
        case abandoned
    }

    /// Writes waiting for the writer; closed once the writer has stopped.
    struct WriteQueue {
        var pending: [Pending] = []
        var closed = false
        /// In a cluster: changes of role and log catch-ups, which the writer runs between batches.
        var controls: [ReplicaControl] = []
    }

    package struct Pending: Sendable {
        package var request: WriteRequest
        package var complete: @Sendable (Result<WriteOutcome, any Error>) -> Void
        /// Forwarded by another node of a cluster, which gives up on it if this node loses the database.
        var forwarded = false
    }

    init(
        namespace: String,
        storage: any NamespaceStorage,
        loaded: StoredDatabase,
        rules: RulesDocument,
        configuration: EngineConfiguration,
        logger: Logger,
        replica: DatabaseReplica? = nil,
        warming: Bool = false,
        memoryLimit: MemoryLimit? = nil
    ) {
        self.namespace = namespace
        self.memoryLimit = memoryLimit
        self.replica = replica
        self.warmth = Mutex(warming ? .warming(waiters: []) : .warm)
        self.storage = storage
        self.logger = logger
        let clock = configuration.clock
        self.clock = { clock.wallMilliseconds }
        self.defaultRules = RulesDocument.defaults(open: configuration.emulatorMode)
        self.published = Mutex(loaded.root)
        self.countsRulesCoverage = configuration.emulatorMode
        self.rulesState = Mutex(RulesInForce(document: rules.withCoverage(configuration.emulatorMode ? RulesCoverage() : nil), version: nil))
        self.hub = SubscriptionHub(bufferLimit: configuration.eventStreamBufferLimit)
        self.realtime = RealtimeHub()
        // One pending wake-up is enough: the writer drains the whole queue each time it wakes.
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The latest durable tree.
    public func snapshot() -> Node {
        published.withLock { $0 }
    }

    public var rules: RulesDocument {
        rulesState.withLock { $0.document }
    }

    /// The rules in force, and their version in the storage's history (nil until one is put in force by
    /// its version: the rules the database was opened with are the newest stored then).
    struct RulesInForce {
        var document: RulesDocument
        var version: Int64?
    }

    /// Whether the whole tree is in memory (false while it loads after a start).
    public var isWarm: Bool {
        warmth.withLock { if case .warm = $0 { true } else { false } }
    }

    /// Whether the tree is still loading (neither loaded nor given up at shutdown).
    var isWarming: Bool {
        warmth.withLock { if case .warming = $0 { true } else { false } }
    }

    /// Waits until the whole tree is in memory (or the server shuts down first).
    public func waitUntilWarm() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = warmth.withLock { warmth in
                guard case .warming(var waiters) = warmth else { return true }
                waiters.append(continuation)
                warmth = .warming(waiters: waiters)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// The load finished: the loaded tree replaces the one read from the file (the same data, since
    /// nothing was written meanwhile), and writes and listens go on.
    func finishWarming(_ root: Node) {
        published.withLock { $0 = root }
        let waiters: [CheckedContinuation<Void, Never>] = warmth.withLock { warmth in
            guard case .warming(let waiters) = warmth else { return [] }
            warmth = .warm
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Submits a write and waits until it is durable (or refused).
    public func write(_ request: WriteRequest) async throws -> WriteOutcome {
        try await withCheckedThrowingContinuation { continuation in
            submit(request) { continuation.resume(with: $0) }
        }
    }

    /// Queues a write; `completion` runs once it is durable (or refused), after its events are queued to
    /// WebSocket listeners. Writes submitted one after another are applied in that order.
    public func submit(_ request: WriteRequest, completion: @escaping @Sendable (Result<WriteOutcome, any Error>) -> Void) {
        submit(request, forwarded: false, completion: completion)
    }

    /// Queues a write; `forwarded` marks one another node of the cluster sent here as the owner.
    package func submit(
        _ request: WriteRequest, forwarded: Bool, completion: @escaping @Sendable (Result<WriteOutcome, any Error>) -> Void
    ) {
        let accepted = queue.withLock { queue in
            guard !queue.closed else { return false }
            queue.pending.append(Pending(request: request, complete: completion, forwarded: forwarded))
            return true
        }
        if accepted {
            wake.yield()
        } else {
            completion(.failure(WriteError(.unavailable, "The server is shutting down")))
        }
    }

    /// Replaces the rules after storing them durably, then re-checks every stream's read access.
    ///
    /// Saves may overlap (two consoles, or two nodes of a cluster) and finish in any order: each puts in
    /// force the newest version stored, never one older than the version in force.
    public func replaceRules(_ rules: RulesDocument) async throws {
        try await storage.saveRules(rules.source, time: Int64(clock()))
        if let latest = try? await storage.rulesHistory(limit: 1).first,
            let newest = latest.source == rules.source ? rules : try? RulesDocument(source: latest.source)
        {
            adopt(newest, version: latest.version)
        } else {
            // The newest version could not be read: these rules, with no version, which the next rules
            // put in force by their version replace.
            adopt(rules, version: nil)
        }
        if let replica {
            // The owner checks writes against its rules: it reads the log's rules entry on this wake-up
            // rather than at its next lease check.
            let shared = replica.shared
            if let sequence = try? await shared.committedSequence() { try? await shared.notify(sequence: sequence) }
        }
    }

    /// Puts rules in force (already stored) unless a newer version is, and re-checks every stream's read
    /// access. `version` is the rules' version in the storage's history; nil when not known (then any
    /// rules put in force by their version next replace them).
    func adopt(_ rules: RulesDocument, version: Int64?) {
        let adopted = rulesState.withLock { state in
            if let version, let current = state.version, version <= current { return false }
            if rules.source == state.document.source {
                // The same rules saved again (rules-unit-testing saves them in every test file): they answer
                // as before, so streams need no recheck, and their coverage counts on.
                state.version = version
                return false
            }
            // New rules start a new count: the coverage is of the rules in force.
            state = RulesInForce(document: rules.withCoverage(countsRulesCoverage ? RulesCoverage() : nil), version: version)
            return true
        }
        guard adopted else { return }
        let root = snapshot()
        let now = clock()
        // The rules in force when each stream is checked: an overlapping adopt of newer rules may have
        // replaced these already.
        let canRead = { (path: DatabasePath, query: Query, identity: Identity) in
            self.rules.canRead(path, identity.ruleSubject, root: root, query: RuleQuery(query), now: now)
        }
        hub.recheck(canRead)
        realtime.recheck(canRead)
    }

    /// The saved versions of the rules, newest first.
    package func rulesHistory(limit: Int) async throws -> [RulesVersion] {
        try await storage.rulesHistory(limit: limit)
    }

    /// Server shutdown: refuses new writes and lets the writer finish the ones already queued (such as
    /// the onDisconnect writes of connections the shutdown closed), then stop.
    func finishWrites() {
        let waiters: [CheckedContinuation<Void, Never>] = warmth.withLock { warmth in
            guard case .warming(let waiters) = warmth else { return [] }
            warmth = .abandoned
            return waiters
        }
        for waiter in waiters { waiter.resume() }
        queue.withLock { $0.closed = true }
        wake.yield()
        wake.finish()
    }

    /// The writer loop; runs until ``finishWrites()`` or until its task is cancelled. Writes still queued
    /// when it is cancelled fail as unavailable.
    func runWriter() async {
        // Writes wait for the whole tree; shut down before it loaded, they fail below.
        await waitUntilWarm()
        var root = snapshot()
        var residency = memoryLimit.map { ResidencyTracker(limit: $0, now: .now) }
        for await _ in wakeups where isWarm {
            while true {
                let (controls, batch) = queue.withLock { queue in
                    let taken = (queue.controls, queue.pending)
                    queue.controls = []
                    queue.pending = []
                    return taken
                }
                if batch.isEmpty && controls.isEmpty { break }
                for control in controls {
                    root = await handle(control, root: root)
                }
                guard !batch.isEmpty else { continue }
                if let replica, !replica.isOwner {
                    // Another node owns the database: the writes go there, in order (never writes forwarded
                    // here, which this node accepted as the owner: they fail and their sender says so).
                    replica.forward(batch.filter { !$0.forwarded }, from: self)
                    for pending in batch where pending.forwarded { pending.complete(.failure(WriteError.noOwner)) }
                } else {
                    root = await process(batch, root: root)
                    if residency?.committed(now: .now, residentBytes: ProcessMemory.residentBytes) == true {
                        root = await refreshFromFile(root)
                        if let held = residency?.refreshed(now: .now, residentBytes: ProcessMemory.residentBytes), let limit = memoryLimit {
                            logger.warning(
                                "The server holds \(held >> 20) MiB with this database's tree dropped, over --memory-limit \(limit.bytes >> 20) MiB; it will keep re-reading the file (slower). Raise the limit."
                            )
                        }
                    }
                }
            }
        }
        let remaining = queue.withLock { queue in
            queue.closed = true
            let all = queue.pending
            queue.pending = []
            return all
        }
        for pending in remaining {
            pending.complete(.failure(WriteError(.unavailable, "The server is shutting down")))
        }
    }

    /// Applies a batch in order, commits it once, publishes, fans out, acknowledges. Returns the new root.
    func process(_ batch: [Pending], root: Node) async -> Node {
        var working = root
        var mutations: [StorageMutation] = []
        var changes: [Change] = []
        var results: [Result<WriteOutcome, any Error>] = []
        results.reserveCapacity(batch.count)
        let rules = self.rules
        for pending in batch {
            do {
                let applied = try apply(pending.request, to: working, rules: rules)
                if let change = applied.change {
                    mutations += applied.mutations
                    changes.append(change)
                    working = change.after
                }
                results.append(.success(applied.outcome))
            } catch {
                results.append(.failure(error))
            }
        }
        if let replica, changes.isEmpty, !replica.isLeaseFresh {
            // Answers drawn from this tree (a failed compare-and-set, a refusal) are only right while this
            // node surely owns the database: else the owner, whoever it is now, decides.
            replica.forward(batch.filter { !$0.forwarded }, from: self)
            for pending in batch where pending.forwarded { pending.complete(.failure(WriteError.noOwner)) }
            return root
        }
        if let replica, !changes.isEmpty {
            replica.beginCommit()
            let committed = await commitReplicated(mutations, changes, replica: replica)
            if case .committed = committed {} else { replica.settleCommit() }
            switch committed {
            case .committed: break
            case .fenced:
                // Another node took the database over and nothing was applied: the new owner runs this
                // node's own clients' writes, against its tree. Writes other nodes forwarded here fail:
                // their senders gave up on them when the lease moved, and told their clients so.
                replica.forward(batch.filter { !$0.forwarded }, from: self)
                for pending in batch where pending.forwarded { pending.complete(.failure(WriteError.noOwner)) }
                return root
            case .behind:
                // Entries another node appended came first (a rules change, an import): apply them, then
                // check and commit the batch again against them, ahead of the writes queued since.
                let applied = replica.applied
                let caughtUp = await catchUp(root, replica)
                if replica.applied > applied {
                    requeue(batch)
                } else {
                    for pending in batch { pending.complete(.failure(WriteError.behind)) }
                }
                return caughtUp
            case .failed(let failure):
                for pending in batch { pending.complete(.failure(failure)) }
                return root
            }
        } else if replica == nil, !mutations.isEmpty {
            do {
                try await storage.commit(mutations)
            } catch {
                logger.error("Storage commit failed", metadata: ["hearth.namespace": "\(namespace)", "hearth.error": "\(error)"])
                let failure = WriteError(.unavailable, "The database could not store the write; try again")
                for pending in batch { pending.complete(.failure(failure)) }
                return root
            }
        }
        // Acknowledge as soon as the new tree is visible (a client that reads after its write sees it),
        // and before queueing the fan-out, so acknowledgements do not wait behind every listener's event.
        // WebSocket pushes are queued before the acknowledgements: a client's own events precede its `ok`.
        hub.publish(changes) {
            realtime.publish(changes) { published.withLock { $0 = working } }
            for (pending, result) in zip(batch, results) {
                pending.complete(result)
            }
        }
        replica?.resumeWaiters()
        replica?.settleCommit()
        return working
    }

    /// Drops the tree and reads it again from the file, which holds all of it: everything the writer
    /// applied is committed when it gets here. Readers holding the old tree keep its read snapshot
    /// until they let go of it.
    func refreshFromFile(_ root: Node) async -> Node {
        do {
            guard let fresh = try await storage.warmStart(minimumBytes: 0) else { return root }
            published.withLock { $0 = fresh.root }
            return fresh.root
        } catch {
            logger.warning("Could not read the database's file again; keeping its tree in memory", metadata: ["hearth.error": "\(error)"])
            return root
        }
    }

    /// Whether `identity` may read `path` (with `query`, for query-based rules), on the current data.
    public func canRead(_ path: DatabasePath, _ identity: Identity, query: Query?) -> Bool {
        canRead(path, identity, query: query, root: snapshot())
    }

    /// Whether `identity` may read `path` in the tree `root` (a read that answers from that same tree
    /// checks its rules on it, so a write in between cannot show it data its rules then refused).
    public func canRead(_ path: DatabasePath, _ identity: Identity, query: Query?, root: Node) -> Bool {
        rules.canRead(path, identity.ruleSubject, root: root, query: RuleQuery(query), now: clock())
    }

    /// Checks a write as if it happened now, without applying it (onDisconnect writes are checked when
    /// they are queued). Throws the error the write would fail with.
    public func check(_ request: WriteRequest) throws {
        _ = try apply(request, to: snapshot(), rules: rules)
    }

    struct Applied {
        var outcome: WriteOutcome
        var change: Change?
        var mutations: [StorageMutation] = []
    }

    /// Applies one write to a tree: compare-and-set, validation, server values, rules, size limit.
    ///
    /// A precondition (`if-match`, a transaction's hash) is a question about the data at the location,
    /// so only a client that may read it may ask: any other gets a refusal whether it guessed right or
    /// not (else `ok` against `datastale` would tell a write-only client whether its guess of a hidden
    /// value was right). A failed precondition is answered with the current value. (A reader whose stale
    /// write the rules would refuse on the current data still gets the precondition answer, and so
    /// retries from the current value, as Firebase's transactions expect.)
    func apply(_ request: WriteRequest, to root: Node, rules: RulesDocument) throws -> Applied {
        // Most writes are unconditional: they skip the lookup (a walk down a large map) as well.
        guard request.ifMatch != nil || request.expectedHash != nil else { return try applyUnconditionally(request, to: root, rules: rules) }
        guard rules.canRead(request.path, request.identity.ruleSubject, root: root, now: clock()) else {
            throw WriteError(.permissionDenied, "Permission denied")
        }
        // A priority's own location (`…/.priority`) holds the priority alone: its ETag is of that value.
        var current = root.child(at: request.path)
        if case .setPriority = request.operation { current = current.priority.map { .leaf($0.primitive) } ?? .empty }
        let mismatched = request.ifMatch.map { current.etag != $0 } == true || request.expectedHash.map { current.hash != $0 } == true
        guard mismatched else { return try applyUnconditionally(request, to: root, rules: rules) }
        return Applied(outcome: .preconditionFailed(current: current))
    }

    private func applyUnconditionally(_ request: WriteRequest, to root: Node, rules: RulesDocument) throws -> Applied {
        let path = request.path
        let now = clock()
        switch request.operation {
        case .set(_, let json):
            let existing = root.child(at: path)
            let node = try convert(json, depth: path.count, now: now, existing: existing)
            try checkSize(request, removed: existing, written: node)
            let after = root.setting(node, at: path)
            try authorizeWrite(path, request.identity, rules, before: root, after: after, now: now)
            let change = Change(path: path, written: .node(node), before: root, after: after)
            let mutations = StorageMutation.plan(before: root, after: after, path: path, node: node)
            // `setting` puts `node` at `path` as it is (empty when deleted), so it is the value there now.
            return Applied(outcome: .written(value: node, written: .node(node)), change: change, mutations: mutations)
        case .setPriority(_, let json):
            let existing = root.child(at: path)
            let priority = try convertPriority(json, now: now, existing: existing)
            let node = existing.withPriority(priority)
            let after = root.setting(node, at: path)
            try authorizeWrite(path, request.identity, rules, before: root, after: after, now: now)
            let change = Change(path: path, written: .node(node), before: root, after: after)
            let mutations: [StorageMutation] = existing.isEmpty ? [] : [.setPriority(path, priority)]
            return Applied(outcome: .written(value: node, written: .node(node)), change: change, mutations: mutations)
        case .update(_, let items):
            try DatabaseInstance.checkOverlaps(items.map(\.path))
            var resolved: [(path: DatabasePath, node: Node)] = []
            var after = root
            var mutations: [StorageMutation] = []
            var removedLeaves = 0
            var writtenLeaves = 0
            // Values first, then priorities (`a/.priority`): a priority given with its node's new value holds.
            for item in items.filter({ !$0.path.isPriority }) + items.filter(\.path.isPriority) {
                let target = path.appending(item.path)
                let located = target.node
                if located.count > DatabasePath.maximumDepth {
                    throw WriteError(.invalidData, "Invalid data; paths must be at most 32 levels deep")
                }
                if item.path.isPriority {
                    // The priority of the node above, as a PUT to its `.priority` does. An empty node has
                    // none: the item resolves to what is there after, as every resolved item does.
                    let existing = after.child(at: located)
                    let priority = try convertPriority(item.value, now: now, existing: existing)
                    if request.maximumLeaves != nil { writtenLeaves += 1 }
                    guard !existing.isEmpty else {
                        resolved.append((item.path, .empty))
                        continue
                    }
                    after = after.setting(existing.withPriority(priority), at: located)
                    mutations.append(.setPriority(located, priority))
                    resolved.append((item.path, priority.map { .leaf($0.primitive) } ?? .empty))
                    continue
                }
                let existing = root.child(at: target)
                let node = try convert(item.value, depth: target.count, now: now, existing: existing)
                if request.maximumLeaves != nil {
                    removedLeaves += existing.leafCount
                    writtenLeaves += node.leafCount
                }
                let next = after.setting(node, at: target)
                mutations += StorageMutation.plan(before: after, after: next, path: target, node: node)
                after = next
                resolved.append((item.path, node))
            }
            // Every target is checked against the one combined new tree; any failure rejects the whole update.
            for item in resolved {
                // A priority is written where its node is.
                let target = path.appending(item.path.node)
                try authorizeWrite(target, request.identity, rules, before: root, after: after, now: now)
            }
            if let limit = request.maximumLeaves, removedLeaves + writtenLeaves > limit {
                throw WriteError(.tooLarge, DatabaseInstance.tooLargeMessage)
            }
            if resolved.isEmpty {
                return Applied(outcome: .written(value: root.child(at: path), written: .update([])))
            }
            let change = Change(path: path, written: .update(resolved), before: root, after: after)
            return Applied(
                outcome: .written(value: after.child(at: path), written: .update(resolved)),
                change: change,
                mutations: mutations
            )
        }
    }

    static let tooLargeMessage =
        "Data to write exceeds the maximum size that can be modified with a single request; raise writeSizeLimit or split the write"

    private func convert(_ json: JSONValue, depth: Int, now: Double, existing: Node) throws -> Node {
        // A value's own location counts too: a leaf at 33 levels (a POST or a PATCH path under a deep
        // location) is as deep as Firebase refuses.
        guard json == .null || depth <= DatabasePath.maximumDepth else {
            throw WriteError(.invalidData, "Invalid data; data must not be nested more than \(DatabasePath.maximumDepth) levels deep")
        }
        do {
            return try Node(json: json, depth: depth, context: ServerValueContext(now: now, existing: existing))
        } catch {
            throw WriteError(.invalidData, error.message)
        }
    }

    private func convertPriority(_ json: JSONValue, now: Double, existing: Node) throws -> Priority? {
        do {
            return try Node.convertPriority(json, context: ServerValueContext(now: now, existing: existing))
        } catch {
            throw WriteError(.invalidData, error.message)
        }
    }

    private func checkSize(_ request: WriteRequest, removed: Node, written: Node) throws {
        guard let limit = request.maximumLeaves else { return }
        if removed.leafCount + written.leafCount > limit { throw WriteError(.tooLarge, DatabaseInstance.tooLargeMessage) }
    }

    private func authorizeWrite(
        _ path: DatabasePath,
        _ identity: Identity,
        _ rules: RulesDocument,
        before: Node,
        after: Node,
        now: Double
    ) throws {
        guard rules.canWrite(path, identity.ruleSubject, before: before, after: after, now: now) else {
            throw WriteError(.permissionDenied, "Permission denied")
        }
    }

    /// Rejects updates where one path is an ancestor of another (`a` and `a/b`), as Firebase does.
    /// Sorted key by key, a path comes right before its descendants, so checking neighbours finds
    /// every overlap: O(n log n), which matters for updates of a million children.
    static func checkOverlaps(_ paths: [DatabasePath]) throws {
        // By bytes, as keys compare: String's order takes canonically equivalent keys (`é`, `e\u{301}`)
        // for equal, so an ancestor could sort away from its descendant.
        let sorted = paths.sorted { a, b in
            a.keys.lexicographicallyPrecedes(b.keys) { $0.string.utf8.lexicographicallyPrecedes($1.string.utf8) }
        }
        for (shorter, longer) in zip(sorted, sorted.dropFirst()) where shorter.contains(longer) {
            throw WriteError(
                .invalidData,
                "Invalid data; path \(shorter) is an ancestor of \(longer) in the same update"
            )
        }
    }
}
