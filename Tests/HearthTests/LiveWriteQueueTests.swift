import Foundation
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// Writes made offline, purges, and transactions that hide or lose their local effects.
@Suite struct LiveWriteQueueTests {
    @Test func offlineWritesReachTheServerInOrderAfterReconnecting() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let reader = try makeClient(url)
            let log = reader.reference(withPath: "log")
            let recorder = Recorder()
            recorder.observe(log, .value)
            _ = await recorder.wait(count: 1)
            client.goOffline()
            let ref = client.reference(withPath: "log")
            // In an async context the async overloads win (as with Firebase): call the plain ones from
            // a synchronous closure.
            withoutWaiting {
                ref.setValue(["n": 1])
                ref.updateChildValues(["n": 2, "m": 1])
                ref.child("n").setValue(3)
            }
            client.goOnline()
            // The reader sees the three writes applied one after the other, in the order they were made.
            #expect(await recorder.wait(count: 4) == [
                "value log prev=- null", #"value log prev=- {"n":1}"#, #"value log prev=- {"m":1,"n":2}"#, #"value log prev=- {"m":1,"n":3}"#,
            ])
            client.goOffline()
            reader.goOffline()
        }
    }

    @Test func purgingOutstandingWritesRollsThemBackAndFailsTheirCompletions() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let ref = client.reference(withPath: "purged")
            let recorder = Recorder()
            recorder.observe(ref, .value)
            _ = await recorder.wait(count: 1)
            client.goOffline()
            let outcome = Recorder()
            ref.setValue("pending") { error, _ in outcome.append("\((error as? DatabaseError)?.code.status ?? "ok")") }
            client.purgeOutstandingWrites()
            #expect(await outcome.wait(count: 1) == ["write_canceled"])
            #expect(recorder.all == ["value purged prev=- null", #"value purged prev=- "pending""#, "value purged prev=- null"])
            client.goOnline()
            let reader = try await makeConnectedClient(url)
            #expect(!(try await reader.reference(withPath: "purged").getData().exists()))
            client.goOffline()
            reader.goOffline()
        }
    }

    @Test func aTransactionWithoutLocalEventsShowsOnlyTheCommittedValue() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let ref = client.reference(withPath: "hidden")
            try await ref.setValue(10)
            let recorder = Recorder()
            recorder.observe(ref, .value)
            #expect(await recorder.wait(count: 1) == ["value hidden prev=- 10"])
            let done = Recorder()
            ref.runTransactionBlock({ data in
                data.value = ((data.value as? Int) ?? 0) * 2
                return .success(withValue: data)
            }, andCompletionBlock: { error, committed, snapshot in
                done.append("\(error == nil) \(committed) \(snapshot?.value as? Int ?? -1)")
            }, withLocalEvents: false)
            #expect(await done.wait(count: 1) == ["true true 20"])
            await drain(client)
            #expect(recorder.all == ["value hidden prev=- 10", "value hidden prev=- 20"])
            client.goOffline()
        }
    }

    @Test func aSetOverARunningTransactionAbortsIt() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            client.goOffline()
            let ref = client.reference(withPath: "contested")
            let done = Recorder()
            ref.runTransactionBlock({ data in
                data.value = "from transaction"
                return .success(withValue: data)
            }, andCompletionBlock: { error, committed, _ in
                done.append("\((error as? DatabaseError)?.code.status ?? "none") \(committed)")
            })
            // The transaction's first run happens off the calling thread: wait until it has written.
            await waitUntil { client.repo.state.withLock { $0.transactions.values.contains { $0.writeID != nil } } }
            withoutWaiting { ref.setValue("from set") }
            #expect(await done.wait(count: 1) == ["overriddenbyset false"])
            client.goOnline()
            try await ref.setValue("settled")
            let reader = try await makeConnectedClient(url)
            #expect(try await reader.reference(withPath: "contested").getData().value as? String == "settled")
            client.goOffline()
            reader.goOffline()
        }
    }
}

/// Runs fire-and-forget writes (the synchronous overloads) from an async test.
func withoutWaiting(_ body: () -> Void) { body() }
