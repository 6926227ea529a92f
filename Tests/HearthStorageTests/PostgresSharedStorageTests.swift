import Foundation
import HashTreeCollections
import HearthCore
import HearthStorage
import PostgresNIO
import Testing

@testable import HearthPostgres

/// What several nodes sharing one PostgreSQL database rely on: leases fenced by epochs, a gapless log in
/// commit order, consistent snapshots, wake-ups (docs/decisions/0010-scale-out.md).
@Suite(.enabled(if: PostgresTestServer.shouldRun, Comment(rawValue: PostgresTestServer.missingMessage)))
struct PostgresSharedStorageTests {
    /// Two or more nodes on one fresh database; shut down and dropped by `finish()`.
    final class Cluster: @unchecked Sendable {
        let url: String
        let name: String
        var nodes: [PostgresStorage] = []

        init() async throws {
            (url, name) = try await PostgresTestServer.freshDatabase()
        }

        func node(_ nodeName: String, leaseTime: Duration = .seconds(2), join: Bool = true) async throws -> PostgresStorage {
            let storage = try await PostgresStorage.connect(url: url, nodeName: nodeName, leaseTime: leaseTime, connectionWait: PostgresTestServer.connectionWait)
            nodes.append(storage)
            if join { try await storage.join(address: "http://\(nodeName).test:9000") }
            return storage
        }

        func finish() async {
            for node in nodes { await node.shutdown() }
            await PostgresTestServer.drop(name)
        }
    }

    func path(_ string: String) throws -> DatabasePath { try DatabasePath(string) }

    /// Polls `condition` every few milliseconds until it holds, for 30 s at most; returns whether it did.
    func holdsSoon(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// Whether a statement whose text is `LIKE pattern` waits for a lock on the server.
    func aStatementWaitsForALock(_ pattern: String, asking node: PostgresStorage) async throws -> Bool {
        let rows = try await node.client.query(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE \(pattern)", logger: node.logger
        )
        for try await count in rows.decode(Int.self) where count > 0 { return true }
        return false
    }

    @Test func aSecondNodeCannotClaimWhileTheOwnerIsAliveAndARestartedOwnerTakesANewEpoch() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let b = try await cluster.node("b")
        let dbA = try await a.openShared(namespace: "demo")
        let dbB = try await b.openShared(namespace: "demo")
        #expect(try await dbA.lease() == nil)
        let first = try #require(try await dbA.claim())
        #expect(first.owner == "a")
        #expect(first.epoch == 1)
        #expect(try await dbB.claim() == nil)
        let seen = try #require(try await dbB.lease())
        #expect(seen.owner == "a")
        #expect(seen.epoch == 1)
        #expect(seen.ownerAddress == "http://a.test:9000")
        let again = try #require(try await dbA.claim())
        #expect(again.epoch == 2)
        #expect(Set(try await b.members().filter(\.alive).map(\.name)) == ["a", "b"])
        await cluster.finish()
    }

