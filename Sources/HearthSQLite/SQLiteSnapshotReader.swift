import Foundation
import GRDBSQLite
import Synchronization
public import HearthCore
import HearthStorage

#if canImport(Glibc)
import Glibc
#endif

/// Reads a namespace's tree straight from its SQLite file, as it was when the reader opened: a read
/// transaction holds WAL's snapshot for the reader's whole life, so writes made after it (once the
/// database has loaded) never show through. It serves reads while the database loads after a restart
/// (`docs/decisions/0012-compact-tree-and-warm-start.md`); it closes when the last node it handed out
/// is gone.
///
/// A node with at most `wholeNodeRows` rows (2 or more) is read whole; a larger one comes back with its children
/// left in the file (``StoredChildren``), listed with one index seek per child.
///
/// For example:
/// ```swift
/// let reader = try SQLiteSnapshotReader(file: url)
/// let root = reader.node(at: .root)          // big children stay in the file
/// ```
public final class SQLiteSnapshotReader: StoredTreeSource {
    /// One connection, used by one caller at a time.
    final class Connection {
        let handle: OpaquePointer
        let range: OpaquePointer
        let firstKey: OpaquePointer
        let one: OpaquePointer

        init(handle: OpaquePointer) throws {
            self.handle = handle
            range = try Connection.prepare(handle, "SELECT path, value FROM nodes WHERE path >= ?1 AND path < ?2 ORDER BY path LIMIT ?3")
            firstKey = try Connection.prepare(handle, "SELECT path FROM nodes WHERE path >= ?1 AND path < ?2 ORDER BY path LIMIT 1")
            one = try Connection.prepare(handle, "SELECT value FROM nodes WHERE path = ?1")
        }

        static func prepare(_ handle: OpaquePointer, _ sql: String) throws -> OpaquePointer {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw DatabaseStorageError(.corrupt, "Cannot read the database: \(String(cString: sqlite3_errmsg(handle)))")
            }
            return statement
        }

