import Foundation
import GRDB
import HearthCore
@testable import HearthSQLite
@testable import HearthStorage
import Synchronization
import Testing

/// The bulk import (a new file built page by page and renamed over the old one): the file is a valid
/// SQLite database holding exactly the document, and the old data survives any failure.
@Suite struct SQLiteBulkLoaderTests {
    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-bulk-\(UUID().uuidString)")
    }

    @discardableResult
    func importJSON(_ storage: SQLiteStorage, _ json: String, namespace: String = "bulk", at path: DatabasePath = .root, merge: Bool = false)
        throws -> Int
    {
        try Array(json.utf8).withUnsafeBytes { raw in try storage.importJSON(raw, namespace: namespace, at: path, merge: merge) }
    }

    func integrity(_ file: URL) throws -> [String] {
        let queue = try DatabaseQueue(path: file.path)
        defer { try? queue.close() }
        return try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }

    func rows(_ file: URL) throws -> [[String]] {
        let queue = try DatabaseQueue(path: file.path)
        defer { try? queue.close() }
        return try queue.read { db in try Row.fetchAll(db, sql: "SELECT path, value FROM nodes ORDER BY path").map { [$0[0], $0[1]] } }
    }

    /// Members out of key order (also arrays past index 9, whose keys sort as "10" < "2"), priorities,
    /// `.value`, unicode and escaped keys, values long enough for overflow pages.
    static let document = #"""
        {"zeta": {"b": 2, "a": 1, "a b": {"c": true}, "a!": "x", "ab": [0,1,2,3,4,5,6,7,8,9,10,11,12]},
         "Émile": {".priority": "p", "名前": "日本", "😀": {".value": 3, ".priority": 1.5}},
         "alpha": {"long": "LONG", "longer": "LONGER", "n": null, "empty": {}, "e\u0073caped": "\"q\"\\"},
         ".priority": 7, "beta": [{"x": {"y": {"z": -1.5e3}}}, null, "s"], "gamma": false}
        """#
        .replacingOccurrences(of: "LONGER", with: String(repeating: "ü", count: 150_000))
        .replacingOccurrences(of: "LONG", with: String(repeating: "x", count: 5_000))

    @Test func theNewFileHoldsExactlyTheDocument() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let rows = try importJSON(storage, Self.document)
        let file = storage.file(of: "bulk")
        #expect(try integrity(file) == ["ok"])
        // The same rows, in the same order, as the transactional import writes.
        try importJSON(storage, Self.document, namespace: "reference", at: try DatabasePath("/x"))
        let reference = try self.rows(storage.file(of: "reference")).map { [String($0[0].dropFirst(2)), $0[1]] }
        #expect(try self.rows(file) == reference)
        #expect(rows == reference.count)
        let expected = try Node(json: try JSONValue(parsing: Self.document))
        let loaded = try await storage.openNamespace("bulk").load().root
        #expect(loaded == expected)
        #expect(loaded.jsonString(format: .export) == expected.jsonString(format: .export))
    }

    /// Every tree shape: 0 to 300 rows of large cells (4 a page, so up to 5 levels), with and without
    /// overflow pages; after each import the file is valid, complete and writable by SQLite.
    @Test func everyRowCountMakesAValidTree() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        let file = storage.file(of: "bulk")
        let key = String(repeating: "k", count: 700)
        for valueSize in [250, 3_000] {
            let value = String(repeating: "v", count: valueSize)
            for count in 0...300 {
                // Document order is the reverse of key order.
                let members = (0..<count).reversed().map { #""\#(key)\#(String(format: "%04d", $0))":"\#(value)\#($0)""# }
                let rows = try importJSON(storage, "{" + members.joined(separator: ",") + "}")
                #expect(rows == count)
                let stored = try self.rows(file)
                #expect(stored.count == count)
                #expect(stored.map(\.[1]) == (0..<count).map { "\"\(value)\($0)\"" })
                if count % 25 == 0 || count < 20 || count % 4 == 1 {
                    #expect(try integrity(file) == ["ok"], "\(count) rows of \(valueSize)")
                }
            }
            // SQLite can keep writing the file: inserts and deletes across the whole tree.
            let queue = try DatabaseQueue(path: file.path)
            try queue.write { db in
                try db.execute(sql: "DELETE FROM nodes WHERE value LIKE '%3\"' OR value LIKE '%7\"'")
                for i in 0..<200 { try db.execute(sql: "INSERT INTO nodes VALUES (?, ?)", arguments: ["\u{1}\(key)\(i)x", value]) }
            }
            #expect(try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") } == ["ok"])
            try queue.close()
        }
    }

    /// SQLite never uses the page at 1 GiB (its file locks live there): a bigger import skips it.
    /// Writes 1.1 GB, so it takes several seconds.
    @Test func aFileOverOneGiBLeavesTheLockBytePageAlone() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("big.sqlite")
        let layout = try SQLiteBulkLoader(databaseFile: directory.appendingPathComponent("none.sqlite")).prepare(file)
        let descriptor = open(file.path, O_RDWR)
        #expect(descriptor >= 0)
        var writer = SQLiteIndexTreeWriter(descriptor: descriptor, pageSize: 4096, rootPage: layout.nodesRoot, firstFreePage: layout.pageCount + 1)
        let value = [UInt8](repeating: UInt8(ascii: "v"), count: 1_000_000)
        for index in 0..<1_100 {
            var key = "\u{1}k\(String(format: "%05d", index))"
            try key.withUTF8 { key in try value.withUnsafeBufferPointer { value in try writer.add(key: key, value: value) } }
        }
        let pages = try writer.finish()
        try SQLiteBulkLoader.setPageCount(pages, descriptor: descriptor)
        close(descriptor)
        #expect(pages * 4096 > 0x4000_0000 + 4096)
        #expect(try integrity(file) == ["ok"])
        let queue = try DatabaseQueue(path: file.path)
        defer { try? queue.close() }
        let lengths = try queue.read { db in try Int.fetchAll(db, sql: "SELECT length(value) FROM nodes ORDER BY path") }
        #expect(lengths == Array(repeating: 1_000_000, count: 1_100))
    }

    @Test func aRepeatedMemberKeepsItsLastValue() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        try importJSON(storage, #"{"b": {"y": 1}, "a": 1, "b": {"x": 2}, "a": {"z": 3}}"#)
        #expect(try integrity(storage.file(of: "bulk")) == ["ok"])
        #expect(try await storage.openNamespace("bulk").load().root.jsonString() == #"{"a":{"z":3},"b":{"x":2}}"#)
    }

    @Test func importingTheRootReplacesEverythingAndKeepsTheRules() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let storage = try SQLiteStorage(directory: directory)
            let db = try storage.openNamespace("bulk")
            try await db.commit([.replace(.root, try Node(json: try JSONValue(parsing: #"{"old": {"a": 1}, "other": 2}"#)))])
            try await db.saveRules(#"{"rules": {".read": true}}"#, time: 1)
            try await db.saveRules(#"{"rules": {".read": false}}"#, time: 2)
            try await db.close()
            storage.releaseLock()
        }
        let storage = try SQLiteStorage(directory: directory)
        try importJSON(storage, #"{"new": {"b": 2}}"#)
        let loaded = try await storage.openNamespace("bulk").load()
        #expect(loaded.root.jsonString() == #"{"new":{"b":2}}"#)
        #expect(loaded.rulesSource == #"{"rules": {".read": false}}"#)
        let history = try await storage.openNamespace("bulk").rulesHistory(limit: 10)
        #expect(history.map(\.time) == [2, 1])
        // The history keeps counting where it was.
        try await storage.openNamespace("bulk").saveRules(#"{"rules": {}}"#, time: 3)
        let versions = try await storage.openNamespace("bulk").rulesHistory(limit: 10).map(\.version)
        #expect(versions.count == 3 && versions[0] == versions[1] + 1)
        #expect(try integrity(storage.file(of: "bulk")) == ["ok"])
    }

    /// A server killed with writes only in its write-ahead log: they are read (the rules) and the old
    /// log is not replayed onto the new file.
    @Test func theOldWriteAheadLogIsFoldedInNotReplayed() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let databases = directory.appendingPathComponent("databases")
        try FileManager.default.createDirectory(at: databases, withIntermediateDirectories: true)
        let scratch = directory.appendingPathComponent("scratch.sqlite")
        let live = try DatabaseQueue(path: scratch.path)
        try await live.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try SQLiteNamespaceStorage.createSchema(db)
            try db.execute(sql: "INSERT INTO nodes VALUES (?, '1')", arguments: ["\u{1}old"])
            try db.execute(sql: "INSERT INTO meta VALUES ('rules', 'from the log')")
        }
        // Copy the file with its log while the connection is open: what a killed process leaves.
        try FileManager.default.copyItem(at: scratch, to: databases.appendingPathComponent("bulk.sqlite"))
        try FileManager.default.copyItem(atPath: scratch.path + "-wal", toPath: databases.appendingPathComponent("bulk.sqlite-wal").path)
        try live.close()
        #expect(FileManager.default.fileExists(atPath: databases.appendingPathComponent("bulk.sqlite-wal").path))

        let storage = try SQLiteStorage(directory: directory)
        try importJSON(storage, #"{"new": true}"#)
        #expect(!FileManager.default.fileExists(atPath: databases.appendingPathComponent("bulk.sqlite-wal").path))
        let loaded = try await storage.openNamespace("bulk").load()
        #expect(loaded.root.jsonString() == #"{"new":true}"#)
        #expect(loaded.rulesSource == "from the log")
        #expect(try integrity(storage.file(of: "bulk")) == ["ok"])
    }

    @Test func aFailingImportLeavesTheOldDataAndNoFiles() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let old = #"{"keep": {"a": 1}}"#
        try importJSON(try SQLiteStorage(directory: directory), old)
        // Fails far into the document, after many pages were written.
        let members = (0..<20_000).map { #""k\#($0)": {"v": \#($0), "s": "some text"}"# }.joined(separator: ",")
        let bad = [
            "{" + members + #", "bad.key": 1}"#,
            "{" + members + #", "k": {".sv": "timestamp"}}"#,
            "{" + members + #", "k": [1, 2"#,
            "{" + members + #"} trailing"#,
        ]
        for json in bad {
            let storage = try SQLiteStorage(directory: directory)
            #expect(throws: (any Error).self) { try importJSON(storage, json) }
            storage.releaseLock()
        }
        let storage = try SQLiteStorage(directory: directory)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("databases").path) == ["bulk.sqlite"])
        #expect(try await storage.openNamespace("bulk").load().root.jsonString() == #"{"keep":{"a":1}}"#)
    }

    /// What a crash mid-import leaves (a half-built file next to the old one) is ignored and removed.
    @Test func aCrashedImportsFileIsIgnoredThenRemoved() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try importJSON(try SQLiteStorage(directory: directory), #"{"keep": 1}"#)
        let databases = directory.appendingPathComponent("databases")
        let leftover = databases.appendingPathComponent("bulk.sqlite.import-\(UUID().uuidString)")
        try Data(repeating: 7, count: 10_000).write(to: leftover)
        let storage = try SQLiteStorage(directory: directory)
        #expect(try await storage.namespaces() == ["bulk"])
        #expect(try await storage.openNamespace("bulk").load().root.jsonString() == #"{"keep":1}"#)
        try await storage.openNamespace("bulk").close()
        storage.releaseLock()
        try importJSON(try SQLiteStorage(directory: directory), #"{"new": 1}"#)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
    }

    @Test func mergeAndSubPathImportsStillUseTheTransaction() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(directory: directory)
        try importJSON(storage, #"{"keep": 1, "replace": {"old": true}, "sub": {"x": 1, "y": 2}}"#)
        try importJSON(storage, #"{"replace": {"new": true}, "added": 2}"#, merge: true)
        try importJSON(storage, #"{"z": 3}"#, at: try DatabasePath("/sub"))
        #expect(
            try await storage.openNamespace("bulk").load().root.jsonString()
                == #"{"added":2,"keep":1,"replace":{"new":true},"sub":{"z":3}}"#
        )
        // With the namespace open in this process, even a root import goes through the transaction.
        try importJSON(storage, #"{"only": 1}"#)
        #expect(try await storage.openNamespace("bulk").load().root.jsonString() == #"{"only":1}"#)
    }

    @Test func aPrimitiveOrEmptyDocumentAtTheRoot() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (json, expected) in [("42", "42"), (#""text""#, #""text""#), ("null", "null"), ("{}", "null"), ("[]", "null")] {
            try importJSON(try SQLiteStorage(directory: directory), json)
            let storage = try SQLiteStorage(directory: directory)
            #expect(try await storage.openNamespace("bulk").load().root.jsonString() == expected, "\(json)")
            #expect(try integrity(storage.file(of: "bulk")) == ["ok"])
            try await storage.openNamespace("bulk").close()
            storage.releaseLock()
        }
    }
}

/// Rows in key order: what the bulk load's B-tree needs, from documents in any member order.
@Suite struct RowImporterKeyOrderTests {
    /// The rows as `key=value`, with the key's separators shown as `/`.
    func rows(_ json: String, keyOrder: Bool) throws -> [String] {
        try rawRows(json, keyOrder: keyOrder).map { $0.key.replacingOccurrences(of: "\u{1}", with: "/") + "=" + $0.value }
    }

    func rawRows(_ json: String, keyOrder: Bool) throws -> [(key: String, value: String)] {
        var importer = RowImporter(base: .root, keyOrder: keyOrder)
        var rows: [(key: String, value: String)] = []
        try Array(json.utf8).withUnsafeBytes { raw in
            try importer.run(raw) { key, value in
                rows.append((String(decoding: key, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            }
        }
        return rows
    }

    @Test func rowsComeSortedByKeyBytes() throws {
        let json = #"{"b": {"y": [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], "x": 1}, "a b": 2, "a": {".priority": 3, "é": 4, "z": 5}, "a!": 6}"#
        let ordered = try rows(json, keyOrder: true)
        #expect(ordered == ["/a//=3", "/a/z=5", "/a/é=4", "/a b=2", "/a!=6", "/b/x=1"] + ["0", "1", "10", "2", "3", "4", "5", "6", "7", "8", "9"].map {
            "/b/y/\($0)=\(Int($0)! + 5)"
        })
        let keys = try rawRows(json, keyOrder: true).map(\.key)
        #expect(keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } == keys)
        #expect(try rows(json, keyOrder: false).sorted() == ordered.sorted())
    }

    /// A generated document: leaves as their JSON text, objects with distinct keys (decoded).
    indirect enum Model {
        case leaf(String)
        case array([Model])
        case object([(key: String, value: Model)])

        /// Its rows, as `(key, JSON text)`, under the row key `prefix`.
        func rows(_ prefix: String) -> [(key: String, value: String)] {
            switch self {
            case .leaf(let text): return [(prefix, text)]
            case .array(let items): return items.enumerated().flatMap { $0.element.rows(prefix + "\u{1}\($0.offset)") }
            case .object(let members): return members.flatMap { $0.value.rows(prefix + "\u{1}" + $0.key) }
            }
        }
    }

    /// Random documents whose keys are written plainly, with `\u` escapes and in literal UTF-8, some
    /// preceded by an earlier member of the same key (the last wins), with arrays and nesting: the
    /// key-order import gives exactly the document's rows, sorted by key bytes. Keys read in place and
    /// keys decoded into the importer's own buffer meet in one container, at every depth.
    @Test(arguments: [1, 2, 3, 4, 5]) func randomDocumentsGiveTheirRowsInKeyOrder(seed: Int) throws {
        var random = SplitMix(seed: UInt64(seed))
        let keys = ["a", "b", "ab", "a b", "user_10", "u0000007", "-Nx9", "Z", "2", "10", "é", "éx", "日本", "\"q\"", "back\\slash"]
        func written(_ key: String) -> String {
            key.unicodeScalars.map { scalar -> String in
                let mustEscape = scalar == "\"" || scalar == "\\"
                if !mustEscape && Bool.random(using: &random) { return String(scalar) }
                return String(format: "\\u%04x", scalar.value)
            }.joined()
        }
        func model(_ depth: Int) -> Model {
            switch depth >= 4 ? 0 : Int.random(in: 0..<6, using: &random) {
            case 0: return .leaf(String(Int.random(in: -5...500, using: &random)))
            case 1: return .leaf(#""s\u00e9\n\#(Int.random(in: 0...9, using: &random))""#)
            case 2: return .array((0..<Int.random(in: 0...12, using: &random)).map { _ in model(depth + 1) })
            default:
                let chosen = keys.shuffled(using: &random).prefix(Int.random(in: 1...7, using: &random))
                return .object(chosen.map { ($0, model(depth + 1)) })
            }
        }
        func render(_ model: Model) -> String {
            switch model {
            case .leaf(let text): return text
            case .array(let items): return "[" + items.map(render).joined(separator: ",") + "]"
            case .object(let members):
                return "{" + members.map { member in
                    let decoy = Int.random(in: 0..<5, using: &random) == 0 ? #""\#(written(member.key))": {"gone": [1, 2]}, "# : ""
                    return decoy + #""\#(written(member.key))": \#(render(member.value))"#
                }.joined(separator: ", ") + "}"
            }
        }
        for _ in 0..<200 {
            let document = Model.object([("root", model(0)), ("more", model(1))])
            let json = render(document)
            let expected = document.rows("").sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            let imported = try rawRows(json, keyOrder: true)
            #expect(imported.map(\.key) == expected.map(\.key), "\(json)")
            #expect(imported.map(\.value) == expected.map(\.value), "\(json)")
        }
    }

    /// A large import lists millions of members at once (8.2 M users for 2 GB): each stays 32 bytes.
    @Test func aListedMemberTakes32Bytes() {
        #expect(MemoryLayout<RowImporter.Member>.stride == 32)
    }

    @Test func invalidDocumentsAreRejectedAsInDocumentOrder() {
        for bad in [
            #"{"a": tru}"#, #"{"a": 1 2}"#, #"{"a": [1}"#, #"{"a": "x}"#, #"{"a": {"b": 1}"#, #"{"a": 1,}"#, #"{"a": 1} x"#,
            #"{"a": {".sv": "timestamp"}}"#, #"{"a/b": 1}"#, #"{"a": {".value": {"b": 1}}}"#, #"{"a": {".priority": true}}"#,
            #"{"a": "\x"}"#, #"{"a": 01x}"#,
        ] {
            #expect(throws: (any Error).self, "\(bad)") { try rows(bad, keyOrder: true) }
            #expect(throws: (any Error).self, "\(bad)") { try rows(bad, keyOrder: false) }
        }
    }

    @Test func skipValueFindsTheEndOfEveryKindOfValue() throws {
        for (json, end) in [
            (#""a\"b\\" ,"#, 8), (#"{"a": [1, {"b": "}"}]} x"#, 22), ("[[], {}, [[\"]\"]]],", 17), ("-1.5e3,", 6), ("true}", 4),
        ] {
            try Array(json.utf8).withUnsafeBytes { raw in
                var parser = JSONParser(raw)
                try parser.skipValue()
                #expect(parser.offset == end, "\(json)")
            }
        }
    }
}

/// The hand-over between the parsing and the writing thread of the bulk import.
@Suite struct RowBatchChannelTests {
    func batch(_ rows: [(String, String)]) -> RowBatch {
        var batch = RowBatch()
        for (key, value) in rows {
            var key = key
            var value = value
            key.withUTF8 { key in value.withUTF8 { value in batch.append(key: key, value: value) } }
        }
        return batch
    }

    @Test func rowsArriveInOrderAndTheOutcomeComesBack() throws {
        let channel = RowBatchChannel(capacity: 2)
        final class Received: Sendable { let rows = Mutex<[String]>([]) }
        let received = Received()
        let writer = Thread {
            var count = 0
            while let batch = channel.receive() {
                batch.forEachRow { key, value in
                    received.rows.withLock { $0.append(String(decoding: key, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self)) }
                    count += 1
                }
            }
            channel.finishWriting(.success(count))
        }
        writer.start()
        for index in 0..<50 {
            #expect(channel.send(batch([("k\(index)", "\(index)"), ("", "")])))
        }
        channel.close()
        #expect(try channel.waitForWriter().get() == 100)
        #expect(received.rows.withLock { $0 } == (0..<50).flatMap { ["k\($0)=\($0)", "="] })
    }

    @Test func aFailedWriterStopsTheSender() {
        struct Full: Error {}
        let channel = RowBatchChannel(capacity: 1)
        let writer = Thread {
            _ = channel.receive()
            channel.finishWriting(.failure(Full()))
        }
        writer.start()
        var sent = 0
        while channel.send(batch([("k", "v")])) {
            sent += 1
            #expect(sent < 1000)
            if sent >= 1000 { break }
        }
        #expect(sent >= 1)
        guard case .failure(let error) = channel.waitForWriter() else {
            Issue.record("the writer's failure was lost")
            return
        }
        #expect(error is Full)
    }

    @Test func anAbandonedImportEndsTheWriterWithoutFinishing() {
        let channel = RowBatchChannel(capacity: 4)
        let writer = Thread {
            var batches = 0
            while channel.receive() != nil { batches += 1 }
            channel.finishWriting(channel.isAbandoned ? .failure(CancellationError()) : .success(batches))
        }
        writer.start()
        #expect(channel.send(batch([("a", "1")])))
        channel.close(abandoned: true)
        guard case .failure(let error) = channel.waitForWriter() else {
            Issue.record("an abandoned import finished its tree")
            return
        }
        #expect(error is CancellationError)
    }
}
