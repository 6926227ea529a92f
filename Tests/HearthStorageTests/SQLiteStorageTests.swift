import Foundation
import GRDB
import HashTreeCollections
import HearthCore
@testable import HearthSQLite
import HearthStorage
import Testing

/// What only the SQLite backend promises: row economy, the directory lock, imports.
@Suite struct SQLiteStorageTests {
    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-sqlite-\(UUID().uuidString)")
    }

    @Test func aSecondProcessCannotOpenTheSameDirectory() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try SQLiteStorage(directory: directory)
        #expect(throws: DatabaseStorageError.self) { try SQLiteStorage(directory: directory) }
        _ = first
    }

    @Test func aNewDataDirectoryIsTheServersUserAloneAndAnExistingOneKeepsItsMode() throws {
        let directory = temporaryDirectory().appendingPathComponent("nested/data")
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent().deletingLastPathComponent()) }
        _ = try SQLiteStorage(directory: directory)
        for path in [directory.path, directory.appendingPathComponent("databases").path] {
            let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            #expect(mode & 0o777 == 0o700, "\(path): \(String(mode, radix: 8))")
        }
        let existing = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: existing) }
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
        _ = try SQLiteStorage(directory: existing)
        let mode = try #require(FileManager.default.attributesOfItem(atPath: existing.path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o750)
    }

    @Test func anUnwritableDirectoryIsAClearError() throws {
        #expect(throws: DatabaseStorageError.self) { try SQLiteStorage(directory: URL(fileURLWithPath: "/proc/hearth-cannot-write")) }
    }

    @Test func oneLeafWriteTouchesOneRowAndSubtreeDeleteIsOneRange() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let db = try storage.openNamespace("rows")
        var children = Node.Children()
        for i in 0..<2000 { children.entries[Key("item\(i)")] = .leaf(.number(Double(i))) }
        try await db.commit([.replace(try DatabasePath("/big"), .children(children))])
        #expect(try db.rowCount() == 2000)
        let changes = try await db.changedRows(during:) { try await db.commit([.replace(try DatabasePath("/big/item5"), .leaf(.string("new")))]) }
        #expect(changes == 2)  // one delete, one insert
        let deleted = try await db.changedRows(during:) { try await db.commit([.replace(try DatabasePath("/big"), .empty)]) }
        #expect(deleted == 2000)
        #expect(try db.rowCount() == 0)
    }

    @Test func importStreamsExportFormatAndRoundTrips() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let db = try storage.openNamespace("imported")
        let json = #"{"a":{".value":1,".priority":2},"b":{"c":[true,null,"x"],".priority":"p"},"d":null,"e":{}}"#
        var reported: [Int] = []
        let rows = try Array(json.utf8).withUnsafeBytes { raw in
            try db.importJSON(raw, at: try DatabasePath("/root"), merge: false) { reported.append($0) }
        }
        #expect(rows == 5)
        #expect(reported.last == json.utf8.count)
        let loaded = try await db.load().root
        #expect(loaded.jsonString(format: .export) == #"{"root":{"a":{".value":1,".priority":2},"b":{"c":{"0":true,"2":"x"},".priority":"p"}}}"#)
    }

    @Test func importMergeReplacesOnlyNamedChildren() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let db = try storage.openNamespace("merge")
        try await db.commit([.replace(.root, try Node(json: try JSONValue(parsing: #"{"keep":1,"replace":{"old":true}}"#)))])
        _ = try Array(#"{"replace":{"new":true},"added":2}"#.utf8).withUnsafeBytes { raw in
            try db.importJSON(raw, at: .root, merge: true)
        }
        #expect(try await db.load().root.jsonString() == #"{"added":2,"keep":1,"replace":{"new":true}}"#)
    }

    @Test func invalidImportChangesNothing() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let db = try storage.openNamespace("atomic")
        try await db.commit([.replace(.root, .leaf(.number(1)))])
        for bad in [#"{"a": 1, "b.c": 2}"#, #"{"a": [1, 2"#, #"{"a": {".sv": "timestamp"}}"#] {
            #expect(throws: (any Error).self) {
                try Array(bad.utf8).withUnsafeBytes { raw in try db.importJSON(raw, at: .root, merge: false) }
            }
        }
        #expect(try await db.load().root == .leaf(.number(1)))
    }
}

/// The two-threaded load: for every possible split row, the merged halves equal the whole.
@Suite struct SQLiteParallelLoadTests {
    @Test func mergingHalvesSplitAtAnyRowRebuildsTheTree() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-split-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let db = try storage.openNamespace("split")
        let tree = try Node(
            json: try JSONValue(
                parsing: #"""
                    {"a": {"x": {".value": 1, ".priority": 3}, "y": {"p": true, "q": {"r": "s"}, ".priority": "n"}, ".priority": 1},
                     "a b": {"c": 2}, "b": [1, 2, {"z": null, "w": 4}], "c": {".value": "leaf", ".priority": 9},
                     "d": {"e": {"f": {"g": {"h": 1}}, ".priority": 2}}, ".priority": 5}
                    """#
            )
        )
        try await db.commit([.replace(.root, tree)])
        try await db.queue.read { database in
            let whole = try SQLiteNamespaceStorage.build(database, from: nil, to: nil)
            #expect(whole == tree)
            let keys = try String.fetchAll(database, sql: "SELECT path FROM nodes ORDER BY path").map { Array($0.utf8) }
            #expect(keys.count > 10)
            for candidate in keys {
                guard let split = try SQLiteNamespaceStorage.split(database, at: candidate) else { continue }
                let lower = try SQLiteNamespaceStorage.build(database, from: nil, to: split)
                let upper = try SQLiteNamespaceStorage.build(database, from: split, to: nil)
                let merged = TreeBuilder.finalize(TreeBuilder.merge(lower, upper))
                #expect(merged.jsonString(format: .export) == tree.jsonString(format: .export), "split at \(candidate)")
            }
            #expect(try SQLiteNamespaceStorage.splitKey(database) != nil)
        }
    }
}