    @Test func aCommitWithAStaleEpochIsFencedAndAppliesNothing() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let db = try await a.openShared(namespace: "demo")
        let old = try #require(try await db.claim())
        let sequence = try await db.commit([.replace(try path("/x"), .leaf(.number(1)))], entry: "e1", epoch: old.epoch)
        #expect(sequence == 1)
        let current = try #require(try await db.claim())
        #expect(current.epoch == old.epoch + 1)
        await #expect {
            _ = try await db.commit([.replace(try path("/x"), .leaf(.number(2))), .replace(try path("/y"), .leaf(.number(3)))], entry: "e2", epoch: old.epoch)
        } throws: { error in
            (error as? DatabaseStorageError)?.code == .fenced
        }
        let (loaded, loadedSequence) = try await db.loadWithSequence()
        #expect(loaded.root.jsonString() == #"{"x":1}"#)
        #expect(loadedSequence == 1)
        #expect(try await db.changes(after: 0, limit: 10).map(\.payload) == ["e1"])
        // A node that never held the lease is fenced as well.
        let b = try await cluster.node("b")
        let dbB = try await b.openShared(namespace: "demo")
        await #expect {
            _ = try await dbB.commit([.replace(try path("/x"), .leaf(.number(9)))], entry: "b", epoch: current.epoch)
        } throws: { error in
            (error as? DatabaseStorageError)?.code == .fenced
        }
        #expect(try await db.committedSequence() == 1)
        await cluster.finish()
    }

    /// An owner's commit names the log entry it follows: when other entries came first (another node's
    /// rules change, an import), it is refused as behind and applies nothing; the lease's fence still
    /// comes first.
    @Test func aCommitAfterEntriesTheOwnerHasNotAppliedIsRefusedAndAppliesNothing() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let db = try await a.openShared(namespace: "demo")
        let lease = try #require(try await db.claim())
        #expect(try await db.commit([.replace(try path("/x"), .leaf(.number(1)))], entry: "e1", epoch: lease.epoch, after: 0) == 1)
        let b = try await cluster.node("b")
        try await b.openShared(namespace: "demo").saveRules(#"{"rules": {}}"#, time: 1)
        await #expect {
            _ = try await db.commit([.replace(try path("/x"), .leaf(.number(2)))], entry: "e2", epoch: lease.epoch, after: 1)
        } throws: { error in
            (error as? DatabaseStorageError)?.code == .behind
        }
        #expect(try await db.load().root.jsonString() == #"{"x":1}"#)
        #expect(try await db.committedSequence() == 2)
        #expect(try await db.commit([.replace(try path("/x"), .leaf(.number(3)))], entry: "e3", epoch: lease.epoch, after: 2) == 3)
        _ = try #require(try await db.claim())
        await #expect {
            _ = try await db.commit([], entry: "e4", epoch: lease.epoch, after: 1)
        } throws: { error in
            (error as? DatabaseStorageError)?.code == .fenced
        }
        #expect(try await db.changes(after: 0, limit: 10).map(\.payload) == ["e1", LogEntry.rulesPayload, "e3"])
        await cluster.finish()
    }

    @Test func whenTheOwnersSessionEndsAnotherNodeClaimsWithAHigherEpochWithoutWaitingForTheLease() async throws {
        let cluster = try await Cluster()
        // A lease time far beyond the test's patience: only the closed session can make `a` dead.
        let a = try await cluster.node("a", leaseTime: .seconds(600))
        let b = try await cluster.node("b", leaseTime: .seconds(600))
        let dbA = try await a.openShared(namespace: "demo")
        let dbB = try await b.openShared(namespace: "demo")
        let first = try #require(try await dbA.claim())
        #expect(try await dbB.claim() == nil)
        // Like kill -9: the session closes while the heartbeat is fresh. Its server process exits a moment
        // later, so b tries again, as nodes do every 100 ms.
        await a.shutdown()
        var taken: DatabaseLease?
        let deadline = ContinuousClock.now + .seconds(20)
        while taken == nil, ContinuousClock.now < deadline {
            taken = try await dbB.claim()
            if taken == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(taken?.owner == "b")
        #expect(taken.map { $0.epoch > first.epoch } == true)
        #expect(try await dbB.lease()?.ownerAddress == "http://b.test:9000")
        let member = try #require(try await b.members().first { $0.name == "a" })
        #expect(member.alive == false)
        await cluster.finish()
    }

    @Test func aNodeThatLeftGivesItsLeasesUpAndItsHeartbeatIsNoLongerFresh() async throws {
        let cluster = try await Cluster()
        // A long lease: freshness right after joining must not depend on how fast a loaded machine ran the
        // first heartbeat (a lease of 2 s is fresh for only 1.5 s after the heartbeat started).
        let a = try await cluster.node("a", leaseTime: .seconds(30), join: false)
        #expect(a.isLeaseFresh == false)
        try await a.join(address: "http://a.test:9000")
        #expect(a.isLeaseFresh)
        let b = try await cluster.node("b")
        let first = try #require(try await a.openShared(namespace: "demo").claim())
        try await a.leave()
        #expect(a.isLeaseFresh == false)
        #expect(a.freshGeneration == nil)
        #expect(try await b.members().map(\.name) == ["b"])
        let dbB = try await b.openShared(namespace: "demo")
        #expect(try await dbB.lease() == nil)
        #expect(try await dbB.claim()?.epoch == first.epoch + 1)
        await cluster.finish()
    }

    @Test func heartbeatsKeepTheLeaseFreshBeyondTheLeaseTime() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let b = try await cluster.node("b")
        _ = try #require(try await a.openShared(namespace: "demo").claim())
        try await Task.sleep(for: .seconds(3))
        // Past the lease time of the join's heartbeat, later heartbeats keep `a` fresh and alive. (On a
        // starved machine one may come late, and the lease is stale meanwhile, as it should be: so this
        // waits for a moment where both hold, up to 30 s.)
        let dbB = try await b.openShared(namespace: "demo")
        var held = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !held, ContinuousClock.now < deadline {
            let claimed = try await dbB.claim()
            held = claimed == nil && a.isLeaseFresh
            if !held { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(held)
        #expect(try await dbB.lease()?.owner == "a")
        await cluster.finish()
    }

    /// Two heartbeats in a row that start on schedule but commit slowly (here: their membership row is
    /// locked; in life, a storage slow to commit): until the second commits, the others see the first's
    /// time, which ages past the lease, so they may take the node's leases, although no two heartbeats
    /// started far apart. When the second commits, the node must not carry on with the generation its
    /// owners verified their leases in.
    @Test func heartbeatsThatCommitLateStartANewGenerationThoughTheyStartedOnSchedule() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a", leaseTime: .seconds(1))
        let b = try await cluster.node("b", leaseTime: .seconds(1))
        let side = try await cluster.node("side", join: false)
        let before = try #require(a.freshGeneration)
        var seenDead = false
        try await side.client.withConnection { connection in
            // The first heartbeat waits 0.4 s: it commits well within the lease, with its start time.
            try await connection.query("BEGIN", logger: side.logger).consume()
            try await connection.query("SELECT 1 FROM hearth_members WHERE name = 'a' FOR UPDATE", logger: side.logger).consume()
            let firstWaits = try await holdsSoon { try await aStatementWaitsForALock("UPDATE hearth_members%", asking: side) }
            #expect(firstWaits, "a's heartbeat never waited for the lock")
            try await Task.sleep(for: .milliseconds(400))
            try await connection.query("COMMIT", logger: side.logger).consume()
            // The next one, a sixth of the lease later, waits until the others see a dead.
            try await connection.query("BEGIN", logger: side.logger).consume()
            try await connection.query("SELECT 1 FROM hearth_members WHERE name = 'a' FOR UPDATE", logger: side.logger).consume()
            let nextWaits = try await holdsSoon { try await aStatementWaitsForALock("UPDATE hearth_members%", asking: side) }
            #expect(nextWaits, "a's heartbeat never waited for the lock")
            seenDead = try await holdsSoon { try await b.members().first { $0.name == "a" }?.alive == false }
            try await connection.query("COMMIT", logger: side.logger).consume()
        }
        #expect(seenDead)
        let fresh = try await holdsSoon { a.freshGeneration != nil }
        #expect(fresh)
        #expect(a.freshGeneration != before)
        await cluster.finish()
    }

    /// A claim that started while the owner was dead, and waited for the lease row behind a commit in
    /// flight, judges the owner alive or dead only once it has the row: by then the owner may be back,
    /// with a new heartbeat, and have read its lease as its own (its tree then answers alone).
    @Test func aClaimThatWaitedBehindACommitJudgesTheOwnerAfterItsWait() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a", leaseTime: .seconds(1))
        let b = try await cluster.node("b", leaseTime: .seconds(1))
        let side = try await cluster.node("side", join: false)
        let dbA = try await a.openShared(namespace: "demo")
        let dbB = try await b.openShared(namespace: "demo")
        let first = try #require(try await dbA.claim())
        let claim: Task<DatabaseLease?, any Error> = try await side.client.withConnection { connection in
            // The owner's commit in flight holds the lease row. (A lock only: a new version of the row would
            // also hold up the claim's INSERT … ON CONFLICT, in a statement of its own.)
            try await connection.query("BEGIN", logger: side.logger).consume()
            try await connection.query("SELECT 1 FROM hearth_databases WHERE db = 'demo' FOR UPDATE", logger: side.logger).consume()
            a.pauseHeartbeats()
            let seenDead = try await holdsSoon { try await b.members().first { $0.name == "a" }?.alive == false }
            #expect(seenDead)
            let claim = Task { try await dbB.claim() }
            let claimWaits = try await holdsSoon { try await aStatementWaitsForALock("%hearth_databases%", asking: side) }
            #expect(claimWaits, "b's claim never waited for the lease row")
            // The owner comes back and reads its lease while it is fresh.
            a.pauseHeartbeats(false)
            let fresh = try await holdsSoon { a.freshGeneration != nil }
            #expect(fresh)
            #expect(try await dbA.lease()?.owner == "a")
            try await connection.query("COMMIT", logger: side.logger).consume()
            return claim
        }
        #expect(try await claim.value == nil)
        #expect(try await dbA.lease()?.epoch == first.epoch)
        await cluster.finish()
    }

    @Test func aHungOwnerLosesItsLeaseAfterTheLeaseTimeAndKnowsItFirst() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a", leaseTime: .seconds(1))
        let b = try await cluster.node("b", leaseTime: .seconds(1))
        let dbB = try await b.openShared(namespace: "demo")
        let first = try #require(try await a.openShared(namespace: "demo").claim())
        a.pauseHeartbeats()
        // Whenever another node can take the lease, the owner must already have stopped trusting it:
        // its freshness ends half a second before the lease time does.
        var taken: DatabaseLease?
        let deadline = ContinuousClock.now + .seconds(30)
        while taken == nil, ContinuousClock.now < deadline {
            taken = try await dbB.claim()
            // Read after the claim succeeded, so no scheduling delay can make this pass or fail by luck:
            // b's claim means the last heartbeat started over a lease time ago.
            if taken != nil {
                #expect(a.isLeaseFresh == false)
                #expect(a.freshGeneration == nil)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(taken?.owner == "b")
        #expect(taken.map { $0.epoch > first.epoch } == true)
        #expect(a.isLeaseFresh == false)
        #expect(try await b.members().first { $0.name == "a" }?.alive == false)
        await cluster.finish()
    }

    @Test func theLogIsGaplessAndInOrderWithConcurrentWritersOnTwoNodes() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let b = try await cluster.node("b")
        let dbA = try await a.openShared(namespace: "demo")
        let dbB = try await b.openShared(namespace: "demo")
        let lease = try #require(try await dbA.claim())
        let perWriter = 40
        async let fromA: [Int64] = {
            var sequences: [Int64] = []
            for i in 0..<perWriter {
                sequences.append(try await dbA.commit([.replace(try DatabasePath("/a/\(i)"), .leaf(.number(Double(i))))], entry: "a\(i)", epoch: lease.epoch))
            }
            return sequences
        }()
        async let fromB: [Int64] = {
            var sequences: [Int64] = []
            for i in 0..<perWriter { sequences.append(try await dbB.append(entry: "b\(i)")) }
            return sequences
        }()
        let (sequencesA, sequencesB) = try await (fromA, fromB)
        #expect(sequencesA == sequencesA.sorted())
        #expect(sequencesB == sequencesB.sorted())
        let log = try await dbB.changes(after: 0, limit: 1000)
        #expect(log.map(\.sequence) == Array(1...Int64(2 * perWriter)))
        #expect(log.filter { $0.payload.hasPrefix("a") }.map(\.payload) == (0..<perWriter).map { "a\($0)" })
        #expect(log.filter { $0.payload.hasPrefix("b") }.map(\.payload) == (0..<perWriter).map { "b\($0)" })
        #expect(Dictionary(uniqueKeysWithValues: log.map { ($0.payload, $0.sequence) })["a7"] == sequencesA[7])
        #expect(try await dbA.committedSequence() == Int64(2 * perWriter))
        let applied = try await dbB.load().root
        #expect(applied.child(at: try path("/a")).childCount == perWriter)
        #expect(applied.child(at: try path("/a/7")) == .leaf(.number(7)))
        await cluster.finish()
    }

    @Test func changesAfterASequenceComeInOrderUpToTheLimit() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let db = try await a.openShared(namespace: "demo")
        let lease = try #require(try await db.claim())
        for i in 1...5 { _ = try await db.commit([], entry: "e\(i)", epoch: lease.epoch) }
        #expect(try await db.changes(after: 2, limit: 2) == [LogEntry(sequence: 3, payload: "e3"), LogEntry(sequence: 4, payload: "e4")])
        #expect(try await db.changes(after: 5, limit: 10).isEmpty)
        #expect(try await db.changes(after: 0, limit: 100).count == 5)
        // Plain commits (tools, imports) append the reload entry.
        try await db.commit([.replace(try path("/z"), .leaf(.bool(true)))])
        #expect(try await db.changes(after: 5, limit: 10) == [LogEntry(sequence: 6, payload: LogEntry.reloadPayload)])
        await cluster.finish()
    }

    @Test func theLogIsTrimmedToItsRetentionButKeepsTheLastTenThousandEntries() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let db = try await a.openShared(namespace: "demo")
        let lease = try #require(try await db.claim())
        // 11,999 entries, the first 11,000 ten minutes old (beyond the 5-minute retention).
        try await a.execute(unsafeSQL: """
            INSERT INTO hearth_log (db, seq, payload, committed_at)
            SELECT 'demo', s, 'old', CASE WHEN s <= 11000 THEN now() - interval '10 minutes' ELSE now() END
            FROM generate_series(1, 11999) AS s
            """)
        try await a.execute(unsafeSQL: "UPDATE hearth_databases SET last_seq = 11999 WHERE db = 'demo'")
        // Commit 12,000 (a multiple of 1,000) trims: old entries before the last 10,000 go.
        #expect(try await db.commit([], entry: "new", epoch: lease.epoch) == 12_000)
        let log = try await db.changes(after: 0, limit: 3)
        #expect(log.map(\.sequence) == [2001, 2002, 2003])
        // A reader that asked for an entry that is gone sees the gap and reloads.
        #expect(try await db.changes(after: 5, limit: 1).first?.sequence == 2001)
        #expect(try await db.changes(after: 11_999, limit: 5) == [LogEntry(sequence: 12_000, payload: "new")])
        await cluster.finish()
    }

    @Test func loadWithSequenceIsOneSnapshotWhileCommitsGoOn() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let b = try await cluster.node("b")
        let db = try await a.openShared(namespace: "demo")
        let reader = try await b.openShared(namespace: "demo")
        let lease = try #require(try await db.claim())
        // Each commit i sets /n = i and adds /items/i: a snapshot at sequence s has n == s and s items.
        let writer = Task {
            for i in 1...150 {
                _ = try await db.commit(
                    [.replace(try DatabasePath("/n"), .leaf(.number(Double(i)))), .replace(try DatabasePath("/items/\(i)"), .leaf(.bool(true)))],
                    entry: "\(i)",
                    epoch: lease.epoch
                )
            }
        }
        var checked = 0
        while checked < 20 {
            let (loaded, sequence) = try await reader.loadWithSequence()
            let n = loaded.root.child(at: try path("/n"))
            if sequence == 0 {
                #expect(loaded.root.isEmpty)
            } else {
                #expect(n == .leaf(.number(Double(sequence))))
                #expect(loaded.root.child(at: try path("/items")).childCount == Int(sequence))
            }
            checked += 1
        }
        try await writer.value
        let (final, sequence) = try await reader.loadWithSequence()
        #expect(sequence == 150)
        #expect(try await reader.committedSequence() == 150)
        #expect(final.root.child(at: try path("/items")).childCount == 150)
        await cluster.finish()
    }

    @Test func notificationsReachTheOtherNodes() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let b = try await cluster.node("b")
        let db = try await a.openShared(namespace: "demo")
        let lease = try #require(try await db.claim())
        let sequence = try await db.commit([.replace(try path("/x"), .leaf(.number(1)))], entry: "e", epoch: lease.epoch)
        let notifications = b.commitNotifications()
        // LISTEN starts with the session; until it is in place a wake-up may be lost (by design), so send
        // until one arrives.
        let sender = Task {
            while !Task.isCancelled {
                try await db.notify(sequence: sequence)
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let received = await firstElement(of: notifications)
        sender.cancel()
        #expect(received == CommitNotification(namespace: "demo", sequence: sequence))
        await cluster.finish()
    }

    @Test func savingRulesAppendsALogEntryAndKeepsTheHistory() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let db = try await a.openShared(namespace: "demo")
        try await db.saveRules(#"{"rules": {".read": true}}"#, time: 10)
        #expect(try await db.changes(after: 0, limit: 10) == [LogEntry(sequence: 1, payload: #"{"rules":true}"#)])
        #expect(LogEntry.rulesPayload == #"{"rules":true}"#)
        let (loaded, sequence) = try await db.loadWithSequence()
        #expect(loaded.rulesSource == #"{"rules": {".read": true}}"#)
        #expect(sequence == 1)
        #expect(try await db.rulesHistory(limit: 5).map(\.time) == [10])
        #expect(try await a.contains(namespace: "demo"))
        await cluster.finish()
    }

    @Test func aLargeCommitRoundTrips() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        let db = try await a.openShared(namespace: "big")
        let lease = try #require(try await db.claim())
        var children = Node.Children()
        for i in 0..<20_000 {
            children.entries[Key("item\(i)")] = .children(Node.Children(entries: [Key("n"): .leaf(.number(Double(i))), Key("s"): .leaf(.string("v\(i)"))]))
        }
        let tree = Node.children(children)
        _ = try await db.commit([.replace(.root, tree)], entry: "big", epoch: lease.epoch)
        // Replacing it again upserts over existing rows and deletes the rest.
        _ = try await db.commit([.replace(try path("/item5"), .leaf(.number(5))), .setPriority(try path("/item6"), .number(1))], entry: "small", epoch: lease.epoch)
        let loaded = try await db.load().root
        #expect(loaded.childCount == 20_000)
        #expect(loaded.child(at: try path("/item5")) == .leaf(.number(5)))
        #expect(loaded.child(at: try path("/item6")).priority == .number(1))
        #expect(loaded.child(at: try path("/item19999/s")) == .leaf(.string("v19999")))
        #expect(try await db.storedBytes() ?? 0 > 0)
        await cluster.finish()
    }

    @Test func invalidNamespacesAreRejected() async throws {
        let cluster = try await Cluster()
        let a = try await cluster.node("a")
        #expect {
            _ = try a.openNamespace("../escape")
        } throws: { error in
            (error as? DatabaseStorageError)?.code == .invalidNamespace
        }
        #expect(try await a.contains(namespace: "not valid!") == false)
        await cluster.finish()
    }
}

