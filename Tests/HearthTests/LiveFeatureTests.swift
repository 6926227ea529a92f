import Foundation
@testable import Hearth
import HearthCore
import HearthEngine
import HearthServer
import Synchronization
import Testing

/// Queries, transactions, onDisconnect, `.info`, Codable and async sequences against a live server.
@Suite struct LiveFeatureTests {
    @Test func aLimitedWindowAdmitsAndEvictsChildrenAsAnotherClientWrites() async throws {
        try await LiveServer.run { url, _ in
            let writer = try makeClient(url)
            try await writer.reference(withPath: "scores").setValue(["a": 1, "b": 5, "c": 7])
            let reader = try makeClient(url)
            let top = reader.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2)
            let recorder = Recorder()
            recorder.observe(top, .childAdded)
            recorder.observe(top, .childRemoved)
            recorder.observe(top, .value)
            #expect(await recorder.wait(count: 3) == [
                "added b prev=- 5", "added c prev=b 7", #"value scores prev=- {"b":5,"c":7}"#,
            ])
            recorder.clear()
            // d enters at the top: b leaves.
            try await writer.reference(withPath: "scores/d").setValue(9)
            #expect(await recorder.wait(count: 3) == [
                "removed b prev=- 5", "added d prev=c 9", #"value scores prev=- {"c":7,"d":9}"#,
            ])
            recorder.clear()
            // d leaves: b comes back.
            try await writer.reference(withPath: "scores/d").removeValue()
            #expect(await recorder.wait(count: 3) == [
                "removed d prev=- 9", "added b prev=- 5", #"value scores prev=- {"b":5,"c":7}"#,
            ])
            writer.goOffline()
            reader.goOffline()
        }
    }

    @Test func transactionsFromTwoClientsUnderContentionEndExact() async throws {
        try await LiveServer.run { url, server in
            let clients = [try makeClient(url), try makeClient(url)]
            let perClient = 15
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    group.addTask {
                        let counter = client.reference(withPath: "counter")
                        for _ in 0..<perClient {
                            let (committed, _) = try await counter.runTransactionBlock { data in
                                data.value = ((data.value as? Int) ?? 0) + 1
                                return .success(withValue: data)
                            }
                            #expect(committed)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let stored = server.snapshot().child(at: try DatabasePath("/counter"))
            #expect(stored == .leaf(.number(Double(2 * perClient))))
            let read = try await clients[0].reference(withPath: "counter").getData()
            #expect(read.value as? Int == 2 * perClient)
            for client in clients { client.goOffline() }
        }
    }

    /// Many transactions in flight at once from each client (as when a UI adds several items quickly):
    /// each must commit a value computed from exactly what the server had, so the committed values
    /// are 1...n with none skipped or repeated. Found by the Profiles app (ids by transaction).
    @Test func concurrentTransactionsFromOneClientNeverSkipOrRepeat() async throws {
        try await LiveServer.run { url, server in
            let clients = [try makeClient(url), try makeClient(url)]
            let perClient = 8
            let committed = try await withThrowingTaskGroup(of: Int?.self) { group in
                for client in clients {
                    for _ in 0..<perClient {
                        group.addTask {
                            let (done, snapshot) = try await client.reference(withPath: "next").runTransactionBlock { data in
                                data.value = ((data.value as? Int) ?? 0) + 1
                                return .success(withValue: data)
                            }
                            return done ? snapshot.value as? Int : nil
                        }
                    }
                }
                var values: [Int] = []
                for try await value in group { if let value { values.append(value) } }
                return values
            }
            #expect(committed.sorted() == Array(1...(2 * perClient)))
            #expect(server.snapshot().child(at: try DatabasePath("/next")) == .leaf(.number(Double(2 * perClient))))
            for client in clients { client.goOffline() }
        }
    }

    @Test func anAbortedTransactionReportsTheCurrentDataWithoutWriting() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let ref = client.reference(withPath: "t")
            try await ref.setValue("keep")
            // As in Firebase, the block first sees the client's cached data: observe to have it.
            let recorder = Recorder()
            recorder.observe(ref, .value)
            _ = await recorder.wait(count: 1)
            let (committed, snapshot) = try await ref.runTransactionBlock { _ in .abort() }
            #expect(!committed)
            #expect(snapshot.value as? String == "keep")
            client.goOffline()
        }
    }

    @Test func onDisconnectWritesRunWhenTheConnectionDrops() async throws {
        try await LiveServer.run { url, _ in
            let alice = try makeClient(url)
            let bob = try makeClient(url)
            let presence = alice.reference(withPath: "presence/alice")
            try await presence.setValue("online")
            try await presence.onDisconnectSetValue("offline")
            try await alice.reference(withPath: "presence/temp").onDisconnectRemoveValue()
            try await alice.reference(withPath: "presence/cancelled").onDisconnectSetValue("x")
            try await alice.reference(withPath: "presence/cancelled").cancelDisconnectOperations()
            let recorder = Recorder()
            recorder.observe(bob.reference(withPath: "presence/alice"), .value)
            #expect(await recorder.wait(count: 1) == [#"value alice prev=- "online""#])
            alice.goOffline()
            #expect(await recorder.wait(count: 2) == [#"value alice prev=- "online""#, #"value alice prev=- "offline""#])
            let cancelled = try await bob.reference(withPath: "presence/cancelled").getData()
            #expect(!cancelled.exists())
            bob.goOffline()
        }
    }

    @Test func infoConnectedFollowsTheConnectionAndServerTimeOffsetIsKnown() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let recorder = Recorder()
            recorder.observe(client.reference(withPath: ".info/connected"), .value)
            #expect(await recorder.wait(count: 2) == ["value connected prev=- false", "value connected prev=- true"])
            client.goOffline()
            #expect(await recorder.wait(count: 3).last == "value connected prev=- false")
            client.goOnline()
            #expect(await recorder.wait(count: 4).last == "value connected prev=- true")
            let offset = try await client.reference(withPath: ".info/serverTimeOffset").getData()
            let milliseconds = try #require(offset.value as? Double)
            #expect(abs(milliseconds) < 5_000)
            client.goOffline()
        }
    }

    struct Message: Codable, Equatable {
        var text: String
        var likes: Int
        var sent: Date
        var tags: [String]
        var editedBy: String?
    }

    @Test func codableValuesRoundTrip() async throws {
        try await LiveServer.run { url, _ in
            let writer = try makeClient(url)
            let reader = try await makeConnectedClient(url)
            let message = Message(text: "hi", likes: 3, sent: Date(timeIntervalSince1970: 1_700_000_000), tags: ["a", "b"], editedBy: nil)
            let encoder = Hearth.Database.Encoder()
            encoder.dateEncodingStrategy = .millisecondsSince1970
            try await writer.reference(withPath: "messages/m1").setValue(encoder.encode(message))
            let snapshot = try await reader.reference(withPath: "messages/m1").getData()
            #expect(snapshot.childSnapshot(forPath: "sent").value as? Int == 1_700_000_000_000)
            let decoder = Hearth.Database.Decoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            #expect(try snapshot.data(as: Message.self, decoder: decoder) == message)
            #expect(try snapshot.data(as: Message?.self, decoder: decoder) == message)
            let missing = try await reader.reference(withPath: "messages/none").getData()
            #expect(throws: DecodingError.self) { try missing.data(as: Message.self) }
            #expect(try missing.data(as: Message?.self) == nil)
            writer.goOffline()
            reader.goOffline()
        }
    }

    @Test func asyncSequencesDeliverValuesAndChildEventsAndStopOnCancellation() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let list = client.reference(withPath: "list")
            let added = Task {
                var keys: [String] = []
                for try await snapshot in list.events(.childAdded) {
                    keys.append(snapshot.key)
                    if keys.count == 3 { break }
                }
                return keys
            }
            let lastValue = Task {
                for try await snapshot in list.values where snapshot.childrenCount == 3 {
                    return snapshot.children.allObjects.compactMap { $0.value as? String }
                }
                return []
            }
            for name in ["x", "y", "z"] { try await list.child(name).setValue(name.uppercased()) }
            #expect(try await added.value == ["x", "y", "z"])
            #expect(try await lastValue.value == ["X", "Y", "Z"])
            // Both loops ended: their observers (and the listen) are gone.
            await waitUntil { client.repo.state.withLock { $0.observers.isEmpty && $0.listenTokens.isEmpty } }
            client.goOffline()
        }
    }

    @Test func serverValuesPrioritiesAndMultiPathUpdates() async throws {
        try await LiveServer.run { url, server in
            let client = try makeClient(url)
            let root = client.reference()
            try await root.updateChildValues([
                "posts/p1/likes": ServerValue.increment(2),
                "posts/p1/at": ServerValue.timestamp(),
                "users/u1/last": "p1",
            ])
            try await root.child("posts/p1/likes").setValue(ServerValue.increment(3))
            let post = try await client.reference(withPath: "posts/p1").getData()
            #expect(post.childSnapshot(forPath: "likes").value as? Int == 5)
            let at = try #require(post.childSnapshot(forPath: "at").value as? Double)
            #expect(abs(at - Date().timeIntervalSince1970 * 1_000) < 60_000)
            try await client.reference(withPath: "ranked/a").setValue("A", andPriority: 2)
            try await client.reference(withPath: "ranked/b").setValue("B", andPriority: 1)
            let ranked = try await client.reference(withPath: "ranked").queryOrderedByPriority().getData()
            #expect(ranked.children.allObjects.map(\.key) == ["b", "a"])
            #expect(ranked.childSnapshot(forPath: "a").priority as? Int == 2)
            #expect(server.snapshot().child(at: try DatabasePath("/users/u1/last")) == .leaf(.string("p1")))
            client.goOffline()
        }
    }

    /// `updateChildValues` with keys ending in `.priority`, as Firebase's SDKs allow: the writer's own view
    /// and another client's both get the priorities; a priority that is not a string or number is refused.
    @Test func anUpdateSetsPrioritiesThatOtherClientsSee() async throws {
        try await LiveServer.run { url, server in
            let writer = try makeClient(url)
            let reader = try makeClient(url)
            let ranked = reader.reference(withPath: "ranked").queryOrderedByPriority()
            let recorder = Recorder()
            recorder.observe(ranked, .value)
            #expect(await recorder.wait(count: 1) == ["value ranked prev=- null"])
            recorder.clear()
            try await writer.reference(withPath: "ranked").updateChildValues(["a/.priority": 2, "a/name": "A", "b/name": "B", "b/.priority": 1])
            #expect(await recorder.wait(count: 1) == [#"value ranked prev=- {"a":{"name":"A"},"b":{"name":"B"}}"#])
            let seen = try await reader.reference(withPath: "ranked").queryOrderedByPriority().getData()
            #expect(seen.children.allObjects.map(\.key) == ["b", "a"])
            #expect(seen.childSnapshot(forPath: "a").priority as? Int == 2)
            let own = try await writer.reference(withPath: "ranked/a").getData()
            #expect(own.priority as? Int == 2)
            #expect(server.snapshot().child(at: try DatabasePath("/ranked/b")).priority == .number(1))
            // Another update moves a to the front, over the wire to the reader.
            recorder.clear()
            try await writer.reference(withPath: "ranked").updateChildValues(["a/.priority": 0])
            #expect(await recorder.wait(count: 1).count == 1)
            let moved = try await reader.reference(withPath: "ranked").queryOrderedByPriority().getData()
            #expect(moved.children.allObjects.map(\.key) == ["a", "b"])
            await #expect(throws: DatabaseError.self) {
                try await writer.reference(withPath: "ranked").updateChildValues(["a/.priority": true])
            }
            writer.goOffline()
            reader.goOffline()
        }
    }

    /// The writer's own default views take an update's priority as a change of the node (a value event
    /// with the priority, `childChanged` above), never as a child named `.priority`; so do another
    /// client's, from the server's merge.
    @Test func aPriorityFromAnUpdateChangesTheNodeInEveryView() async throws {
        try await LiveServer.run { url, _ in
            let writer = try makeClient(url)
            let reader = try makeClient(url)
            try await writer.reference(withPath: "ranked").setValue(["a": ["name": "A"], "b": "B"])
            let recorders = [Recorder(), Recorder()]
            for (client, events) in zip([writer, reader], recorders) {
                let ranked = client.reference(withPath: "ranked")
                ranked.child("a").observe(.value) { s in events.append("a value \(s.priority as? Int ?? -1) \(s.childrenCount)") }
                for type in [DataEventType.childAdded, .childChanged, .childRemoved] {
                    ranked.observe(type) { s in events.append("\(Recorder.name(type)) \(s.key) \(s.priority as? Int ?? -1)") }
                }
                #expect(Set(await events.wait(count: 3)) == ["a value -1 1", "added a -1", "added b -1"])
                events.clear()
            }
            try await writer.reference(withPath: "ranked").updateChildValues(["a/.priority": 5])
            for events in recorders {
                #expect(await events.wait(count: 2) == ["a value 5 1", "changed a 5"])
            }
            // The acknowledgement and the server's echo change nothing more.
            try await writer.reference(withPath: "ranked/b").setValue("B2")
            for events in recorders {
                #expect(await events.wait(count: 3) == ["a value 5 1", "changed a 5", "changed b -1"])
            }
            writer.goOffline()
            reader.goOffline()
        }
    }

    @Test func observeSingleEventFiresOnceAndReferencesDescribeTheirLocation() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let ref = client.reference(withPath: "once")
            try await ref.setValue(1)
            let (snapshot, _) = await ref.observeSingleEventAndPreviousSiblingKey(of: .value)
            #expect(snapshot.value as? Int == 1)
            #expect(ref.key == "once")
            #expect(ref.parent?.key == nil)
            #expect(ref.child("a/b").parent?.key == "a")
            #expect(ref.child("a").url.hasSuffix("/once/a?ns=demo"))
            let pushed = ref.childByAutoId()
            #expect(pushed.key?.count == 20)
            #expect(client.reference(fromURL: url.replacingOccurrences(of: "?ns=demo", with: "/x/y?ns=demo")).key == "y")
            client.goOffline()
        }
    }
}
