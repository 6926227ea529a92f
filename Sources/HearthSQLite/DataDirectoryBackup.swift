import Foundation
import GRDB
import Glibc

/// Consistent copies of a data directory — taken while a server runs — and their restore.
///
/// Every SQLite file (each database under `databases/`, `users.sqlite`, `files.sqlite`) is copied
/// with `VACUUM INTO` from a read-only connection: one read transaction, so each copy is exactly the
/// file as of one commit, and the server's writer never waits (WAL). The files' bytes are immutable
/// once written, so each blob the copied catalog names is hard-linked (or copied across file systems);
/// a blob removed before it was linked means the catalog changed meanwhile, and the files are taken
/// again. The server's keys (`admin-secret`, `signing-key`) are copied as they are. The backup is
/// written under `<destination>.partial`, fsynced, checked with `PRAGMA integrity_check`, then renamed:
/// a backup directory that exists is complete.
///
/// For example:
/// ```swift
/// let summary = try DataDirectoryBackup.create(from: URL(fileURLWithPath: "hearth-data"), to: URL(fileURLWithPath: "backups/monday"))
/// try DataDirectoryBackup.restore(URL(fileURLWithPath: "backups/monday"), into: URL(fileURLWithPath: "hearth-data"), replacing: true)
/// ```
public enum DataDirectoryBackup {
    /// What a backup holds.
    public struct Summary: Sendable, Equatable {
        /// The namespaces of its databases.
        public var databases: [String] = []
        /// Databases, users and the files' catalog.
        public var sqliteFiles = 0
        /// Stored files' bytes.
        public var blobs = 0
        /// Bytes copied.
        public var bytes: Int64 = 0
    }

    /// A backup or restore that cannot be done; the description says why and what to do.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The files a data directory keeps besides its SQLite files: the server's own secrets.
    static let keyFiles = ["admin-secret", "signing-key"]

    /// Takes a backup of `data` into `destination`, which must not exist yet. `progress` gets the
    /// bytes written so far and the total expected.
    @discardableResult
    public static func create(from data: URL, to destination: URL, progress: (Int64, Int64) -> Void = { _, _ in }) throws -> Summary {
        let manager = FileManager.default
        guard manager.fileExists(atPath: data.appendingPathComponent("databases").path) else {
            throw Failure("\(data.path) is not a Hearth data directory (it has no databases/ folder); pass the server's --data directory")
        }
        guard !manager.fileExists(atPath: destination.path) else {
            throw Failure("\(destination.path) already exists; name a new directory for the backup")
        }
        let partial = URL(fileURLWithPath: destination.path + ".partial")
        try? manager.removeItem(at: partial)
        var attempt = 0
        while true {
            attempt += 1
            do {
                let summary = try write(data, into: partial, progress: progress)
                try verify(partial)
                try manager.moveItem(at: partial, to: destination)
                try fsyncDirectory(destination.deletingLastPathComponent())
                return summary
            } catch let missing as MissingBlob where attempt < 5 {
                // An object was replaced or deleted between the catalog's copy and its blob's: take it all again.
                _ = missing
                try? manager.removeItem(at: partial)
            } catch {
                try? manager.removeItem(at: partial)
                throw error
            }
        }
    }

    struct MissingBlob: Error {}

    /// Every SQLite file of a data directory, relative to it.
    static func sqliteFiles(in directory: URL) -> [String] {
        let manager = FileManager.default
        let top = ((try? manager.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".sqlite") }.sorted()
        let databases = ((try? manager.contentsOfDirectory(atPath: directory.appendingPathComponent("databases").path)) ?? [])
            .filter { $0.hasSuffix(".sqlite") }.sorted().map { "databases/\($0)" }
        return databases + top
    }

