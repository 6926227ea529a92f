@testable import Hearth
import HearthCore
import Testing

/// Random operations on a sync tree: a list rebuilt only from the child events (and their previous
/// sibling keys) must always equal what the view shows, and `value` must match it too.
@Suite struct EventReplayTests {
    /// A small deterministic generator (SplitMix64).
    struct SeededRandom: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let queries: [(String, Query)] = {
        var byValueFirst3 = Query(index: .value)
        byValueFirst3.limit = .first(3)
        var byKeyLast2 = Query(index: .key)
        byKeyLast2.limit = .last(2)
        var byValueRange = Query(index: .value)
        byValueRange.start = .init(value: .leaf(.number(2)))
        byValueRange.end = .init(value: .leaf(.number(6)))
        return [("all by key", .all), ("all by value", Query(index: .value)), ("first 3 by value", byValueFirst3),
                ("last 2 by key", byKeyLast2), ("values 2…6", byValueRange)]
    }()

    @Test(arguments: 0..<queries.count)
    func childEventsReplayedInOrderRebuildTheView(_ which: Int) throws {
        let (_, query) = Self.queries[which]
        var random = SeededRandom(state: UInt64(which) * 7919 + 1)
        var tree = SyncTree()
        let path = try DatabasePath("/list")
        let spec = QuerySpec(path: path, query: query)
        var events: [RaisedEvent] = []
        for (id, type) in [(1, DataEventType.childAdded), (2, .childRemoved), (3, .childChanged), (4, .childMoved), (5, .value)] {
            events += tree.addRegistration(id: UInt(id), type: type, spec: spec)
        }
        // The whole location is listened to by default (filtered queries are evaluated locally here).
        let listen = ServerListen(path: path, query: nil)
        tree.listenStarted(listen)
        events += tree.listenCompleted(listen)
        var model: [(key: String, node: Node)] = []
        var lastValue: Node?
        var pendingWrites: [Int] = []
        var nextWrite = 1
        let keys = ["a", "b", "c", "d", "e", "f", "g"]

        func apply(_ events: [RaisedEvent]) throws {
            for event in events {
                let key = event.path.last?.string ?? ""
                switch event.type {
                case .childRemoved:
                    model.removeAll { $0.key == key }
                case .childAdded, .childMoved:
                    model.removeAll { $0.key == key }
                    let index = try event.previousKey.map { previous in
                        try #require(model.firstIndex { $0.key == previous }) + 1
                    } ?? 0
                    model.insert((key, event.node), at: index)
                case .childChanged:
                    let index = try #require(model.firstIndex { $0.key == key })
                    model[index].node = event.node
                case .value:
                    lastValue = event.node
                }
            }
        }

        try apply(events)
        for step in 0..<1_500 {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            let value: Node = random.next() % 5 == 0 ? .empty : .leaf(.number(Double(random.next() % 9)))
            var produced: [RaisedEvent]
            switch random.next() % 4 {
            case 0:
                produced = tree.applyServerOverwrite(path: path.child(Key(key)), node: value, tag: nil)
            case 1:
                let other = keys[Int(random.next() % UInt64(keys.count))]
                produced = tree.applyServerMerge(path: path, items: [(try DatabasePath(key), value), (try DatabasePath(other), .leaf(.number(Double(step % 7))))], tag: nil)
            case 2:
                produced = tree.applyUserOverwrite(writeID: nextWrite, path: path.child(Key(key)), node: value)
                pendingWrites.append(nextWrite)
                nextWrite += 1
            default:
                guard !pendingWrites.isEmpty else { continue }
                let id = pendingWrites.remove(at: Int(random.next() % UInt64(pendingWrites.count)))
                produced = tree.ackWrite(writeID: id, revert: random.next() % 2 == 0)
            }
            // Types come out in Firebase's order within one operation.
            let ranks = produced.map { [DataEventType.childRemoved: 0, .childAdded: 1, .childMoved: 2, .childChanged: 3, .value: 4][$0.type]! }
            #expect(ranks == ranks.sorted(), "step \(step)")
            try apply(produced)
            let shown = tree.views[spec]!.shown
            #expect(model.map(\.key) == shown.children.map(\.key.string), "step \(step)")
            #expect(model.map(\.node) == shown.children.map(\.node), "step \(step)")
            #expect(lastValue == shown.node, "step \(step)")
        }
    }
}
