import HearthAccess
import HearthCore
@testable import HearthEngine
import HearthStorage
import Logging
import Synchronization
import Testing

/// The engine's side of taking a database over, without the coordinator's timing: claims and role
/// changes are made by hand, in the order a loaded machine can produce them.
@Suite struct OwnershipClaimTests {
    /// What a database's replica needs of its cluster, with no peers: nothing is pushed or forwarded.
    final class LoneLink: ClusterLink {
        let storage: any SharedDatabaseStorage
        let nodeName: String
        let logger = Logger(label: "hearth.ownership-test")

        init(_ storage: InMemorySharedStorage) {
            self.storage = storage
            self.nodeName = storage.nodeName
        }

        func isPeerLive(_ node: String) -> Bool { false }
        func publishCommitted(namespace: String, _ entry: LogEntry) {}
        func noteApplied(fromPush: Bool) {}
        func sendToOwner(_ batch: [DatabaseInstance.Pending], of database: DatabaseInstance, replica: DatabaseReplica) async {
            for pending in batch { pending.complete(.failure(WriteError.noOwner)) }
        }
    }

    /// One node's database "demo", its writer running until the returned task is cancelled.
    static func open(_ storage: InMemorySharedStorage) async throws -> (DatabaseInstance, DatabaseReplica, writers: Task<Void, any Error>) {
        var logger = Logger(label: "hearth.ownership-test.\(storage.nodeName)")
        logger.logLevel = .critical
        let registry = DatabaseRegistry(storage: storage, configuration: EngineConfiguration(), logger: logger, cluster: LoneLink(storage))
        let writers = Task { try await registry.run() }
        let database = try await registry.database("demo")
        return (database, try #require(database.replica), writers)
    }

    /// Node "a" alone in a new cluster, owning "demo" with a fresh lease.
    static func lonelyOwner() async throws -> (InMemorySharedCluster, InMemorySharedStorage, DatabaseInstance, DatabaseReplica, writers: Task<Void, any Error>) {
        let cluster = InMemorySharedCluster()
        let a = cluster.node("a")
        try await a.join(address: "http://a.test")
        let (database, replica, writers) = try await open(a)
        try await eventually { replica.isLeaseFresh }
        return (cluster, a, database, replica, writers)
    }

    static func set(_ database: DatabaseInstance, _ value: Double) async throws {
        _ = try await database.write(WriteRequest(.set(try DatabasePath("/x"), .number(value)), identity: .admin))
    }

    /// The storage server restarts. The owner's session opens again, and it claims the database again
    /// (a new epoch, as the lease still names it) before its first heartbeat, while the others still
    /// see it dead. Another node takes the database over and writes. Only then does the first node's
    /// writer, held up by a catch-up, get to its old claim: its tree, without the other node's write,
    /// must not answer reads alone.
    @Test func aClaimOvertakenBeforeTheWriterActsOnItDoesNotMakeItsNodeTheOwner() async throws {
        let cluster = InMemorySharedCluster()
        let a = cluster.node("a")
        let b = cluster.node("b")
        try await a.join(address: "http://a.test")
        try await b.join(address: "http://b.test")
        let (databaseA, replicaA, writersA) = try await Self.open(a)
        defer { writersA.cancel() }
        try await eventually { replicaA.isLeaseFresh }
        try await Self.set(databaseA, 1)

        cluster.kill("a")
        cluster.reconnect("a")
        #expect(a.freshGeneration == nil)
        #expect(!replicaA.isLeaseFresh)
        let overtaken = try #require(try await replicaA.shared.claim())

        let (databaseB, replicaB, writersB) = try await Self.open(b)
        defer { writersB.cancel() }
        let lease = try #require(try await replicaB.shared.claim(), "a looks dead until its heartbeat: b may take the database")
        #expect(lease.epoch > overtaken.epoch)
        replicaB.setClaimPending(true)
        databaseB.changeRole(.becomeOwner(lease))
        try await eventually { replicaB.isLeaseFresh }
        try await Self.set(databaseB, 2)

        cluster.heartbeat("a")
        #expect(a.freshGeneration != nil)
        replicaA.setClaimPending(true)
        databaseA.changeRole(.becomeOwner(overtaken))
        try await eventually { !replicaA.isClaimPending }
        #expect(!replicaA.isOwner)
        #expect(!replicaA.isLeaseFresh)
        try await databaseA.readBarrier()
        #expect(databaseA.snapshot().child(at: try DatabasePath("/x")).jsonValue == .number(2))
    }

    /// A claim made while the heartbeat is not fresh is still this node's when the writer gets to it:
    /// the node takes writes (the storage fences them), but its tree answers alone only once a lease
    /// check sees the lease while the heartbeat is fresh.
    @Test func aClaimMadeWhileTheHeartbeatLapsedTakesWritesButAnswersAloneOnlyOnceChecked() async throws {
        let (cluster, a, database, replica, writers) = try await Self.lonelyOwner()
        defer { writers.cancel() }

        cluster.pause("a")
        _ = replica.demote()
        let claimed = try #require(try await replica.shared.claim())
        replica.setClaimPending(true)
        database.changeRole(.becomeOwner(claimed))
        try await eventually { !replica.isClaimPending }
        #expect(replica.role == .owner(epoch: claimed.epoch))
        cluster.resume("a")
        #expect(!replica.isLeaseFresh)
        try await Self.set(database, 3)
        #expect(database.snapshot().child(at: try DatabasePath("/x")).jsonValue == .number(3))

        let generation = try #require(a.freshGeneration)
        #expect(try await replica.shared.lease()?.epoch == claimed.epoch)
        replica.verify(epoch: claimed.epoch, generation: generation)
        #expect(replica.isLeaseFresh)
    }

    /// An owner not sure of its lease answers a read once its tree includes every write the storage has
    /// committed. It counts its own commit as applied before it publishes the tree (the other nodes
    /// may show that write already): the read must wait for that tree too.
    @Test func aReadOnAnOwnerNotSureOfItsLeaseWaitsForTheTreeOfItsCommitInFlight() async throws {
        let (cluster, _, database, replica, writers) = try await Self.lonelyOwner()
        defer { writers.cancel() }
        guard case .owner(let epoch) = replica.role else { throw ConditionNotMet() }

        cluster.pause("a")
        // Where the writer stands between its commit and publishing the tree.
        replica.beginCommit()
        let sequence = try await replica.shared.commit(
            [.replace(try DatabasePath("/x"), .leaf(.number(7)))],
            entry: "{}",
            epoch: epoch
        )
        #expect(replica.committed(sequence))
        let answered = Atomic(false)
        let read = Task {
            try await database.readBarrier()
            answered.store(true, ordering: .sequentiallyConsistent)
        }
        try await Task.sleep(for: .milliseconds(100))
        let early = answered.load(ordering: .sequentiallyConsistent)
        #expect(!early, "the read went on before the commit's tree was published")
        replica.settleCommit()
        try await read.value
    }
}