/// No server needed: what the PostgreSQL backend does before it talks to one.
@Suite struct PostgresStorageOfflineTests {
    @Test func anUnreachableServerIsReportedWithWhatToCheckAndNeverThePassword() async throws {
        await #expect {
            _ = try await PostgresStorage.connect(url: "postgres://hearth:s3cret-pw@127.0.0.1:1/hearth", nodeName: "a")
        } throws: { error in
            guard let error = error as? DatabaseStorageError else { return false }
            return error.code == .unavailable && !error.message.contains("s3cret-pw")
                && error.message.contains("hearth@127.0.0.1:1/hearth") && error.message.contains("Check that the server is running")
        }
    }

    @Test func urlsAreParsed() throws {
        let endpoint = try PostgresEndpoint(url: "postgres://user:p%40ss@db.example:6543/hearth?sslmode=disable")
        #expect(endpoint.host == "db.example")
        #expect(endpoint.port == 6543)
        #expect(endpoint.username == "user")
        #expect(endpoint.password == "p@ss")
        #expect(endpoint.database == "hearth")
        #expect(endpoint.tls == .disable)
        #expect(endpoint.description == "user@db.example:6543/hearth")
        #expect(try PostgresEndpoint(url: endpoint.url) == endpoint)
        #expect(try PostgresEndpoint(url: "postgresql://me@localhost").database == "me")
        #expect(throws: DatabaseStorageError.self) { try PostgresEndpoint(url: "mysql://x@y/z") }
        #expect(throws: DatabaseStorageError.self) { try PostgresEndpoint(url: "postgres://x@y/z?sslmode=sometimes") }
    }

    @Test func mutationsBecomeOrderedRowOperationsWithRepeatedWritesFolded() throws {
        let a = try DatabasePath("/a")
        let operations = RowOperations([
            .replace(a, .leaf(.number(1), priority: .string("p"))),
            .setPriority(a, .number(2)),
            .removeLeafValue(a),
            .setPriority(a, nil),
        ])
        let key = NodeRows.key(a)
        let priority = NodeRows.priorityKey(a)
        let range = NodeRows.descendantRange(a)
        // Netted: the deletes first; the replace's rows were undone by the later deletes, so no write is left.
        #expect(operations.kinds == ["d", "r", "d", "d"])
        #expect(operations.keys == [key, range.lower, key, priority])
        #expect(operations.values == ["", range.upper, "", ""])
    }

    @Test func aBatchOfWritesIsItsDeletesThenTheWritesThatSurvive() throws {
        let b = try DatabasePath("/b")
        let bc = try DatabasePath("/b/c")
        let d = try DatabasePath("/d")
        let operations = RowOperations([
            .replace(bc, .leaf(.number(1))),
            .replace(d, .leaf(.string("x"), priority: .number(3))),
            .setPriority(d, .number(4)),
            // Replacing /b undoes the write of /b/c above; its own row survives.
            .replace(b, .leaf(.bool(true))),
            .replace(bc, .empty),
        ])
        #expect(operations.kinds == ["d", "r", "d", "r", "d", "r", "d", "r", "i", "i", "i"])
        #expect(operations.keys.suffix(3) == [NodeRows.key(d), NodeRows.priorityKey(d), NodeRows.key(b)])
        #expect(operations.values.suffix(3) == [#""x""#, "4", "true"])
        // Applied to a table of rows, in order or netted, they leave the same rows.
        #expect(RowOperationsModel.apply(operations) == RowOperationsModel.applyInOrder([
            .replace(bc, .leaf(.number(1))),
            .replace(d, .leaf(.string("x"), priority: .number(3))),
            .setPriority(d, .number(4)),
            .replace(b, .leaf(.bool(true))),
            .replace(bc, .empty),
        ]))
    }

    @Test func nettingRandomBatchesKeepsTheEndStateOfApplyingThemInOrder() throws {
        var random = SplitMix(seed: 7)
        let names = ["a", "b", "c"]
        for _ in 0..<200 {
            var mutations: [StorageMutation] = []
            for _ in 0..<Int(random.next() % 12) {
                let depth = Int(random.next() % 3) + 1
                let path = DatabasePath(keys: (0..<depth).map { _ in Key(names[Int(random.next() % 3)]) })
                switch random.next() % 5 {
                case 0: mutations.append(.replace(path, .empty))
                case 1: mutations.append(.removeLeafValue(path))
                case 2: mutations.append(.setPriority(path, random.next() % 2 == 0 ? nil : .number(Double(random.next() % 9))))
                case 3: mutations.append(.replace(path, try Node(json: try JSONValue(parsing: #"{"x": 1, "y": {"z": 2}}"#))))
                default: mutations.append(.replace(path, .leaf(.number(Double(random.next() % 100)))))
                }
            }
            var seeded: [String: String] = [:]
            for name in names { seeded[NodeRows.key(DatabasePath(keys: [Key(name), Key("old")]))] = "0" }
            #expect(RowOperationsModel.apply(RowOperations(mutations), to: seeded) == RowOperationsModel.applyInOrder(mutations, to: seeded))
        }
    }
}

/// A table of rows in memory, to compare netted operations with the mutations applied one by one.
enum RowOperationsModel {
    static func apply(_ operations: RowOperations, to rows: [String: String] = [:]) -> [String: String] {
        var rows = rows
        for (kind, (key, value)) in zip(operations.kinds, zip(operations.keys, operations.values)) {
            switch kind {
            case "d": rows.removeValue(forKey: key)
            case "r": rows = rows.filter { !($0.key >= key && $0.key < value) }
            case "i":
                #expect(rows[key] == nil, "an insert of a row that exists")
                rows[key] = value
            default: rows[key] = value
            }
        }
        return rows
    }

    static func applyInOrder(_ mutations: [StorageMutation], to rows: [String: String] = [:]) -> [String: String] {
        var rows = rows
        for mutation in mutations {
            var one = RowOperations()
            one.append([mutation])
            rows = apply(one, to: rows)
        }
        return rows
    }
}
