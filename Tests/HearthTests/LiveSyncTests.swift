import Foundation
@testable import Hearth
import HearthCore
import Testing

/// The SDK against a live server on loopback: exact event sequences, rollbacks, several clients.
@Suite struct LiveSyncTests {
    @Test func localWritesRaiseEventsAtOnceAndTheServerEchoRaisesNoMore() async throws {
        try await LiveServer.run { url, _ in
            let client = try makeClient(url)
            let items = client.reference(withPath: "items")
            let recorder = Recorder()
            recorder.observe(items, .childAdded)
            recorder.observe(items, .value)
            // The empty location still gets its value once the listen is acknowledged.
            #expect(await recorder.wait(count: 1) == ["value items prev=- null"])
            recorder.clear()

            // Offline: the write shows at once, its completion waits for the server.
            client.goOffline()
            let acknowledged = Recorder()
            items.child("a").setValue(1) { error, _ in acknowledged.append("done \(error == nil)") }
            await drain(client)
            #expect(recorder.all == ["added a prev=- 1", #"value items prev=- {"a":1}"#])
            #expect(acknowledged.all.isEmpty)

            client.goOnline()
            #expect(await acknowledged.wait(count: 1) == ["done true"])
            // A second round trip: nothing else arrived for the first write's echo.
            try await items.child("b").setValue(2)
            await drain(client)
            #expect(recorder.all == [
                "added a prev=- 1", #"value items prev=- {"a":1}"#,
                "added b prev=a 2", #"value items prev=- {"a":1,"b":2}"#,
            ])
            client.goOffline()
        }
    }

    @Test func twoClientsSeeEachOthersChanges() async throws {
        try await LiveServer.run { url, _ in
            let alice = try makeClient(url)
            let bob = try makeClient(url)
            let recorder = Recorder()
            recorder.observe(bob.reference(withPath: "rooms/r1"), .childAdded)
            recorder.observe(bob.reference(withPath: "rooms/r1"), .childChanged)
            recorder.observe(bob.reference(withPath: "rooms/r1"), .childRemoved)
            let bobValues = Recorder()
            bobValues.observe(bob.reference(withPath: "rooms/r1"), .value)
            _ = await bobValues.wait(count: 1)

            let room = alice.reference(withPath: "rooms/r1")
            try await room.child("title").setValue("Lobby")
            try await room.updateChildValues(["title": "Hall", "size": 3])
            try await room.child("size").removeValue()
            let seen = await recorder.wait(count: 4)
            #expect(seen == [
                #"added title prev=- "Lobby""#,
                "added size prev=- 3",
                #"changed title prev=size "Hall""#,
                "removed size prev=- 3",
            ])
            alice.goOffline()
            bob.goOffline()
        }
    }

    @Test func aRejectedWriteRollsBackWithEventsAndFailsItsCompletion() async throws {
        let rules = #"{"rules": {".read": true, "open": {".write": true}}}"#
        try await LiveServer.run(rules: rules) { url, _ in
            let client = try makeClient(url)
            let locked = client.reference(withPath: "locked")
            let recorder = Recorder()
            recorder.observe(locked, .value)
            recorder.observe(locked, .childAdded)
            recorder.observe(locked, .childRemoved)
            _ = await recorder.wait(count: 1)
            await #expect(throws: DatabaseError.self) {
                do {
                    try await locked.child("x").setValue("nope")
                } catch let error as DatabaseError {
                    #expect(error.code == .permissionDenied)
                    throw error
                }
            }
            await drain(client)
            #expect(recorder.all == [
                "value locked prev=- null",
                #"added x prev=- "nope""#, #"value locked prev=- {"x":"nope"}"#,
                #"removed x prev=- "nope""#, "value locked prev=- null",
            ])
            client.goOffline()
        }
    }
}
