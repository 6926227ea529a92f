import Foundation
import HearthAccess
import HearthCore
import HearthEngine
import HearthStorage
import Logging
import NIOSSL
import Prometheus
import ServiceLifecycle
import Synchronization

/// What every database of a cluster node shares: the shared storage, this node's name, the client that
/// forwards writes to owners, the commit push (both sides), and the cluster's metrics.
package final class ClusterContext: ClusterLink {
    package let storage: any SharedDatabaseStorage
    package var nodeName: String { storage.nodeName }
    let client: OwnerClient
    /// The entries this node commits, pushed to the nodes subscribed to it.
    let feed: CommitFeed
    /// The nodes this node subscribes to, and whether their streams are live.
    let peers = PushPeers()
    /// The admin secret, sent with forwarded writes (every node has the same).
    let secret: String
    package let logger: Logger
    let failovers: Counter
    /// Log entries applied here, by how they arrived: pushed by the owner, or read from the log.
    let appliedFromPush: Counter
    let appliedFromLog: Counter
    let registry: PrometheusCollectorRegistry

    /// How this node's HTTP clients reach the others: the system's roots, or the CA of `--cluster-ca`.
    let tls: TLSConfiguration

    /// `trusting`: a PEM file of the certificate authority to trust for the other nodes' `https`
    /// addresses instead of the system's roots.
    package init(
        storage: any SharedDatabaseStorage, secret: String, push: Bool = true, trusting certificateAuthorityFile: String? = nil,
        registry: PrometheusCollectorRegistry, logger: Logger
    ) {
        self.storage = storage
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let certificateAuthorityFile { tls.trustRoots = .file(certificateAuthorityFile) }
        self.tls = tls
        self.client = OwnerClient(tls: tls)
        self.feed = CommitFeed(enabled: push)
        self.secret = secret
        self.logger = logger
        self.registry = registry
        failovers = registry.makeCounter(
            name: "hearth_cluster_failovers_total", help: "Databases this node took over from a node that died or hung."
        )
        let applied = MetricNameDescriptor(
            namespace: "hearth", subsystem: "cluster", metricName: "entries_applied", unitName: "total",
            helpText: "Log entries of other nodes' commits applied on this node, by how they arrived."
        )
        appliedFromPush = registry.makeCounter(descriptor: applied, labels: [("source", "push")])
        appliedFromLog = registry.makeCounter(descriptor: applied, labels: [("source", "log")])
    }

    package func isPeerLive(_ node: String) -> Bool { peers.isLive(node) }

    package func publishCommitted(namespace: String, _ entry: LogEntry) { feed.publish(namespace: namespace, entry) }

    package func noteApplied(fromPush: Bool) { (fromPush ? appliedFromPush : appliedFromLog).increment() }
}

