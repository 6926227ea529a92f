import Foundation
import HearthCore
import HearthSQLite
import HearthStorage
import Synchronization
import Testing

/// Backups of a data directory taken while a writer commits: each database is a consistent prefix of
/// its commits, the backup checks itself, and restore puts it back (and refuses what it must).
@Suite struct DataDirectoryBackupTests {
    final class Scratch {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-backup-\(UUID().uuidString)")
        var data: URL { root.appendingPathComponent("data") }
        func url(_ name: String) -> URL { root.appendingPathComponent(name) }
        deinit { try? FileManager.default.removeItem(at: root) }
    }

    func path(_ string: String) throws -> DatabasePath { try DatabasePath(string) }

    @Test func aBackupTakenDuringWritesIsAConsistentPrefixAndRestores() async throws {
        let scratch = Scratch()
        let storage = try SQLiteStorage(directory: scratch.data)
        let database = try await storage.open(namespace: "live")
        try await database.saveRules(#"{"rules": {".read": true}}"#, time: 1)
        // Each commit writes two places at once (a multi-path update): a backup must never hold one alone.
        let committed = Atomic<Int>(0)
        let writer = Task {
            var number = 0
            while !Task.isCancelled {
                number += 1
                try await database.commit([
                    .replace(try path("/items/\(number)"), .leaf(.number(Double(number)))),
                    .replace(try path("/copies/\(number)"), .leaf(.number(Double(number)))),
                ])
                committed.store(number, ordering: .releasing)
            }
        }
        while committed.load(ordering: .acquiring) < 50 { try await Task.sleep(for: .milliseconds(5)) }
        let before = committed.load(ordering: .acquiring)
        var reports: [(Int64, Int64)] = []
        let summary = try DataDirectoryBackup.create(from: scratch.data, to: scratch.url("backup")) { reports.append(($0, $1)) }
        writer.cancel()
        _ = await writer.result
        #expect(summary.databases == ["live"])
        #expect(!reports.isEmpty && reports.allSatisfy { $0.0 <= $0.1 })
        #expect(!FileManager.default.fileExists(atPath: scratch.url("backup.partial").path))

        // Restored into a new directory, it opens as a server would open it.
        try DataDirectoryBackup.restore(scratch.url("backup"), into: scratch.url("restored"), replacing: false)
        let restored = try await SQLiteStorage(directory: scratch.url("restored")).open(namespace: "live").load()
        let items = restored.root.child(at: try path("/items"))
        let copies = restored.root.child(at: try path("/copies"))
        let count = items.childCount
        // Everything committed before the backup began is there, and nothing is half of a commit.
        #expect(count >= before)
        #expect(copies == items)
        for number in 1...count { #expect(items.child(Key(String(number))) == .leaf(.number(Double(number)))) }
        #expect(restored.rulesSource == #"{"rules": {".read": true}}"#)
    }

    @Test func restoreRefusesADirectoryAServerHolds() async throws {
        let scratch = Scratch()
        do {
            let storage = try SQLiteStorage(directory: scratch.data)
            try await storage.open(namespace: "one").commit([.replace(try path("/v"), .leaf(.string("backed up")))])
            storage.releaseLock()
        }
        try DataDirectoryBackup.create(from: scratch.data, to: scratch.url("backup"))
        #expect(throws: DataDirectoryBackup.Failure.self) { try DataDirectoryBackup.create(from: scratch.data, to: scratch.url("backup")) }

        // Later data, and a server holding the directory.
        let running = try SQLiteStorage(directory: scratch.data)
        try await running.open(namespace: "one").commit([.replace(try path("/v"), .leaf(.string("later")))])
        let inUse = #expect(throws: DataDirectoryBackup.Failure.self) {
            try DataDirectoryBackup.restore(scratch.url("backup"), into: scratch.data, replacing: true)
        }
        #expect(inUse?.description.contains("stop it first") == true)
        // Nothing moved: the server's data is as it was.
        #expect(try await running.open(namespace: "one").load().root.child(at: try path("/v")) == .leaf(.string("later")))
    }

    @Test func restoreNeedsReplaceOverDataAndKeepsTheOldDirectory() async throws {
        let scratch = Scratch()
        do {
            let storage = try SQLiteStorage(directory: scratch.data)
            try await storage.open(namespace: "one").commit([.replace(try path("/v"), .leaf(.string("backed up")))])
            storage.releaseLock()
        }
        try DataDirectoryBackup.create(from: scratch.data, to: scratch.url("backup"))
        do {
            let storage = try SQLiteStorage(directory: scratch.data)
            try await storage.open(namespace: "one").commit([.replace(try path("/v"), .leaf(.string("later")))])
            storage.releaseLock()
        }
        let refused = #expect(throws: DataDirectoryBackup.Failure.self) {
            try DataDirectoryBackup.restore(scratch.url("backup"), into: scratch.data, replacing: false)
        }
        #expect(refused?.description.contains("--replace") == true)
        try DataDirectoryBackup.restore(scratch.url("backup"), into: scratch.data, replacing: true, now: Date(timeIntervalSince1970: 1234))
        let reopened = try SQLiteStorage(directory: scratch.data)
        let value = try await reopened.open(namespace: "one").load().root.child(at: try path("/v"))
        reopened.releaseLock()
        #expect(value == .leaf(.string("backed up")))
        let kept = try await SQLiteStorage(directory: URL(fileURLWithPath: scratch.data.path + ".before-restore-1234")).open(namespace: "one").load()
        #expect(kept.root.child(at: try path("/v")) == .leaf(.string("later")))
    }

    @Test func aDamagedBackupIsRefused() async throws {
        let scratch = Scratch()
        do {
            let storage = try SQLiteStorage(directory: scratch.data)
            let big = Node.leaf(.string(String(repeating: "x", count: 200_000)))
            try await storage.open(namespace: "one").commit([.replace(try path("/v"), big)])
            storage.releaseLock()
        }
        try DataDirectoryBackup.create(from: scratch.data, to: scratch.url("backup"))
        #expect(try DataDirectoryBackup.verify(scratch.url("backup")).databases == ["one"])
        // Overwrite a stretch in the middle of the database file.
        let file = scratch.url("backup/databases/one.sqlite")
        let handle = try FileHandle(forWritingTo: file)
        try handle.seek(toOffset: 4096 * 2)
        handle.write(Data(repeating: 0xA5, count: 4096 * 3))
        try handle.close()
        let damaged = #expect(throws: DataDirectoryBackup.Failure.self) {
            try DataDirectoryBackup.restore(scratch.url("backup"), into: scratch.url("restored"), replacing: false)
        }
        #expect(damaged.map { $0.description.contains("damaged") || $0.description.contains("cannot be read") } == true)
        #expect(!FileManager.default.fileExists(atPath: scratch.url("restored").path))
        #expect(throws: DataDirectoryBackup.Failure.self) { try DataDirectoryBackup.create(from: scratch.url("nowhere"), to: scratch.url("b2")) }
    }
}
