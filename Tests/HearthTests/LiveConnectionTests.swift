import Foundation
@testable import Hearth
import HearthCore
import HearthServer
import Synchronization
import Testing

/// Reconnects, listen de-duplication and authentication against a live server.
@Suite struct LiveConnectionTests {
    static func makeRecordedClient(_ url: String, _ transport: RecordingTransport) throws -> Hearth.Database {
        let database = try Hearth.Database(url: url, transport: transport, clock: FastClock()).withRealisticConnectTimeout()
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

/// A clock that runs a thousand times fast and reads an hour behind the server.
struct SkewedClock: HearthClock {
    static let skew: Double = 3_600_000
    func milliseconds() -> Double { Date().timeIntervalSince1970 * 1_000 - SkewedClock.skew }
    func sleep(milliseconds: Double) async throws { try await FastClock().sleep(milliseconds: milliseconds) }
}

@Suite struct LiveClockTests {
    @Test func anIdleConnectionSendsKeepAlives() async throws {
        try await LiveServer.run { url, _ in
            let transport = RecordingTransport()
            // 45 s of idleness pass in 45 ms on this clock.
            let client = try Hearth.Database(url: url, transport: transport, clock: FastClock()).withRealisticConnectTimeout()
            client.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
            client.goOnline()
            client.reference(withPath: "idle").observe(.value) { _ in }
            await waitUntil { transport.sent.contains("0") }
            client.goOffline()
        }
    }

    @Test func theServerTimeOffsetCorrectsLocalTimestampsAndPushIDs() async throws {
        try await LiveServer.run { url, server in
            let client = try Hearth.Database(url: url, transport: NIOWebSocketTransport(), clock: SkewedClock()).withRealisticConnectTimeout()
            client.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
            let offset = Recorder()
            client.reference(withPath: ".info/serverTimeOffset").observe(.value) { snapshot in
                offset.append("\((snapshot.value as? NSNumber)?.doubleValue ?? 0)")
            }
            await waitUntil { offset.all.contains { abs((Double($0) ?? 0) - SkewedClock.skew) < 60_000 } }
            // A timestamp written now is shown locally at about the server's time, not the local clock's.
            let stamp = client.reference(withPath: "stamp")
            let local = Recorder()
            stamp.observe(.value) { snapshot in if let n = snapshot.value as? NSNumber { local.append("\(n.doubleValue)") } }
            withoutWaiting { stamp.setValue(ServerValue.timestamp()) }
            let first = try #require(Double(await local.wait(count: 1)[0]))
            #expect(abs(first - Date().timeIntervalSince1970 * 1_000) < 60_000)
            // Push ids use server time too: their first 8 characters encode it.
            let key = try #require(client.reference().childByAutoId().key)
            let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
            let encoded = key.prefix(8).reduce(0.0) { $0 * 64 + Double(alphabet.firstIndex(of: $1)!) }
            #expect(abs(encoded - Date().timeIntervalSince1970 * 1_000) < 60_000)
            client.goOffline()
        }
    }
}

@Suite struct LiveListenFailureTests {
    @Test func aRefusedListenCancelsItsObserversWithPermissionDenied() async throws {
        let rules = #"{"rules": {"public": {".read": true}}}"#
        try await LiveServer.run(rules: rules) { url, _ in
            let client = try makeClient(url)
            let cancelled = Recorder()
            client.reference(withPath: "secret").observe(.value, with: { _ in cancelled.append("event") }, withCancel: { error in
                cancelled.append("cancel \((error as? DatabaseError)?.code.status ?? "?")")
            })
            #expect(await cancelled.wait(count: 1) == ["cancel permission_denied"])
            await #expect(throws: DatabaseError.self) {
                for try await _ in client.reference(withPath: "secret/deeper").values {}
            }
            await waitUntil { client.repo.state.withLock { $0.listenTokens.isEmpty } }
            client.goOffline()
        }
    }
}

@Suite struct LiveRestartTests {
    @Test func writesMadeWhileTheServerIsDownArriveOnceAfterItRestarts() async throws {
        let server = RestartableServer()
        try await server.start()
        let alice = try Hearth.Database(url: server.url, transport: NIOWebSocketTransport(), clock: FastClock()).withRealisticConnectTimeout()
        alice.callbackQueue = DispatchQueue(label: "hearth.test.alice")
        let log = alice.reference(withPath: "log")
        let recorder = Recorder()
        recorder.observe(log, .childAdded)
        try await log.child("1").setValue("one")
        #expect(await recorder.wait(count: 1) == [#"added 1 prev=- "one""#])

        await server.stop()
        let completions = Recorder()
        withoutWaiting {
            log.child("2").setValue("two") { error, _ in completions.append("2 \(error == nil)") }
            log.child("3").setValue("three") { error, _ in completions.append("3 \(error == nil)") }
        }
        // Shown at once, while the server is down.
        #expect(await recorder.wait(count: 3) == [#"added 1 prev=- "one""#, #"added 2 prev=1 "two""#, #"added 3 prev=2 "three""#])

        try await server.start()
        #expect(await completions.wait(count: 2) == ["2 true", "3 true"])
        let bob = try makeClient(server.url)
        try await bob.reference(withPath: "log/4").setValue("four")
        #expect(await recorder.wait(count: 4).last == #"added 4 prev=3 "four""#)
        await drain(alice)
        #expect(recorder.all.count == 4)
        let stored = try await bob.reference(withPath: "log").getData()
        // Integer keys: Firebase's value is an array ([null, "one", …]); compare the children.
        #expect(stored.children.map { $0.value as? String } == ["one", "two", "three", "four"])
        alice.goOffline()
        bob.goOffline()
        await server.stop()
    }
}

@Suite struct LiveToggleTests {
    @Test func togglingOfflineAndOnlineQuicklyEndsWithOneWorkingConnection() async throws {
        try await LiveServer.run { url, _ in
            let transport = RecordingTransport()
            let client = try Hearth.Database(url: url, transport: transport, clock: FastClock()).withRealisticConnectTimeout()
            client.callbackQueue = DispatchQueue(label: "hearth.test.callbacks")
            // A slow credential fetch widens the window in which a cancelled loop could interfere.
            client.authTokenProvider = {
                try? await Task.sleep(nanoseconds: 3_000_000)
                return "owner"
            }
            let connected = Recorder()
            connected.observe(client.reference(withPath: ".info/connected"), .value)
            for _ in 0..<20 {
                client.goOffline()
                client.goOnline()
            }
            try await client.reference(withPath: "after/toggle").setValue(true)
            await waitUntil { connected.all.last == "value connected prev=- true" }
            let read = try await client.reference(withPath: "after/toggle").getData()
            #expect(read.value as? Bool == true)
            client.goOffline()
        }
    }
}
