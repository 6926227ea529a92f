import Foundation
@testable import Hearth
import Synchronization
import Testing

/// ``SyncedArray`` following a live query while another client writes: it ends in the server's order,
/// its deltas reproduce it, children that do not decode are left out, and ``SyncedArray/changes``
/// delivers the same deltas.
@Suite struct SyncedArrayLiveTests {
    struct Score: Codable, Sendable, Equatable {
        var n: Int
    }

    @Test func followsAQueryWrittenElsewhereAndItsDeltasReproduceIt() async throws {
        try await LiveServer.run { url, _ in
            let reader = try makeClient(url)
            let writer = try makeClient(url)
            let array = SyncedArray(query: reader.reference(withPath: "scores").queryOrdered(byChild: "n"), decoding: Score.self)
            let copy = Mutex<[Score]>([])
            let failures = Mutex<[String]>([])
            array.onChange = { change in copy.withLock { change.apply(to: &$0) } }
            array.onError = { error in
                if case .conversionFailed(let key, _, _) = error { failures.withLock { $0.append(key) } }
            }
            array.start()
            // A seeded sequence of writes: new children, new scores (moves), removals.
            var model: [String: Int] = [:]
            var seed = UInt64(42)
            func next(_ bound: Int) -> Int {
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                return Int((seed >> 33) % UInt64(bound))
            }
            for _ in 0..<300 {
                let key = "p\(next(40))"
                if model[key] != nil, next(4) == 0 {
                    model.removeValue(forKey: key)
                    _ = try await writer.reference(withPath: "scores/\(key)").setValue(nil)
                } else {
                    let n = next(25)
                    model[key] = n
                    _ = try await writer.reference(withPath: "scores/\(key)").setValue(["n": n])
                }
            }
            // One child that does not decode as a Score: left out, reported, the others unaffected.
            _ = try await writer.reference(withPath: "scores/zz").setValue(["n": "many"])
            let expected = model.sorted { $0.value != $1.value ? $0.value < $1.value : $0.key < $1.key }
            await waitUntil { array.keys == expected.map(\.key) && failures.withLock { $0 } == ["zz"] }
            #expect(array.keys == expected.map(\.key))
            #expect(array.elements == expected.map { Score(n: $0.value) })
            #expect(copy.withLock { $0 } == array.elements, "the deltas, applied in order, reproduce the array")
            #expect(failures.withLock { $0 } == ["zz"])
            array.stop()
        }
    }

    /// A delegate with FirebaseArray's four callbacks (no `didApply`), recording each with its indexes.
    final class FourCallbackDelegate: SyncedArrayDelegate, Sendable {
        let calls = Mutex<[String]>([])
        func syncedArray(_ array: SyncedArray<Score>, didAdd element: Score, at index: Int) {
            calls.withLock { $0.append("add \(element.n) at \(index)") }
        }
        func syncedArray(_ array: SyncedArray<Score>, didChange element: Score, at index: Int) {
            calls.withLock { $0.append("change \(element.n) at \(index)") }
        }
        func syncedArray(_ array: SyncedArray<Score>, didRemove element: Score, at index: Int) {
            calls.withLock { $0.append("remove \(element.n) at \(index)") }
        }
        func syncedArray(_ array: SyncedArray<Score>, didMove element: Score, from fromIndex: Int, to toIndex: Int) {
            calls.withLock { $0.append("move \(element.n) from \(fromIndex) to \(toIndex)") }
        }
    }

    @Test func aDelegateHearsAddedChangedRemovedAndMovedWithIndexes() async throws {
        try await LiveServer.run { url, _ in
            let reader = try makeClient(url)
            let writer = try makeClient(url)
            let array = SyncedArray(query: reader.reference(withPath: "scores").queryOrdered(byChild: "n"), decoding: Score.self)
            let delegate = FourCallbackDelegate()
            array.delegate = delegate
            array.start()
            let scores = writer.reference(withPath: "scores")
            func step(_ count: Int, _ write: () async throws -> Void) async throws {
                try await write()
                await waitUntil { delegate.calls.withLock { $0.count } == count }
            }
            try await step(1) { _ = try await scores.child("a").setValue(["n": 1]) }
            try await step(2) { _ = try await scores.child("b").setValue(["n": 2]) }
            try await step(3) { _ = try await scores.child("c").setValue(["n": 3]) }
            // A new score that keeps its place is a change; one that passes others is a move and a change.
            try await step(4) { _ = try await scores.child("b").updateChildValues(["n": 2, "seen": true]) }
            try await step(6) { _ = try await scores.child("a").setValue(["n": 5]) }
            try await step(7) { _ = try await scores.child("c").setValue(nil) }
            let calls = delegate.calls.withLock { $0 }
            #expect(Array(calls.prefix(4)) == ["add 1 at 0", "add 2 at 1", "add 3 at 2", "change 2 at 1"])
            #expect(Set(calls[4...5]) == ["move 5 from 0 to 2", "change 5 at 2"])
            #expect(calls.last == "remove 3 at 1")
            #expect(array.elements.map(\.n) == [2, 5])
            array.stop()
        }
    }

    @Test func changesArriveAsAnAsyncSequenceAndEndWhenTheArrayStops() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let list = client.reference(withPath: "list")
            let array = SyncedArray(query: list.queryOrderedByKey())
            let changes = array.changes
            array.start()
            _ = try await list.child("b").setValue(1)
            _ = try await list.child("a").setValue(2)
            _ = try await list.child("b").setValue(3)
            _ = try await list.child("a").setValue(nil)
            var seen: [String] = []
            for await change in changes {
                switch change {
                case .inserted(let snapshot, let index): seen.append("+\(snapshot.key)@\(index)")
                case .updated(let snapshot, let index): seen.append("~\(snapshot.key)@\(index)")
                case .removed(let snapshot, let index): seen.append("-\(snapshot.key)@\(index)")
                case .moved(let snapshot, let from, let to): seen.append(">\(snapshot.key)@\(from)->\(to)")
                }
                if seen.count == 4 { array.stop() }
            }
            #expect(seen == ["+b@0", "+a@0", "~b@1", "-a@0"])
            #expect(array.keys == ["b"])
        }
    }
}
