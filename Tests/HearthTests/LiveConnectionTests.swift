import Foundation
@testable import Hearth
import HearthCore
import HearthServer
import Testing

/// Reconnects, listen de-duplication and authentication against a live server.
@Suite struct LiveConnectionTests {
    static func makeRecordedClient(_ url: String, _ transport: RecordingTransport) throws -> Hearth.Database {
        let database = try Hearth.Database(url: url, transport: transport, clock: FastClock())
        database.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
        return database
    }

    @Test func twoObserversOfOneQueryShareOneListenAndAParentListenReplacesChildListens() async throws {
        try await LiveServer.run { url, _ in
            let transport = RecordingTransport()
            let client = try Self.makeRecordedClient(url, transport)
            let recorder = Recorder()
            let first = recorder.observe(client.reference(withPath: "a/b"), .value)
            let second = recorder.observe(client.reference(withPath: "a/b"), .value)
            _ = await recorder.wait(count: 2)
            #expect(transport.requests.filter { $0.action == "q" }.map(\.body) == [#"{"p":"/a/b","h":""}"#])
            transport.clear()
            let parent = recorder.observe(client.reference(withPath: "a"), .value)
            _ = await recorder.wait(count: 3)
            await waitUntil { transport.requests.contains { $0.action == "n" } }
            #expect(transport.requests.map(\.action) == ["q", "n"])
            #expect(transport.requests.map(\.body) == [#"{"p":"/a","h":""}"#, #"{"p":"/a/b"}"#])
            transport.clear()
            client.reference().removeObserver(withHandle: parent)
            await waitUntil { transport.requests.count == 2 }
            #expect(transport.requests.map(\.action) == ["q", "n"])
            #expect(transport.requests.first?.body == #"{"p":"/a/b","h":""}"#)
            client.reference().removeObserver(withHandle: first)
            client.reference().removeObserver(withHandle: second)
            client.goOffline()
        }
    }

    @Test func aDroppedConnectionReconnectsRelistensWithHashesAndLosesOrDuplicatesNothing() async throws {
        try await LiveServer.run { url, _ in
            let transport = RecordingTransport()
            let alice = try Self.makeRecordedClient(url, transport)
            let bob = try makeClient(url)
            let chat = bob.reference(withPath: "chat")
            try await chat.child("1").setValue("one")
            let recorder = Recorder()
            recorder.observe(alice.reference(withPath: "chat"), .childAdded)
            #expect(await recorder.wait(count: 1) == [#"added 1 prev=- "one""#])
            let connected = Recorder()
            connected.observe(alice.reference(withPath: ".info/connected"), .value)
            await waitUntil { connected.all.last == "value connected prev=- true" }
            connected.clear()

            transport.dropConnections()
            await waitUntil { connected.all.contains("value connected prev=- false") }
            // While Alice is away Bob writes, and Alice writes too (queued, shown at once).
            try await chat.child("2").setValue("two")
            let aliceWrite = Recorder()
            alice.reference(withPath: "chat/3").setValue("three") { error, _ in aliceWrite.append("done \(error == nil)") }
            #expect(await aliceWrite.wait(count: 1) == ["done true"])
            // Either Alice was still away when she wrote (her write shows first, Bob's arrives on the
            // re-listen) or she was back already; in both cases each child comes exactly once.
            let events = await recorder.wait(count: 3)
            let whileAway = [#"added 1 prev=- "one""#, #"added 3 prev=1 "three""#, #"added 2 prev=1 "two""#]
            let afterReturn = [#"added 1 prev=- "one""#, #"added 2 prev=1 "two""#, #"added 3 prev=2 "three""#]
            #expect(events == whileAway || events == afterReturn, "\(events)")
            await drain(alice)
            #expect(recorder.all.count == 3)
            #expect(transport.connectCount == 2)
            // The re-sent listen carried the hash of what Alice had.
            let listens = transport.requests.filter { $0.action == "q" }.map(\.body)
            #expect(listens.count == 2)
            #expect(listens.last?.contains(#""h":"""#) == false)
            let seenByBob = try await chat.getData()
            #expect(seenByBob.childrenCount == 3)
            alice.goOffline()
            bob.goOffline()
        }
    }

    @Test func theTokenProviderCredentialIsSentOnConnect() async throws {
        let rules = #"{"rules": {".read": true, ".write": "auth != null"}}"#
        try await LiveServer.run(rules: rules) { url, _ in
            let anonymous = try makeClient(url)
            await #expect(throws: DatabaseError.self) { try await anonymous.reference(withPath: "x").setValue(1) }
            let transport = RecordingTransport()
            let admin = try Self.makeRecordedClient(url, transport)
            admin.authTokenProvider = { "owner" }
            try await admin.reference(withPath: "x").setValue(1)
            #expect(transport.requests.map(\.action).prefix(3) == ["s", "gauth", "p"])
            anonymous.goOffline()
            admin.goOffline()
        }
    }
}
