import Foundation
@testable import Hearth
import HearthCore
import HearthServer
import Synchronization
import Testing

/// SyncedArray against a live server: random writes by another client; after every batch the array
/// must equal the server's ordered children, and the batch's deltas applied to the previous keys must
/// give the new keys.
@Suite struct SyncedArrayTests {
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

    final class BatchLog: Sendable {
        let batches = Mutex<[(changes: [SyncedArray.Change], keys: [String])]>([])
    }

    @Test(arguments: [0, 1, 2])
    func deltasAlwaysReproduceTheArrayUnderRandomWrites(_ variant: Int) async throws {
        try await LiveServer.run { url, server in
            let writer = try makeClient(url)
            let reader = try makeClient(url)
            let base = reader.reference(withPath: "items")
            let query: DatabaseQuery = switch variant {
            case 0: base.queryOrderedByValue()
            case 1: base.queryOrderedByValue().queryLimited(toLast: 4)
            default: base.queryOrderedByKey().queryStarting(atValue: "c")
            }
            let array = SyncedArray(query: query)
            let log = BatchLog()
            array.onChange = { changes in
                let keys = array.keys
                log.batches.withLock { $0.append((changes, keys)) }
            }
            array.start()
            await waitUntil { array.isLoaded }
            var random = SeededRandom(state: UInt64(variant) + 11)
            let keys = ["a", "b", "c", "d", "e", "f", "g", "h"]
            for _ in 0..<60 {
                let key = keys[Int(random.next() % UInt64(keys.count))]
                switch random.next() % 3 {
                case 0: try await writer.reference(withPath: "items/\(key)").removeValue()
                case 1:
                    let other = keys[Int(random.next() % UInt64(keys.count))]
                    var update: [AnyHashable: Any] = [key: Int(random.next() % 10)]
                    update[other] = Int(random.next() % 10)
                    try await writer.reference(withPath: "items").updateChildValues(update)
                default: try await writer.reference(withPath: "items/\(key)").setValue(Int(random.next() % 10))
                }
            }
            // The reader has caught up once its array shows what the server holds.
            let path = try DatabasePath("/items")
            let expected = { @Sendable () -> [String] in
                let query = array.query
                return query.query.window(over: server.snapshot().child(at: path)).map(\.key.string)
            }
            await waitUntil { array.keys == expected() }
            var replayed: [String] = []
            let batches = log.batches.withLock { $0 }
            #expect(batches.count > 10)
            for batch in batches {
                for change in batch.changes { change.apply(to: &replayed) }
                #expect(replayed == batch.keys)
            }
            #expect(replayed == array.keys)
            array.stop()
            writer.goOffline()
            reader.goOffline()
        }
    }
}