/// Runs a node's part of the cluster: membership, the wake-ups of other nodes' commits, and ownership
/// (claiming databases whose owner died, stepping down when another node took one over).
///
/// Every `tick` (100 ms) it reads each open database's lease: a database with no live owner is claimed
/// by its preferred live node (rendezvous hashing), or by any node once it has been orphaned for half a
/// second; a lease whose last sequence is past this node's log position triggers a catch-up (the
/// polling fallback for lost wake-ups). While the owner's commit push is live, wake-ups and lease checks
/// only mark entries as expected, and the log is read for those no push brought within ``pushGrace``.
///
/// For example:
/// ```swift
/// services.append(ClusterCoordinator(context: context, registry: registry, address: "http://10.0.0.5:9000"))
/// ```
package final class ClusterCoordinator: Service, Sendable {
    let context: ClusterContext
    let registry: DatabaseRegistry
    let address: String
    let tick: Duration
    /// Since when each member has been alive without a break, as this node saw it: a database moves to
    /// its preferred node only once that node has been up for ``settling``, so owners do not flap.
    let aliveSince = Mutex<[String: ContinuousClock.Instant]>([:])
    let settling: Duration
    package static let defaultSettling: Duration = .seconds(3)
    /// How long an entry known committed waits for the owner's push (one to two rounds of this) before
    /// it is read from the log: pushes arrive within milliseconds, the wake-up a round trip later.
    let pushGrace: Duration
    package static let defaultPushGrace: Duration = .milliseconds(50)
    /// How long this node must have been alive without a break before it runs the onDisconnect writes
    /// of nodes it finds dead. Longer than the lease time (2 s): after the shared storage restarts,
    /// every node looks dead until its first heartbeat on a new session, and the ones still serving
    /// their clients have all sent it by then.
    let orphanGrace: Duration
    package static let defaultOrphanGrace: Duration = .seconds(3)
    /// This node's generation of heartbeats (``SharedDatabaseStorage/freshGeneration``) and since when
    /// it has seen it unbroken.
    let steadySince = Mutex<(generation: Int, since: ContinuousClock.Instant)?>(nil)

    package init(
        context: ClusterContext, registry: DatabaseRegistry, address: String, tick: Duration = .milliseconds(100),
        pushGrace: Duration = defaultPushGrace, settling: Duration = defaultSettling, orphanGrace: Duration = defaultOrphanGrace
    ) {
        self.context = context
        self.registry = registry
        self.address = address
        self.tick = tick
        self.pushGrace = pushGrace
        self.settling = settling
        self.orphanGrace = orphanGrace
    }

    package func run() async throws {
        let storage = context.storage
        context.logger.notice("Joined the cluster", metadata: ["hearth.cluster.node": "\(storage.nodeName)", "hearth.cluster.address": "\(address)"])
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await notification in storage.commitNotifications() {
                    self.registry.openDatabase(notification.namespace)?.expectCommitted(notification.sequence)
                }
            }
            group.addTask {
                // The fallback for lost pushes: an entry known committed for a whole round that no push
                // brought is read from the log.
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.pushGrace)
                    for database in self.registry.openDatabases where database.replica?.pushOverdue() == true {
                        database.requestCatchUp()
                    }
                }
            }
            group.addTask {
                var rounds = 0
                while !Task.isCancelled {
                    // Every node holds every database (a hot standby for each): open the ones created
                    // elsewhere, about once a second.
                    if rounds % 10 == 0 { await self.openNewDatabases() }
                    rounds += 1
                    await self.superviseOwnership()
                    try? await Task.sleep(for: self.tick)
                }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        // Leaving releases this node's leases, so the others take its databases over at once.
        for database in registry.openDatabases { database.replica?.resumeAllWaiters() }
        try? await storage.leave()
        await context.client.shutdown()
    }

    func openNewDatabases() async {
        guard let names = try? await context.storage.namespaces() else { return }
        for name in names where registry.openDatabase(name) == nil {
            do {
                _ = try await registry.database(name)
            } catch {
                context.logger.warning("Cannot open a database of the cluster", metadata: ["hearth.namespace": "\(name)", "hearth.error": "\(error)"])
            }
        }
    }

    /// One round of lease checks over the open databases.
    func superviseOwnership() async {
        let storage = context.storage
        let me = storage.nodeName
        let alive: Set<String>
        do {
            let members = try await Deadline.run(.seconds(2)) { try await storage.members() }
            context.peers.update(members, me: me)
            alive = Set(members.filter(\.alive).map(\.name))
        } catch {
            context.logger.warning("Cannot read the cluster's members", metadata: ["hearth.error": "\(error)"])
            return
        }
        let now = ContinuousClock.now
        let settled: Set<String> = aliveSince.withLock { since in
            for name in since.keys where !alive.contains(name) { since.removeValue(forKey: name) }
            for name in alive where since[name] == nil { since[name] = now }
            return Set(since.filter { now - $0.value >= settling }.keys)
        }
        for database in registry.openDatabases {
            guard let replica = database.replica else { continue }
            await supervise(database, replica, me: me, alive: alive, settled: settled)
        }
        await runOrphanedOnDisconnects()
    }

    /// The writes of a dead node's connection run as it was, unauthenticated if its token has expired
    /// since (the rules check them as the writes fire, as on the connection's own node).
    static func unauthenticatingExpired(_ requests: [WriteRequest], now: Double) -> [WriteRequest] {
        requests.map { request in
            guard case .user(let auth) = request.identity, case .number(let expires)? = auth["token"]?["exp"], expires <= now else {
                return request
            }
            var anonymous = request
            anonymous.identity = .anonymous
            return anonymous
        }
    }

    /// Runs the onDisconnect writes of connections whose node died with them (taken by one node only),
    /// once this node has been alive for ``orphanGrace`` without a break.
    func runOrphanedOnDisconnects() async {
        let now = ContinuousClock.now
        let steady: Bool = steadySince.withLock { record in
            guard let generation = context.storage.freshGeneration else {
                record = nil
                return false
            }
            if record?.generation != generation { record = (generation, now) }
            return now - (record?.since ?? now) >= orphanGrace
        }
        guard steady else { return }
        let orphaned: [OrphanedOnDisconnect]
        do {
            let storage = context.storage
            orphaned = try await Deadline.run(.seconds(2)) { try await storage.takeOrphanedOnDisconnects() }
        } catch {
            return
        }
        for connection in orphaned {
            do {
                let database = try await registry.database(connection.namespace)
                let requests = ClusterCoordinator.unauthenticatingExpired(
                    try ForwardedWrites.decodeRequests(connection.payload), now: Date().timeIntervalSince1970
                )
                // In order, and again while the database is between owners (these writes are idempotent:
                // running one twice leaves what running it once does).
                Task {
                    for request in requests {
                        for attempt in 1...20 {
                            do {
                                _ = try await database.write(request)
                                break
                            } catch let error as WriteError where error.code == .unavailable && attempt < 20 {
                                try? await Task.sleep(for: .milliseconds(250))
                            } catch {
                                self.context.logger.info(
                                    "An onDisconnect write of a dead node's connection failed", metadata: ["hearth.error": "\(error)"]
                                )
                                break
                            }
                        }
                    }
                }
            } catch {
                context.logger.warning("Cannot run a dead node's onDisconnect writes", metadata: ["hearth.error": "\(error)"])
            }
        }
    }

    private func supervise(_ database: DatabaseInstance, _ replica: DatabaseReplica, me: String, alive: Set<String>, settled: Set<String>) async {
        let lease: DatabaseLease?
        // Seen before the lease is read: a lease read while the heartbeat is not fresh proves nothing.
        let generation = context.storage.freshGeneration
        do {
            let shared = replica.shared
            lease = try await Deadline.run(.seconds(2)) { try await shared.lease() }
        } catch {
            return
        }
        // Ownership follows the storage at once: an owner whose lease moved (another node, or a newer
        // epoch) stops answering from its tree before the writer even hears of it.
        if case .owner(let epoch) = replica.role {
            if let lease, lease.owner == me, lease.epoch == epoch {
                if let generation { replica.verify(epoch: epoch, generation: generation) }
            } else if replica.demote() {
                context.logger.notice("Lost a database's lease", metadata: ["hearth.namespace": "\(database.namespace)"])
            }
        }
        replica.noteLease(lease)
        let lag = max(0, (lease?.lastSequence ?? 0) - replica.applied)
        context.registry.makeGauge(
            name: "hearth_cluster_log_lag", labels: [("namespace", database.namespace)],
            help: "Log entries committed but not yet applied on this node (sampled every lease check)."
        ).set(Double(lag))
        if lag > 0, let lease { database.expectCommitted(lease.lastSequence) }
        if let lease, lease.owner == me {
            // Owned here on paper but not in memory (a restart under the same name, or a takeover
            // that could not finish): claim again for a new epoch.
            if !replica.isOwner {
                if !replica.isClaimPending { await claim(database, replica, previous: nil) }
            } else if let preferred = RendezvousHash.preferred(for: database.namespace, among: alive.union([me])),
                preferred != me, settled.contains(preferred)
            {
                // Spread the owners: the database's preferred node has been up a while, so it takes over.
                database.changeRole(.handOff)
            }
            return
        }
        if let lease, alive.contains(lease.owner) {
            _ = replica.orphaned(false, now: .now)
            if replica.isOwner { database.changeRole(.stepDown) }
            return
        }
        // No live owner.
        let orphanedFor = replica.orphaned(true, now: .now) ?? .zero
        let preferred = RendezvousHash.preferred(for: database.namespace, among: alive.union([me]))
        if preferred == me || orphanedFor > .milliseconds(500) {
            await claim(database, replica, previous: lease?.owner)
        }
    }

    private func claim(_ database: DatabaseInstance, _ replica: DatabaseReplica, previous: String?) async {
        do {
            let shared = replica.shared
            guard let lease = try await Deadline.run(.seconds(2), { try await shared.claim() }) else { return }
            replica.noteLease(lease)
            _ = replica.orphaned(false, now: .now)
            if let previous, previous != context.nodeName {
                context.failovers.increment()
                context.logger.notice(
                    "Took a database over from a node that stopped",
                    metadata: ["hearth.namespace": "\(database.namespace)", "hearth.cluster.previous": "\(previous)"]
                )
            }
            replica.setClaimPending(true)
            database.changeRole(.becomeOwner(lease))
        } catch {
            context.logger.warning("Cannot claim a database", metadata: ["hearth.namespace": "\(database.namespace)", "hearth.error": "\(error)"])
        }
    }
}
