import Foundation
@testable import Hearth
import HearthCore
import Testing

/// Offline start with persistence across real processes: one launch of `HearthOfflineWriter` writes
/// while the server is down and exits; the next launch, on the same folder with the server back,
/// delivers the writes exactly once and in order.
@Suite struct PersistenceProcessTests {
    /// The helper executable, built beside the test bundle (HearthTests depends on it).
    static func writerExecutable() throws -> URL {
        let products = Bundle.module.bundleURL.deletingLastPathComponent()
        let executable = products.appendingPathComponent("HearthOfflineWriter")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw HelperMissing(path: executable.path)
        }
        return executable
    }

    struct HelperMissing: Error, CustomStringConvertible {
        var path: String
        var description: String { "HearthOfflineWriter is not at \(path); build with `swift build --build-tests`" }
    }

    /// Runs the helper to its end and returns its exit status and output.
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = try writerExecutable()
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let finished = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in finished.continuation.finish() }
        try process.run()
        // Wait without blocking a thread of the shared pool; the few bytes of output stay in the pipe.
        for await _ in finished.stream {}
        let data = output.fileHandleForReading.readDataToEndOfFile()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func writesQueuedByAProcessThatExitedOfflineReachTheServerOnceInOrderFromTheNextProcess() async throws {
        let folder = PersistenceTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = RestartableServer()
        try await server.start()
        let url = server.url
        await server.stop()

        // First process: the server is down; 50 × (child, increment, last) and one update.
        let written = try await Self.run(["write", url, folder.path, "50"])
        #expect(written.status == 0)
        #expect(written.output == "queued 151 writes\n")
        let databaseFolder = folder.appendingPathComponent(try RepoInfo(url: url).storageName)
        #expect(try PersistentStore(directory: databaseFolder).pendingWrites().count == 151)

        // The server is back; a client watches the log while the second process starts.
        try await server.start()
        let watcher = try makeClient(url)
        let log = Recorder()
        log.observe(watcher.reference(withPath: "log"), .childAdded)
        // Confirmed after the listen (the server answers in order): the watcher sees every write.
        try await watcher.reference(withPath: "ready").setValue(true)
        let flushed = try await Self.run(["flush", url, folder.path])
        #expect(flushed.status == 0)
        #expect(flushed.output == "flushed\n")

        let data = try await watcher.reference().getData()
        // Every increment counted once; `last` set in order ends at the last write's number.
        #expect(data.childSnapshot(forPath: "count").value as? Int == 50)
        #expect(data.childSnapshot(forPath: "last").value as? Int == 50)
        #expect(data.childSnapshot(forPath: "summary/written").value as? Int == 50)
        #expect(data.childSnapshot(forPath: "summary/by").value as? String == "writer")
        let events = await log.wait(count: 50)
        #expect(events == (1...50).map { #"added \#($0) prev=\#($0 == 1 ? "-" : String($0 - 1)) "entry \#($0)""# })
        #expect(try PersistentStore(directory: databaseFolder).pendingWrites().isEmpty)

        // A third launch has nothing left to send: the count stays.
        #expect(try await Self.run(["flush", url, folder.path]).status == 0)
        #expect(try await watcher.reference(withPath: "count").getData().value as? Int == 50)
        await drain(watcher)
        #expect(log.all.count == 50)
        watcher.goOffline()
        await server.stop()
    }
}
