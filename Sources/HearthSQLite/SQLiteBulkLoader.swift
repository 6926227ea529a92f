import Foundation
import GRDB
import HearthCore
import HearthStorage

#if canImport(Glibc)
import Glibc
#endif

/// Replaces all the data of one namespace file with a JSON document, fast: a new database file is
/// built next to the old one and renamed over it (`docs/decisions/0011-fast-import.md`).
///
/// 1. SQLite creates the new file: the `nodes` table (empty), then every other table of the old file
///    with its rows (rules, rules history).
/// 2. The document's rows stream in key order (``RowImporter`` with `keyOrder`) into
///    ``SQLiteIndexTreeWriter``, which appends the `nodes` B-tree pages to the file (on a second
///    thread, fed through ``RowBatchChannel``); then the file is fsynced.
/// 3. The old file's write-ahead log is checkpointed into it and removed, the new file is renamed over
///    the old one, and the directory is fsynced.
///
/// Until the rename the old file is untouched (but for the checkpoint, which does not change its
/// content), so a failure or a crash at any point leaves either the old data or the new, never a mix.
/// The caller holds the data directory's lock.
///
/// For example:
/// ```swift
/// let rows = try SQLiteBulkLoader(databaseFile: url).load(bytes, progress: nil)
/// ```
struct SQLiteBulkLoader {
    let databaseFile: URL
    /// SQLite's default, as for the files the server creates.
    static let pageSize = 4096

    /// What SQLite created: the `nodes` root page (empty) and the pages in use.
    struct Layout: Sendable {
        var nodesRoot: Int
        var pageCount: Int
    }

    /// Imports `bytes`; returns the number of rows written.
    func load(_ bytes: UnsafeRawBufferPointer, progress: ((Int) -> Void)?) throws -> Int {
        removeLeftovers()
        let building = databaseFile.deletingLastPathComponent()
            .appendingPathComponent("\(databaseFile.lastPathComponent)\(Self.buildingMarker)\(UUID().uuidString)")
        do {
            let layout = try prepare(building)
            let rows = try fill(building, layout, bytes, progress)
            try replace(with: building)
            return rows
        } catch {
            for suffix in ["", "-journal"] { try? FileManager.default.removeItem(atPath: building.path + suffix) }
            throw error
        }
    }

    /// Names files being built as `<namespace>.sqlite.import-<uuid>`: never listed as namespaces.
    static let buildingMarker = ".import-"

