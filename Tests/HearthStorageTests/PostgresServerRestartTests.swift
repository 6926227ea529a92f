import Foundation
import Glibc
import HearthCore
import HearthPostgres
import HearthStorage
import Testing

/// A node rides out its PostgreSQL server's crash and restart: its pool and its session (LISTEN,
/// heartbeats) come back, its lease and data are intact; while the server is down, operations fail with
/// `.unavailable` instead of hanging. Runs its own server (`scripts/postgres/throwaway.sh`), since it
/// restarts it.
@Suite(.enabled(if: PostgresTestServer.shouldRun, Comment(rawValue: PostgresTestServer.missingMessage)))
struct PostgresServerRestartTests {
    /// Runs `scripts/postgres/throwaway.sh` and returns its standard output.
    @discardableResult
    static func throwaway(_ arguments: String...) async throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = root.appendingPathComponent("scripts/postgres/throwaway.sh")
        process.arguments = arguments
        // A file, not a pipe: the server the script starts may keep an inherited pipe open for good.
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-throwaway-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        process.standardOutput = output
        try process.run()
        // Reaped here: in this process Foundation's own child monitoring was seen to leave the script a
        // zombie, its termination never reported.
        var status: Int32 = 0
        while waitpid(process.processIdentifier, &status, WNOHANG) == 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        status = (status >> 8) & 0xff
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else { throw DatabaseStorageError(.unavailable, "throwaway.sh \(arguments.joined(separator: " ")) failed (\(status))") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Retries `body` until it succeeds (30 s at most), returning its result.
    func eventually<T>(_ body: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try await body()
            } catch {
                if ContinuousClock.now > deadline { throw error }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    @Test func aNodeRidesOutACrashAndRestartOfItsServer() async throws {
        _ = try PostgresTestServer.requireURL()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pg-restart-\(UUID().uuidString)").path
        let url = try await Self.throwaway("start", directory)
        let port = url.split(separator: ":").last.flatMap { $0.split(separator: "/").first }.map(String.init) ?? ""
        let storage = try await PostgresStorage.connect(url: url, nodeName: "a", connectionWait: .seconds(10))
        do {
            try await storage.join(address: "http://a.test:9000")
            let generation = try #require(storage.freshGeneration)
            let db = try storage.openNamespace("demo")
            let lease = try #require(try await db.claim())
            let first = try await db.commit([.replace(try DatabasePath("/before"), .leaf(.number(1)))], entry: "1", epoch: lease.epoch)

            try await Self.throwaway("restart-immediate", directory)
            let second = try await eventually {
                try await db.commit([.replace(try DatabasePath("/after"), .leaf(.number(2)))], entry: "2", epoch: lease.epoch)
            }
            #expect(second == first + 1)
            #expect(try await db.load().root.jsonString() == #"{"after":2,"before":1}"#)
            #expect(try await db.lease()?.epoch == lease.epoch)
            _ = try await eventually { if !storage.isLeaseFresh { throw DatabaseStorageError(.unavailable, "not fresh yet") } }
            // The session ended with the server: a lease seen before then no longer lets a tree answer alone.
            #expect(storage.freshGeneration.map { $0 > generation } == true)
            // LISTEN is back: a wake-up sent now arrives.
            let notifications = storage.commitNotifications()
            let sender = Task {
                while !Task.isCancelled {
                    try await db.notify(sequence: second)
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let received = await firstElement(of: notifications)
            sender.cancel()
            #expect(received == CommitNotification(namespace: "demo", sequence: second))

            try await Self.throwaway("stop", directory)
            await #expect {
                _ = try await db.commit([.replace(try DatabasePath("/down"), .leaf(.number(3)))], entry: "3", epoch: lease.epoch)
            } throws: { error in
                (error as? DatabaseStorageError)?.code == .unavailable
            }
            _ = try await eventually { if storage.isLeaseFresh { throw DatabaseStorageError(.unavailable, "still fresh") } }
            #expect(storage.freshGeneration == nil)
            try await Self.throwaway("start", directory, port)
            #expect(try await eventually { try await db.committedSequence() } == second)
        } catch {
            await storage.shutdown()
            _ = try? await Self.throwaway("stop", directory)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        await storage.shutdown()
        try await Self.throwaway("stop", directory)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
