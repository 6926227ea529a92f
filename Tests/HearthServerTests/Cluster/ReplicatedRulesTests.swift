import HearthAccess
import HearthCore
@testable import HearthEngine
import HearthRules
import HearthStorage
import Testing

/// Rules saved on the nodes of a cluster: every node ends with the newest version stored, whatever the
/// order in which saves and log entries reach it.
@Suite struct ReplicatedRulesTests {
    static let open = #"{"rules": {".read": true, ".write": true}}"#
    static let closed = #"{"rules": {".read": false, ".write": false}}"#

    /// Two nodes "a" and "b" of a new cluster, each with the database "demo" open.
    static func twoNodes() async throws -> (
        InMemorySharedCluster, a: (DatabaseInstance, DatabaseReplica), b: DatabaseInstance, writers: [Task<Void, any Error>]
    ) {
        let cluster = InMemorySharedCluster()
        try await cluster.node("a").join(address: "http://a.test")
        try await cluster.node("b").join(address: "http://b.test")
        let (databaseA, replicaA, writersA) = try await OwnershipClaimTests.open(cluster.node("a"))
        let (databaseB, _, writersB) = try await OwnershipClaimTests.open(cluster.node("b"))
        return (cluster, (databaseA, replicaA), databaseB, [writersA, writersB])
    }

    /// Node a saves rules, b saves newer ones, and a applies b's entry from the log; only then does a's
    /// own save finish putting its rules in force (a save's last step can come that late on a loaded
    /// machine). The older rules must not replace the newer ones: a would keep them until the next save.
    @Test func aSaveThatFinishesLastDoesNotPutBackOlderRules() async throws {
        let (cluster, (databaseA, replicaA), databaseB, writers) = try await Self.twoNodes()
        defer { writers.forEach { $0.cancel() } }
        _ = cluster
        try await databaseA.replaceRules(try RulesDocument(source: Self.open))
        let first = try #require(try await replicaA.shared.rulesHistory(limit: 1).first)
        #expect(first.source == Self.open)

        try await databaseB.replaceRules(try RulesDocument(source: Self.closed))
        databaseA.requestCatchUp()
        try await eventually { databaseA.rules.source == Self.closed }

        databaseA.adopt(try RulesDocument(source: first.source), version: first.version)
        #expect(databaseA.rules.source == Self.closed)
    }

    /// A node that applies a rules entry of the log but cannot read the rules then must read them on a
    /// later catch-up: the entry stays unapplied until the rules are in force.
    @Test func rulesThatCannotBeReadWhenTheirEntryIsAppliedAreReadOnTheNextCatchUp() async throws {
        let (cluster, (databaseA, replicaA), databaseB, writers) = try await Self.twoNodes()
        defer { writers.forEach { $0.cancel() } }
        cluster.failRulesReads(of: "a")
        try await databaseB.replaceRules(try RulesDocument(source: Self.closed))
        let saved = try await replicaA.shared.committedSequence()

        let reads = cluster.logReads(by: "a")
        databaseA.requestCatchUp()
        try await eventually { cluster.logReads(by: "a") > reads }
        try await Task.sleep(for: .milliseconds(50))
        #expect(databaseA.rules.source != Self.closed)

        cluster.failRulesReads(of: "a", false)
        databaseA.requestCatchUp()
        try await eventually { databaseA.rules.source == Self.closed && replicaA.applied >= saved }
    }

    /// Stored rules that do not parse (saved by a node of another version, say) put the default rules
    /// in force when their entry is applied, as opening the database does; they do not hold the log up.
    @Test func storedRulesThatDoNotParsePutTheDefaultsInForceAndTheLogGoesOn() async throws {
        let (_, (databaseA, replicaA), databaseB, writers) = try await Self.twoNodes()
        defer { writers.forEach { $0.cancel() } }
        try await databaseA.replaceRules(try RulesDocument(source: Self.open))
        try await databaseB.replica?.shared.saveRules(#"{"rules": {".read": "no such thing"#, time: 1)
        let saved = try await replicaA.shared.committedSequence()
        databaseA.requestCatchUp()
        try await eventually { replicaA.applied >= saved }
        #expect(databaseA.rules.source == RulesDocument.defaults(open: false).source)
    }

    /// The owner checks writes against its rules. Rules another node saved are an entry of the log the
    /// owner has not applied yet (no wake-up, no lease check here): a write it checks now must not
    /// commit under the old rules. Its commit is refused, the owner applies the entry, and checks the
    /// write again.
    @Test func aWriteTheOwnerChecksAfterAnotherNodeSavedRulesIsCheckedAgainstThem() async throws {
        let (_, (databaseA, replicaA), databaseB, writers) = try await Self.twoNodes()
        defer { writers.forEach { $0.cancel() } }
        try await eventually { replicaA.isLeaseFresh }
        try await databaseA.replaceRules(try RulesDocument(source: Self.open))
        let user = Identity.user(.object([("uid", .string("ada"))]))
        _ = try await databaseA.write(WriteRequest(.set(try DatabasePath("/x"), .number(1)), identity: user))

        // Nothing left for a to read from the log (its own rules entry came before its write).
        let committed = try await replicaA.shared.committedSequence()
        try await eventually { replicaA.applied == committed }

        try await databaseB.replaceRules(try RulesDocument(source: Self.closed))
        await #expect {
            _ = try await databaseA.write(WriteRequest(.set(try DatabasePath("/x"), .number(2)), identity: user))
        } throws: { error in
            (error as? WriteError)?.code == .permissionDenied
        }
        #expect(databaseA.rules.source == Self.closed)
        #expect(databaseA.snapshot().child(at: try DatabasePath("/x")).jsonString() == "1")
    }
}
