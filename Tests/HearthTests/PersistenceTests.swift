import Foundation
@testable import Hearth
import HearthCore
import HearthServer
import Synchronization
import Testing

/// Persistence of unconfirmed writes: the log's format and recovery, and a write made offline by one
/// client reaching the server through the next client that opens the same folder.
@Suite struct PersistenceTests {
    static func temporaryFolder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-persistence-\(UUID().uuidString)", isDirectory: true)
    }

    static func body(_ path: String, _ data: String) -> JSONValue {
        .object([("p", .string(path)), ("d", try! JSONValue(parsing: data))])
    }

    @Test func reopeningKeepsOnlyUnconfirmedWritesRenumberedAndIgnoresATornLine() throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let log = try PendingWriteLog(directory: folder)
            #expect(log.recovered.isEmpty)
            log.append(.init(id: 1, action: "p", body: Self.body("/a", "1")))
            log.append(.init(id: 2, action: "m", body: Self.body("/b", #"{"x":1,"y/z":2}"#)))
            log.append(.init(id: 3, action: "p", body: Self.body("/c", #""three""#)))
            log.confirm(id: 2)
        }
        // A process killed in the middle of a line leaves it torn.
        let handle = try FileHandle(forWritingTo: folder.appendingPathComponent("pending-writes.jsonl"))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"w":4,"a":"p","b":{"p":"/d""#.utf8))
        try handle.close()

        let reopened = try PendingWriteLog(directory: folder)
        #expect(reopened.recovered == [
            .init(id: 1, action: "p", body: Self.body("/a", "1")),
            .init(id: 2, action: "p", body: Self.body("/c", #""three""#)),
        ])
        reopened.confirm(id: 1)
        reopened.confirm(id: 2)
        #expect(try PendingWriteLog(directory: folder).recovered.isEmpty)
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
            // Once confirmed, a third launch has nothing left to send.
            let logFile = folder.appendingPathComponent(second.repo.state.withLock { $0.info.storageName }).appendingPathComponent("pending-writes.jsonl")
            await waitUntil { (try? PendingWriteLog.unconfirmed(in: Data(contentsOf: logFile)).isEmpty) == true }
            first.goOffline()
            second.goOffline()
        }
    }
}
