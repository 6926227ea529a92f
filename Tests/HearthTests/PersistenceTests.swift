import Foundation
@testable import Hearth
import HearthCore
import HearthEngine
import HearthServer
import Synchronization
import Testing

/// Persistence: the store's recovery and cache, a write made offline by one client reaching the server
/// through the next client that opens the same folder, and a launch without a connection showing the
/// last data.
@Suite struct PersistenceTests {
    static func temporaryFolder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-persistence-\(UUID().uuidString)", isDirectory: true)
    }

    static func body(_ path: String, _ data: String) -> JSONValue {
        .object([("p", .string(path)), ("d", try! JSONValue(parsing: data))])
    }

    @Test func reopeningKeepsOnlyUnconfirmedWritesRenumbered() throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let store = try PersistentStore(directory: folder)
            #expect(store.recoveredWrites.isEmpty)
            store.append(.init(id: 1, action: "p", body: Self.body("/a", "1")))
            store.append(.init(id: 2, action: "m", body: Self.body("/b", #"{"x":1,"y/z":2}"#)))
            store.append(.init(id: 3, action: "p", body: Self.body("/c", #""three""#)))
            store.confirm(id: 2)
        }
        let reopened = try PersistentStore(directory: folder)
        #expect(reopened.recoveredWrites == [
            .init(id: 1, action: "p", body: Self.body("/a", "1")),
            .init(id: 2, action: "p", body: Self.body("/c", #""three""#)),
        ])
        #expect(reopened.pendingWrites() == reopened.recoveredWrites)
        reopened.confirm(id: 1)
        reopened.confirm(id: 2)
        #expect(try PersistentStore(directory: folder).recoveredWrites.isEmpty)
    }

    @Test func cachedLocationsReplaceThoseBelowAndTheOldestUnheldAreEvictedBeyondTheLimit() throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try PersistentStore(directory: folder)
        let big = Node.leaf(.string(String(repeating: "x", count: 400)))
        store.saveCache([(SyncTreeTests.path("/a/b"), big), (SyncTreeTests.path("/a_b"), big)], savedAt: 1, limit: 10_000, active: [])
        store.saveCache([(SyncTreeTests.path("/a"), SyncTreeTests.json(#"{"b":1,"c":{".value":2,".priority":1}}"#))], savedAt: 2, limit: 10_000, active: [])
        #expect(Set(store.cachedLocations().keys) == ["/a", "/a_b"])
        store.saveCache([(SyncTreeTests.path("/d"), big), (SyncTreeTests.path("/e"), big)], savedAt: 3, limit: 10_000, active: [])
        // Over a 500-byte limit: /a_b (oldest) goes; /a is held by a listener and stays; then /d.
        store.saveCache([], savedAt: 4, limit: 500, active: [SyncTreeTests.path("/a")])
        #expect(Set(store.cachedLocations().keys) == ["/a", "/e"])
        let reopened = try PersistentStore(directory: folder)
        let restored = Dictionary(uniqueKeysWithValues: reopened.recoveredCache.map { ($0.path.description, $0.node) })
        #expect(restored["/a"]?.jsonString(format: .export) == #"{"b":1,"c":{".value":2,".priority":1}}"#)
        #expect(restored["/e"] == big)
    }

    @Test func aLaunchWithoutAConnectionShowsTheLastDataThenTheServersNewer() async throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await LiveServer.run { url, _ in
            let writer = try makeClient(url)
            try await writer.reference(withPath: "notes").setValue(["n1": "first", "n2": "second"])

            let first = try makeClient(url)
            first.persistenceDirectory = folder
            first.isPersistenceEnabled = true
            let seen = Recorder()
            seen.observe(first.reference(withPath: "notes"), .value)
            #expect(await seen.wait(count: 1) == [#"value notes prev=- {"n1":"first","n2":"second"}"#])
            first.goOffline()

            // While the app is closed the data changes on the server.
            try await writer.reference(withPath: "notes/n3").setValue("third")

            let second = try makeClient(url)
            second.persistenceDirectory = folder
            second.isPersistenceEnabled = true
            second.goOffline()
            let recorder = Recorder()
            recorder.observe(second.reference(withPath: "notes"), .value)
            recorder.observe(second.reference(withPath: "notes").queryOrderedByKey().queryLimited(toLast: 1), .childAdded)
            #expect(await recorder.wait(count: 2) == [#"value notes prev=- {"n1":"first","n2":"second"}"#, #"added n2 prev=- "second""#])
            second.goOnline()
            #expect(await recorder.wait(count: 4) == [
                #"value notes prev=- {"n1":"first","n2":"second"}"#, #"added n2 prev=- "second""#,
                #"value notes prev=- {"n1":"first","n2":"second","n3":"third"}"#, #"added n3 prev=- "third""#,
            ])
            writer.goOffline()
            second.goOffline()
        }
    }

    @Test func aWriteMadeOfflineIsSentByTheNextClientOpeningTheSameFolder() async throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await LiveServer.run { url, server in
            // The first client never connects: everything it writes stays queued.
            let first = try makeClient(url)
            first.persistenceDirectory = folder
            first.isPersistenceEnabled = true
            first.goOffline()
            let offline = first.reference(withPath: "drafts")
            withoutWaiting {
                offline.child("a").setValue(["text": "written offline"])
                offline.updateChildValues(["b": 2, "c/d": true])
                offline.child("a").setPriority(5)
            }
            await drain(first)
            #expect(server.snapshot().child(at: try DatabasePath("/drafts")).isEmpty)

            // The next launch: the writes show locally at once and reach the server in order.
            let second = try makeClient(url)
            second.persistenceDirectory = folder
            second.isPersistenceEnabled = true
            let recorder = Recorder()
            second.goOffline()
            recorder.observe(second.reference(withPath: "drafts/a"), .value)
            #expect(await recorder.wait(count: 1) == [#"value a prev=- {"text":"written offline"}"#])
            #expect(second.repo.state.withLock { $0.tree.localValue(at: try! DatabasePath("/drafts/a")).priority } == .number(5))
            second.goOnline()
            let drafts = try DatabasePath("/drafts")
            await waitUntil { server.snapshot().child(at: drafts).jsonString(format: .export) == #"{"a":{"text":"written offline",".priority":5},"b":2,"c":{"d":true}}"# }
            // Once confirmed, nothing is left to send at the next launch.
            await waitUntil { second.repo.state.withLock { $0.store?.pendingWrites().isEmpty } == true }
            first.goOffline()
            second.goOffline()
        }
    }

    @Test func aFilteredQuerysLastWindowIsServedOfflineToThatQueryOnly() async throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await LiveServer.run { url, _ in
            let writer = try makeClient(url)
            try await writer.reference(withPath: "scores").setValue(["a": 10, "b": 30, "c": 20, "d": 5])

            let first = try makeClient(url)
            first.persistenceDirectory = folder
            first.isPersistenceEnabled = true
            let top = first.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2)
            let seen = Recorder()
            seen.observe(top, .value)
            #expect(await seen.wait(count: 1) == [#"value scores prev=- {"b":30,"c":20}"#])
            first.goOffline()
            let store = try #require(first.repo.state.withLock { $0.store })
            #expect(store.cachedWindows() == [#"/scores {"i":".value","l":2,"vf":"r"}"#])
            #expect(store.cachedLocations().isEmpty)

            // While the app is closed a new top score arrives.
            try await writer.reference(withPath: "scores/e").setValue(40)

            let second = try makeClient(url)
            second.persistenceDirectory = folder
            second.isPersistenceEnabled = true
            second.goOffline()
            let recorder = Recorder()
            recorder.observe(second.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2), .value)
            recorder.observe(second.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2), .childAdded)
            // Other queries, and the whole location, are not served from that window as complete.
            recorder.observe(second.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 3), .value, label: "top3 ")
            recorder.observe(second.reference(withPath: "scores").queryOrderedByValue().queryLimited(toFirst: 2), .value, label: "bottom2 ")
            recorder.observe(second.reference(withPath: "scores"), .value, label: "all ")
            await drain(second)
            #expect(recorder.all == [#"value scores prev=- {"b":30,"c":20}"#, #"added c prev=- 20"#, #"added b prev=c 30"#])
            #expect(try await second.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2).getData().value as? [String: Int] == ["b": 30, "c": 20])

            second.goOnline()
            await waitUntil { recorder.all.contains(#"value scores prev=- {"b":30,"e":40}"#) }
            await waitUntil { recorder.all.contains { $0.hasPrefix("all value") } }
            #expect(recorder.all.contains(#"all value scores prev=- {"a":10,"b":30,"c":20,"d":5,"e":40}"#))
            writer.goOffline()
            second.goOffline()
        }
    }
}
