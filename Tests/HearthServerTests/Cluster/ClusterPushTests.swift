@testable import HearthCluster
import HearthCore
import HearthEngine
import HearthRules
@testable import HearthServer
import HearthStorage
import NIOHTTP1
import Testing

/// The commit push between nodes: an owner's commits reach the other nodes without the shared storage's
/// wake-ups or polling, and an entry no push brings is read from the log.
@Suite(.serialized) struct ClusterPushTests {
    /// Starts "a" (the owner of "demo") and "c", which checks leases only every ten minutes and, once its
    /// push stream from "a" is live, hears no wake-ups: from then on only a push or a gap it notices
    /// brings it anything. Its grace for a late push and its patience with a quiet stream are long, so
    /// that on a busy machine (the whole suite runs at once on 2 cores) a push slowed down is not read
    /// from the log instead, and a stream whose heartbeats are late is not dropped and opened again
    /// (which loses the entries committed meanwhile: the log brings them).
    ///
    /// The follower is "c" because the rendezvous hash prefers "a" to it for "demo": with a follower
    /// the hash prefers ("b"), "a" hands the database over once that node has been up for a few
    /// seconds, which a slow run reaches; the follower, checking leases every ten minutes, does not
    /// claim it, so "a" takes it back and hands it over again, and a write caught between fails.
    func ownerAndQuietFollower() async throws -> (ClusterTestNodes, DatabaseInstance) {
        #expect(RendezvousHash.preferred(for: "demo", among: ["a", "c"]) == "a")
        let nodes = ClusterTestNodes()
        try await nodes.start("a")
        _ = try await nodes.call("a", .PUT, "/n.json", "0")
        try await nodes.start("c", tick: .seconds(600), pushGrace: .seconds(60), pushReadTimeout: .seconds(60))
        let registry = try nodes.registry("c")
        try await eventually { (registry.cluster as? ClusterContext)?.peers.isLive("a") == true }
        nodes.cluster.silenceWakeUps()
        let database = try #require(registry.openDatabase("demo"))
        return (nodes, database)
    }

    func value(_ database: DatabaseInstance, _ key: String) -> String {
        database.snapshot().child(at: DatabasePath(keys: [Key(key)])).jsonString(format: .export)
    }

    @Test func anOwnersCommitsReachAnotherNodeByPushAlone() async throws {
        let (nodes, onFollower) = try await ownerAndQuietFollower()
        let feedOfA = try #require((try nodes.registry("a").cluster as? ClusterContext)?.feed)
        let streamsBefore = feedOfA.subscriptionsOpened
        let readsBefore = nodes.cluster.logReads(by: "c")
        for value in 1...20 {
            let reply = try await nodes.call("a", .PUT, "/n.json", "\(value)")
            #expect(reply.status == .ok, "\(reply.body)")
        }
        try await eventually { value(onFollower, "n") == "20" }
        #expect(nodes.cluster.owner(of: "demo") == "a")
        // One stream all along, and nothing came from the log: every entry was pushed, in order.
        #expect(feedOfA.subscriptionsOpened == streamsBefore, "the push stream was opened again")
        #expect(nodes.cluster.logReads(by: "c") == readsBefore)
        await nodes.stopAll()
    }

    @Test func anEntryNoPushBringsIsReadFromTheLog() async throws {
        let (nodes, onFollower) = try await ownerAndQuietFollower()
        let readsBefore = nodes.cluster.logReads(by: "c")
        // Another node changes the rules: a log entry that nobody pushes.
        let rules = #"{"rules": {".read": true, ".write": true}}"#
        try await nodes.cluster.node("x").openShared(namespace: "demo").saveRules(rules, time: 0)
        // The owner's next commit is pushed one past it: "c" sees the gap and reads the log.
        #expect(try await nodes.call("a", .PUT, "/n.json", "1").status == .ok)
        try await eventually { value(onFollower, "n") == "1" }
        #expect(onFollower.rules.source == rules)
        #expect(nodes.cluster.logReads(by: "c") > readsBefore)
        await nodes.stopAll()
    }
}
