import Foundation
import HearthCore
import HearthPostgres
import HearthSQLite
import HearthStorage
import Synchronization
import Testing

/// `hearth migrate`'s copy: every namespace, its rows, priorities, rules and rules history, in bounded
/// commits; a target holding any of the namespaces is refused unless replacing.
@Suite struct DatabaseMigrationTests {
    func node(_ json: String) throws -> Node {
        try Node(json: try JSONValue(parsing: json))
    }

    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-migrate-\(UUID().uuidString)")
    }

    /// Two namespaces with priorities, a root priority and rules history, in `storage`.
    func fill(_ storage: any DatabaseStorage) async throws -> [String: Node] {
        let shop = try node(
            #"{"items": {"a": {"n": 1, ".priority": 2}, "b": "two"}, "users": {"é ü": true}, "n": -1.5, ".priority": "root"}"#
        )
        let big = try node("{" + (0..<250).map { #""k\#($0)": {"v": \#($0)}"# }.joined(separator: ",") + "}")
        try await storage.open(namespace: "shop").commit([.replace(.root, shop)])
        try await storage.open(namespace: "shop").saveRules(#"{"rules": {".read": false}}"#, time: 1)
        try await storage.open(namespace: "shop").saveRules(#"{"rules": {".read": true}}"#, time: 2)
        try await storage.open(namespace: "big").commit([.replace(.root, big)])
        return ["shop": shop, "big": big]
    }

    func expectCopied(_ expected: [String: Node], in target: any DatabaseStorage) async throws {
        #expect(try await target.namespaces() == expected.keys.sorted())
        for (name, tree) in expected {
            let loaded = try await target.open(namespace: name).load()
            #expect(loaded.root.jsonString(format: .export) == tree.jsonString(format: .export))
        }
        let shop = try await target.open(namespace: "shop")
        #expect(try await shop.load().rulesSource == #"{"rules": {".read": true}}"#)
        #expect(try await shop.rulesHistory(limit: 10).map(\.time) == [2, 1])
    }

    @Test func aDataDirectoryIsCopiedInBoundedCommits() async throws {
        let source = InMemoryStorage()
        let expected = try await fill(source)
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = try SQLiteStorage(directory: directory)
        let reports = Reports()
        let summary = try await DatabaseMigration(batchRows: 100).run(from: source, to: target) { reports.add($0) }
        #expect(summary == DatabaseMigration.Summary(namespaces: 2, rows: 250 + 6, rulesVersions: 2))
        try await expectCopied(expected, in: target)
        // 250 rows in commits of at most 100 rows: progress after each.
        #expect(reports.all.filter { $0.namespace == "big" }.map(\.rowsDone) == [0, 100, 200, 250])
        #expect(reports.all.last == DatabaseMigration.Progress(namespace: "shop", index: 2, count: 2, rowsDone: 6, rowsTotal: 6))
    }

    @Test func aTargetThatHoldsOneOfTheDatabasesIsLeftAloneUnlessReplacing() async throws {
        let source = InMemoryStorage()
        let expected = try await fill(source)
        let target = InMemoryStorage()
        try await target.open(namespace: "shop").commit([.replace(.root, try node(#"{"old": {"x": 1}}"#))])
        await #expect {
            _ = try await DatabaseMigration().run(from: source, to: target)
        } throws: { error in
            (error as? DatabaseMigration.TargetNotEmpty)?.namespaces == ["shop"]
        }
        #expect(try await target.namespaces() == ["shop"])
        #expect(try await target.open(namespace: "shop").load().root.jsonString() == #"{"old":{"x":1}}"#)
        _ = try await DatabaseMigration(replace: true).run(from: source, to: target)
        try await expectCopied(expected, in: target)
    }

    @Test(.enabled(if: PostgresTestServer.shouldRun, Comment(rawValue: PostgresTestServer.missingMessage)))
    func aDataDirectoryGoesToPostgresAndBack() async throws {
        let directory = temporaryDirectory()
        let back = temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: back)
        }
        let sqlite = try SQLiteStorage(directory: directory)
        let expected = try await fill(sqlite)
        let (url, name) = try await PostgresTestServer.freshDatabase()
        let postgres = try await PostgresStorage.connect(url: url, nodeName: "migrate", connectionWait: PostgresTestServer.connectionWait)
        _ = try await DatabaseMigration(batchRows: 64).run(from: sqlite, to: postgres)
        try await expectCopied(expected, in: postgres)
        // Running nodes learn of the copy through the log: each commit appends the reload entry.
        let log = try await postgres.openNamespace("big").changes(after: 0, limit: 100)
        #expect(log.count == 4)
        #expect(log.allSatisfy { $0.payload == LogEntry.reloadPayload })
        let copy = try SQLiteStorage(directory: back)
        _ = try await DatabaseMigration().run(from: postgres, to: copy)
        try await expectCopied(expected, in: copy)
        await postgres.shutdown()
        await PostgresTestServer.drop(name)
    }
}

/// Collects progress reports from the migration's callback.
final class Reports: Sendable {
    private let reports = Mutex<[DatabaseMigration.Progress]>([])
    func add(_ progress: DatabaseMigration.Progress) { reports.withLock { $0.append(progress) } }
    var all: [DatabaseMigration.Progress] { reports.withLock { $0 } }
}