    private static func write(_ data: URL, into partial: URL, progress: (Int64, Int64) -> Void) throws -> Summary {
        let manager = FileManager.default
        try manager.createDirectory(at: partial.appendingPathComponent("databases"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let files = sqliteFiles(in: data)
        let expected = files.reduce(Int64(0)) { $0 + fileSize(data.appendingPathComponent($1)) + fileSize(data.appendingPathComponent($1 + "-wal")) }
        var summary = Summary()
        for file in files {
            let output = partial.appendingPathComponent(file)
            try vacuum(data.appendingPathComponent(file), into: output)
            summary.sqliteFiles += 1
            summary.bytes += fileSize(output)
            if file.hasPrefix("databases/") { summary.databases.append(String(file.dropFirst(10).dropLast(7))) }
            progress(summary.bytes, max(expected, summary.bytes))
        }
        // The files' bytes: the blobs the copied catalog names.
        let catalog = partial.appendingPathComponent("files.sqlite")
        if manager.fileExists(atPath: catalog.path) {
            let queue = try DatabaseQueue(path: catalog.path)
            // Uploads in progress are not part of a backup.
            let blobs = try queue.write { db in
                try db.execute(sql: "DELETE FROM uploads")
                return try String.fetchAll(db, sql: "SELECT DISTINCT blob FROM objects")
            }
            try queue.close()
            for blob in blobs {
                let relative = "files/blobs/\(blob.prefix(2))/\(blob)"
                let source = data.appendingPathComponent(relative)
                let target = partial.appendingPathComponent(relative)
                try manager.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                guard manager.fileExists(atPath: source.path) else { throw MissingBlob() }
                if link(source.path, target.path) != 0 {
                    guard errno == EXDEV else {
                        if errno == ENOENT { throw MissingBlob() }
                        throw Failure("cannot copy \(source.path): \(String(cString: strerror(errno)))")
                    }
                    try manager.copyItem(at: source, to: target)
                    try fsyncFile(target)
                }
                summary.blobs += 1
                summary.bytes += fileSize(target)
            }
            for folder in Set(blobs.map { "files/blobs/\($0.prefix(2))" }) { try fsyncDirectory(partial.appendingPathComponent(folder)) }
        }
        for name in keyFiles where manager.fileExists(atPath: data.appendingPathComponent(name).path) {
            let target = partial.appendingPathComponent(name)
            try manager.copyItem(at: data.appendingPathComponent(name), to: target)
            try manager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
            try fsyncFile(target)
        }
        try fsyncDirectory(partial.appendingPathComponent("databases"))
        try fsyncDirectory(partial)
        return summary
    }

    /// `VACUUM INTO` from a read-only connection: one consistent snapshot, compacted, fsynced.
    static func vacuum(_ source: URL, into output: URL) throws {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        do {
            let queue = try DatabaseQueue(path: source.path, configuration: configuration)
            try queue.inDatabase { db in try db.execute(sql: "VACUUM INTO ?", arguments: [output.path]) }
            try queue.close()
        } catch {
            throw Failure("cannot copy \(source.path): \(error)")
        }
        try fsyncFile(output)
    }

    /// Checks every SQLite file of a backup (`PRAGMA integrity_check`) and that the blobs its
    /// catalog names are there.
    @discardableResult
    public static func verify(_ backup: URL) throws -> Summary {
        let manager = FileManager.default
        guard manager.fileExists(atPath: backup.appendingPathComponent("databases").path) else {
            throw Failure("\(backup.path) is not a Hearth backup (it has no databases/ folder)")
        }
        var summary = Summary()
        var configuration = Configuration()
        configuration.readonly = true
        for file in sqliteFiles(in: backup) {
            let path = backup.appendingPathComponent(file).path
            let result: [String]
            do {
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                result = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
                if file == "files.sqlite" {
                    let blobs = try queue.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT blob FROM objects") }
                    for blob in blobs where !manager.fileExists(atPath: backup.appendingPathComponent("files/blobs/\(blob.prefix(2))/\(blob)").path) {
                        throw Failure("\(backup.path) lacks the bytes of a stored file (blob \(blob)); it cannot be restored")
                    }
                    summary.blobs = blobs.count
                }
                try queue.close()
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure("\(path) cannot be read: \(error)")
            }
            guard result == ["ok"] else { throw Failure("\(path) is damaged: \(result.prefix(3).joined(separator: "; "))") }
            summary.sqliteFiles += 1
            summary.bytes += fileSize(URL(fileURLWithPath: path))
            if file.hasPrefix("databases/") { summary.databases.append(String(file.dropFirst(10).dropLast(7))) }
        }
        return summary
    }

    /// Restores a backup into `data`, which no server may be using. An existing data directory is
    /// refused unless `replacing`, and then kept beside it as `<data>.before-restore-<time>`.
    @discardableResult
    public static func restore(_ backup: URL, into data: URL, replacing: Bool, now: Date = Date()) throws -> Summary {
        let manager = FileManager.default
        let summary = try verify(backup)
        var previous: URL?
        // Held until the directories have moved, so no server starts on the old one meanwhile.
        var lock: Int32 = -1
        defer { if lock >= 0 { Glibc.close(lock) } }
        if manager.fileExists(atPath: data.path) {
            let contents = (try? manager.contentsOfDirectory(atPath: data.path)) ?? []
            if !contents.isEmpty {
                guard replacing else {
                    throw Failure("\(data.path) already holds data; pass --replace to restore over it (it is kept as \(data.lastPathComponent).before-restore-…)")
                }
                // No server may hold it: take its lock the way a server does.
                lock = Glibc.open(data.appendingPathComponent("hearth.lock").path, O_RDWR | O_CREAT, 0o644)
                guard lock >= 0 else {
                    throw Failure("cannot lock \(data.path) (\(String(cString: strerror(errno)))); check its permissions")
                }
                guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
                    throw Failure("\(data.path) is in use by a running Hearth server; stop it first, then restore")
                }
                let stamp = Int(now.timeIntervalSince1970)
                previous = URL(fileURLWithPath: "\(data.path).before-restore-\(stamp)")
            }
        }
        let staging = URL(fileURLWithPath: data.path + ".restoring")
        try? manager.removeItem(at: staging)
        try copyTree(backup, to: staging)
        if let previous {
            try manager.moveItem(at: data, to: previous)
        } else if manager.fileExists(atPath: data.path) {
            try manager.removeItem(at: data)
        }
        try manager.moveItem(at: staging, to: data)
        try fsyncDirectory(data.deletingLastPathComponent())
        return summary
    }

    /// Copies a directory tree, every file fsynced (a restore must not share files with its backup).
    private static func copyTree(_ source: URL, to target: URL) throws {
        let manager = FileManager.default
        try manager.createDirectory(at: target, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for name in try manager.contentsOfDirectory(atPath: source.path) {
            let from = source.appendingPathComponent(name)
            let to = target.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            manager.fileExists(atPath: from.path, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                try copyTree(from, to: to)
            } else {
                try manager.copyItem(at: from, to: to)
                try fsyncFile(to)
            }
        }
        try fsyncDirectory(target)
    }

    static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    static func fsyncFile(_ url: URL) throws {
        let fd = Glibc.open(url.path, O_RDONLY)
        guard fd >= 0 else { throw Failure("cannot open \(url.path): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw Failure("cannot sync \(url.path): \(String(cString: strerror(errno)))") }
    }

    static func fsyncDirectory(_ url: URL) throws {
        let fd = Glibc.open(url.path, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { return }
        defer { Glibc.close(fd) }
        _ = fsync(fd)
    }
}