    /// Files left by an import that crashed before its rename.
    func removeLeftovers() {
        let directory = databaseFile.deletingLastPathComponent()
        let prefix = databaseFile.lastPathComponent + Self.buildingMarker
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasPrefix(prefix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// Creates the new file with the schema and every table but `nodes` copied from the old file.
    func prepare(_ building: URL) throws -> Layout {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA page_size = \(Self.pageSize); PRAGMA auto_vacuum = NONE; PRAGMA journal_mode = OFF")
        }
        let queue = try DatabaseQueue(path: building.path, configuration: configuration)
        let old = databaseFile
        let layout = try queue.inDatabase { db -> Layout in
            try db.execute(sql: "CREATE TABLE nodes (path TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID")
            if FileManager.default.fileExists(atPath: old.path) {
                try db.execute(sql: "ATTACH DATABASE ? AS old", arguments: [old.path])
                // Tables before indexes, each as the old file defines it.
                let objects = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT type, name, sql FROM old.sqlite_schema
                        WHERE sql IS NOT NULL AND name <> 'nodes' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                        ORDER BY type <> 'table', rowid
                        """
                )
                for object in objects {
                    try db.execute(sql: object["sql"])
                }
                for object in objects where (object["type"] as String) == "table" {
                    let name = (object["name"] as String).replacingOccurrences(of: "\"", with: "\"\"")
                    try db.execute(sql: "INSERT INTO main.\"\(name)\" SELECT * FROM old.\"\(name)\"")
                }
                if try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM old.sqlite_schema WHERE name = 'sqlite_sequence'") == true {
                    // AUTOINCREMENT counters: never hand out a number again.
                    try db.execute(
                        sql: """
                            UPDATE main.sqlite_sequence
                            SET seq = max(seq, (SELECT o.seq FROM old.sqlite_sequence o WHERE o.name = main.sqlite_sequence.name))
                            WHERE name IN (SELECT name FROM old.sqlite_sequence)
                            """
                    )
                }
                try db.execute(sql: "DETACH DATABASE old")
            }
            try SQLiteNamespaceStorage.createSchema(db)
            guard let root = try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_schema WHERE name = 'nodes'"),
                let pages = try Int.fetchOne(db, sql: "PRAGMA page_count"),
                try Int.fetchOne(db, sql: "PRAGMA freelist_count") == 0,
                try Int.fetchOne(db, sql: "PRAGMA page_size") == Self.pageSize
            else { throw DatabaseStorageError(.unavailable, "Unexpected layout of the new database file") }
            return Layout(nodesRoot: root, pageCount: pages)
        }
        try queue.close()
        return layout
    }

    /// Streams the rows into the `nodes` B-tree, sets the page count in the header and syncs the file.
    /// This thread parses; another builds and writes the pages, so the two overlap on two cores.
    func fill(_ building: URL, _ layout: Layout, _ bytes: UnsafeRawBufferPointer, _ progress: ((Int) -> Void)?) throws -> Int {
        let descriptor = open(building.path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.systemError("open \(building.path)") }
        defer { close(descriptor) }
        let channel = RowBatchChannel(capacity: 4)
        let writing = Thread {
            var writer = SQLiteIndexTreeWriter(
                descriptor: descriptor,
                pageSize: Self.pageSize,
                rootPage: layout.nodesRoot,
                firstFreePage: layout.pageCount + 1
            )
            channel.finishWriting(
                Result {
                    while let batch = channel.receive() {
                        try batch.forEachRow { key, value in try writer.add(key: key, value: value) }
                    }
                    if channel.isAbandoned { throw CancellationError() }
                    return try writer.finish()
                }
            )
        }
        writing.name = "hearth-import-writer"
        writing.start()
        var importer = RowImporter(base: .root, keyOrder: true)
        importer.progress = progress
        do {
            var batch = RowBatch(capacity: Self.batchBytes + 4096)
            try importer.run(bytes) { key, value in
                batch.append(key: key, value: value)
                if batch.bytes.count >= Self.batchBytes {
                    // A false send means the writer failed: stop parsing; its error is reported below.
                    guard channel.send(batch) else { throw CancellationError() }
                    batch = RowBatch(capacity: Self.batchBytes + 4096)
                }
            }
            if channel.send(batch) { channel.close() }
        } catch {
            channel.close(abandoned: true)
            // The writer uses the descriptor: it must be done before the file is closed and removed.
            if case .failure(let writerError) = channel.waitForWriter(), !(writerError is CancellationError) { throw writerError }
            throw error
        }
        try Self.setPageCount(try channel.waitForWriter().get(), descriptor: descriptor)
        guard fsync(descriptor) == 0 else { throw Self.systemError("sync \(building.path)") }
        return importer.rowCount
    }

    /// Writes the header's page count (offset 28). SQLite trusts it while the change counter (24)
    /// equals the version-valid-for number (92), as it does in a file SQLite just closed.
    static func setPageCount(_ pages: Int, descriptor: Int32) throws {
        var count = UInt32(pages).bigEndian
        guard pwrite(descriptor, &count, 4, 28) == 4 else { throw systemError("write the database header") }
    }

    /// Rows are handed to the writing thread about a megabyte at a time.
    static let batchBytes = 1 << 20

    /// Puts the new file in place of the old one.
    func replace(with building: URL) throws {
        let path = databaseFile.path
        if FileManager.default.fileExists(atPath: path) {
            // The old write-ahead log belongs to the old file: fold it in and remove it, or SQLite would
            // replay it onto the new file.
            let queue = try DatabaseQueue(path: path)
            let busy = try queue.writeWithoutTransaction { db in
                try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") ?? 1
            }
            try queue.close()
            guard busy == 0 else { throw DatabaseStorageError(.unavailable, "Cannot checkpoint \(path); nothing was imported") }
            let wal = path + "-wal"
            if let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? NSNumber)?.intValue {
                guard size == 0 else { throw DatabaseStorageError(.unavailable, "The write-ahead log of \(path) is not empty; nothing was imported") }
                try FileManager.default.removeItem(atPath: wal)
            }
            try? FileManager.default.removeItem(atPath: path + "-shm")
            guard !FileManager.default.fileExists(atPath: path + "-journal") else {
                throw DatabaseStorageError(.unavailable, "\(path) has a rollback journal; nothing was imported")
            }
        }
        guard rename(building.path, path) == 0 else { throw Self.systemError("rename \(building.path)") }
        let directory = open(databaseFile.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw Self.systemError("open \(databaseFile.deletingLastPathComponent().path)") }
        defer { close(directory) }
        guard fsync(directory) == 0 else { throw Self.systemError("sync \(databaseFile.deletingLastPathComponent().path)") }
    }

    static func systemError(_ what: String) -> DatabaseStorageError {
        DatabaseStorageError(.unavailable, "Cannot \(what): \(String(cString: strerror(errno)))")
    }
}