        deinit {
            for statement in [range, firstKey, one] { sqlite3_finalize(statement) }
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            sqlite3_close_v2(handle)
        }
    }

    let connection: Mutex<Connection>
    let wholeNodeRows: Int
    public let file: URL

    /// Nodes up to this many rows are read whole: a range scan of that many rows costs about what
    /// listing a node's children one seek at a time does.
    public static let defaultWholeNodeRows = 2048

    /// Opens `file` read-only and starts the snapshot.
    public init(file: URL, wholeNodeRows: Int = defaultWholeNodeRows) throws {
        self.file = file
        // A leaf has at most two rows (its value and its priority): more rows than this always mean children.
        self.wholeNodeRows = max(2, wholeNodeRows)
        var handle: OpaquePointer?
        guard sqlite3_open_v2(file.path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            if let handle { sqlite3_close_v2(handle) }
            throw DatabaseStorageError(.unavailable, "Cannot open \(file.path) for reading")
        }
        sqlite3_busy_timeout(handle, 5000)
        // A read transaction takes its snapshot at its first read, which is now.
        guard sqlite3_exec(handle, "BEGIN; SELECT count(*) FROM (SELECT 1 FROM nodes LIMIT 1)", nil, nil, nil) == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(handle))
            sqlite3_close_v2(handle)
            throw DatabaseStorageError(.unavailable, "Cannot read \(file.path): \(message)")
        }
        connection = Mutex(try Connection(handle: handle))
    }

    // MARK: StoredTreeSource

    public func node(at path: DatabasePath) -> Node {
        let prefix = Array(NodeRows.key(path).utf8)
        return connection.withLock { connection in
            let statement = connection.range
            defer { sqlite3_reset(statement) }
            bind(statement, 1, prefix)
            bind(statement, 2, prefix + [0x02])
            sqlite3_bind_int64(statement, 3, Int64(wholeNodeRows + 1))
            var builder = TreeBuilder()
            var rows = 0
            while true {
                let code = sqlite3_step(statement)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else { fail(connection, "reading \(path)") }
                rows += 1
                if rows > wholeNodeRows {
                    // Too big to read whole: its children stay in the file.
                    let priority = readPriority(connection, prefix)
                    return .children(Node.Children(entries: ChildMap(stored: StoredChildren(source: self, path: path)), priority: priority))
                }
                let key = column(statement, 0)
                do {
                    try builder.add(
                        key: UnsafeBufferPointer(rebasing: key[prefix.count...]),
                        value: column(statement, 1)
                    )
                } catch {
                    fail(connection, "reading \(path): \(error)")
                }
            }
            return builder.finish()
        }
    }

    public func children(of path: DatabasePath, after: Key?, limit: Int) -> [(key: Key, value: Node)] {
        var keys: [Key] = []
        let prefix = Array(NodeRows.key(path).utf8)
        connection.withLock { connection in
            var lower = prefix + [0x01]
            if let after { lower += Array(after.string.utf8) + [0x02] }
            while keys.count < limit, let key = nextChild(connection, prefix: prefix, from: &lower) { keys.append(key) }
        }
        return keys.map { (key: $0, value: node(at: path.child($0))) }
    }

    public func childCount(of path: DatabasePath, atMost limit: Int) -> Int {
        let prefix = Array(NodeRows.key(path).utf8)
        return connection.withLock { connection in
            var lower = prefix + [0x01]
            var count = 0
            while count < limit, nextChild(connection, prefix: prefix, from: &lower) != nil { count += 1 }
            return count
        }
    }

    // MARK: Reading

    /// The first child key of the node `prefix` at or after the row key `lower`, moving `lower` past
    /// that child's rows (one index seek per child). Skips the node's own priority row.
    func nextChild(_ connection: Connection, prefix: [UInt8], from lower: inout [UInt8]) -> Key? {
        let statement = connection.firstKey
        while true {
            defer { sqlite3_reset(statement) }
            bind(statement, 1, lower)
            bind(statement, 2, prefix + [0x02])
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return nil }
            guard code == SQLITE_ROW else { fail(connection, "listing children") }
            let row = column(statement, 0)
            // row = prefix 0x01 <child key> [0x01 …]
            let start = prefix.count + 1
            if start < row.count, row[start] == 0x01 {
                // The node's priority row (prefix 0x01 0x01): not a child.
                lower = Array(row) + [0x00]
                continue
            }
            var end = start
            while end < row.count, row[end] != 0x01 { end += 1 }
            let name = Array(row[start..<end])
            lower = prefix + [0x01] + name + [0x02]
            return Key(String(decoding: name, as: UTF8.self))
        }
    }

    func readPriority(_ connection: Connection, _ prefix: [UInt8]) -> Priority? {
        let statement = connection.one
        defer { sqlite3_reset(statement) }
        bind(statement, 1, prefix + [0x01, 0x01])
        guard sqlite3_step(statement) == SQLITE_ROW else { return nil }
        var parser = JSONParser(UnsafeRawBufferPointer(column(statement, 0)))
        switch try? parser.parseDocument() {
        case .number(let n)?: return .number(n)
        case .string(let s)?: return .string(s)
        default: return nil
        }
    }

    func bind(_ statement: OpaquePointer, _ index: Int32, _ bytes: [UInt8]) {
        SQLiteNamespaceStorage.bind(statement, index, bytes)
    }

    func column(_ statement: OpaquePointer, _ index: Int32) -> UnsafeBufferPointer<UInt8> {
        SQLiteNamespaceStorage.column(statement, index)
    }

    /// A read of a file this process opened a moment ago failed: the file is damaged or gone, and there
    /// is no answer to give that would not be wrong.
    func fail(_ connection: Connection, _ what: String) -> Never {
        fatalError("Cannot read \(file.path) (\(what)): \(String(cString: sqlite3_errmsg(connection.handle)))")
    }
}
