import Foundation
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// Every query builder against the server: the window the server sends for the tagged listen must be
/// the one the client expects.
@Suite struct LiveQueryTests {
    static var dinosaurs: [String: Any] { [
        "bruhathkayosaurus": ["height": 25, "order": "saurischia"],
        "lambeosaurus": ["height": 2.1, "order": "ornithischia"],
        "linhenykus": ["height": 0.6, "order": "theropoda"],
        "pterodactyl": ["height": 0.6, "order": "pterosauria"],
        "stegosaurus": ["height": 4, "order": "ornithischia"],
        "triceratops": ["height": 3, "order": "ornithischia"],
    ] }

    static func keys(_ query: DatabaseQuery) async -> [String] {
        let (snapshot, _) = await query.observeSingleEventAndPreviousSiblingKey(of: .value)
        return snapshot.children.map(\.key)
    }

    @Test func queryBuildersSelectTheSameChildrenAsTheServer() async throws {
        try await LiveServer.run { url, _ in
            let writer = try makeClient(url)
            try await writer.reference(withPath: "dinosaurs").setValue(Self.dinosaurs)
            let client = try makeClient(url)
            let dinosaurs = client.reference(withPath: "dinosaurs")
            let byHeight = dinosaurs.queryOrdered(byChild: "height")
            #expect(await Self.keys(byHeight.queryLimited(toFirst: 2)) == ["linhenykus", "pterodactyl"])
            #expect(await Self.keys(byHeight.queryLimited(toLast: 2)) == ["stegosaurus", "bruhathkayosaurus"])
            #expect(await Self.keys(byHeight.queryStarting(atValue: 3)) == ["triceratops", "stegosaurus", "bruhathkayosaurus"])
            #expect(await Self.keys(byHeight.queryStarting(afterValue: 3)) == ["stegosaurus", "bruhathkayosaurus"])
            #expect(await Self.keys(byHeight.queryEnding(atValue: 2.1)) == ["linhenykus", "pterodactyl", "lambeosaurus"])
            #expect(await Self.keys(byHeight.queryEnding(beforeValue: 2.1)) == ["linhenykus", "pterodactyl"])
            #expect(await Self.keys(byHeight.queryEqual(toValue: 0.6)) == ["linhenykus", "pterodactyl"])
            #expect(await Self.keys(byHeight.queryEqual(toValue: 0.6, childKey: "pterodactyl")) == ["pterodactyl"])
            #expect(await Self.keys(byHeight.queryStarting(atValue: 0.6, childKey: "pterodactyl").queryLimited(toFirst: 2)) == ["pterodactyl", "lambeosaurus"])
            #expect(await Self.keys(dinosaurs.queryOrderedByKey().queryStarting(atValue: "p").queryEnding(atValue: "t")) == ["pterodactyl", "stegosaurus"])
            #expect(await Self.keys(dinosaurs.queryOrdered(byChild: "order").queryEqual(toValue: "ornithischia").queryLimited(toLast: 2)) == ["stegosaurus", "triceratops"])
            // Every listen above was stopped once its single event arrived.
            await waitUntil { client.repo.state.withLock { $0.listenTokens.isEmpty } }
            writer.goOffline()
            client.goOffline()
        }
    }

    @Test func removeAllObserversStopsTheListenAndKeepSyncedHoldsOne() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let ref = client.reference(withPath: "kept")
            let recorder = Recorder()
            recorder.observe(ref, .value)
            recorder.observe(ref, .childAdded)
            _ = await recorder.wait(count: 1)
            ref.removeAllObservers()
            #expect(client.repo.state.withLock { $0.observers.isEmpty && $0.listenTokens.isEmpty })
            ref.keepSynced(true)
            #expect(client.repo.state.withLock { $0.listenTokens.count } == 1)
            let writer = try makeClient(url)
            try await writer.reference(withPath: "kept/a").setValue(1)
            // The kept listen has the data: a read is answered from the cache once it arrives.
            await waitUntil { client.repo.state.withLock { $0.tree.completeValue(at: try! DatabasePath("/kept")) != .empty } }
            #expect(try await ref.getData().value as? [String: Int] == ["a": 1])
            ref.keepSynced(false)
            #expect(client.repo.state.withLock { $0.listenTokens.isEmpty })
            client.goOffline()
            writer.goOffline()
        }
    }
}
