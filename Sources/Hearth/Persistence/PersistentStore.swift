import Foundation
import GRDB
import HearthCore
import HearthProtocol

/// What persistence keeps on disk for one database, in one SQLite file (`hearth.sqlite` in the
/// database's folder): the writes the server has not confirmed, and the server data of locations the
/// client listened to, so an app that starts offline shows its last data and sends its queued writes
/// once it is back.
///
/// - A write is inserted before its local events fire and deleted when the server answers (or it is
///   purged). Opening the store keeps the unconfirmed ones and renumbers them from 1, the ids the new
///   process gives them.
/// - Cached data is stored per location as export JSON (priorities kept). Saving a location replaces
///   whatever was cached at or below it. Beyond the size limit the least recently saved locations that
///   no listener holds are evicted.
/// - Filtered queries' windows (tracked queries) are stored per location and query (the wire query
///   object), served again only to that exact query, and evicted like locations.
/// - WAL with `synchronous=NORMAL`: a commit survives the process being killed, not a power loss
///   (the official SDKs' caches make the same trade; the server is where durability is promised).
///
/// For example:
/// ```swift
/// let store = try PersistentStore(directory: folder)
/// for write in store.recoveredWrites { print(write.action, write.body.jsonText) }
/// store.append(.init(id: 3, action: "p", body: body))
/// store.confirm(id: 3)
/// ```
final class PersistentStore: Sendable {
    struct Write: Sendable, Equatable {
        var id: Int
        /// The wire action: `p` (set) or `m` (update).
        var action: String
        /// The wire body, as sent: `{"p": path, "d": data}`.
        var body: JSONValue
    }

    /// The writes the previous process left unconfirmed, in order, numbered from 1.
    let recoveredWrites: [Write]
    /// The cached server data, outermost locations only.
    let recoveredCache: [(path: DatabasePath, node: Node)]
    /// The cached windows of filtered queries.
    let recoveredWindows: [(spec: QuerySpec, node: Node)]
    let file: URL
    private let queue: DatabaseQueue

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        file = directory.appendingPathComponent("hearth.sqlite")
        var configuration = Configuration()
        configuration.label = "hearth-persistence"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        queue = try DatabaseQueue(path: file.path, configuration: configuration)
        (recoveredWrites, recoveredCache, recoveredWindows) = try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS pending_writes (id INTEGER PRIMARY KEY, action TEXT NOT NULL, body TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS server_cache (
                    path TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL, bytes INTEGER NOT NULL, saved INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS query_cache (
                    path TEXT NOT NULL, query TEXT NOT NULL, data TEXT NOT NULL, bytes INTEGER NOT NULL, saved INTEGER NOT NULL,
                    PRIMARY KEY (path, query)
                ) WITHOUT ROWID;
                """)
            var writes: [Write] = []
            for row in try Row.fetchAll(db, sql: "SELECT action, body FROM pending_writes ORDER BY id") {
                let text: String = row["body"]
                guard let body = try? JSONValue(parsing: text) else { continue }
                writes.append(Write(id: writes.count + 1, action: row["action"], body: body))
            }
            try db.execute(sql: "DELETE FROM pending_writes")
            for write in writes {
                try db.execute(
                    sql: "INSERT INTO pending_writes (id, action, body) VALUES (?, ?, ?)",
                    arguments: [write.id, write.action, write.body.jsonText]
                )
            }
            var cache: [(path: DatabasePath, node: Node)] = []
            for row in try Row.fetchAll(db, sql: "SELECT path, data FROM server_cache ORDER BY length(path)") {
                let pathText: String = row["path"]
                let dataText: String = row["data"]
                guard let path = try? DatabasePath(pathText), !cache.contains(where: { $0.path.contains(path) }),
                      let json = try? JSONValue(parsing: dataText), let node = try? Node(json: json) else { continue }
                cache.append((path, node))
            }
            var windows: [(spec: QuerySpec, node: Node)] = []
            for row in try Row.fetchAll(db, sql: "SELECT path, query, data FROM query_cache") {
                let pathText: String = row["path"]
                let queryText: String = row["query"]
                let dataText: String = row["data"]
                guard let path = try? DatabasePath(pathText), let queryJSON = try? JSONValue(parsing: queryText),
                      let query = try? WireQuery(json: queryJSON).query,
                      let json = try? JSONValue(parsing: dataText), let node = try? Node(json: json) else { continue }
                windows.append((QuerySpec(path: path, query: query), node))
            }
            return (writes, cache, windows)
        }
    }

    /// Records a write before it takes effect.
    func append(_ write: Write) {
        // A write that cannot be recorded still goes to the server; only its survival of a restart is lost.
        try? queue.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO pending_writes (id, action, body) VALUES (?, ?, ?)",
                arguments: [write.id, write.action, write.body.jsonText]
            )
        }
    }

    /// Forgets a write the server answered (or that was purged).
    func confirm(id: Int) {
        try? queue.write { db in try db.execute(sql: "DELETE FROM pending_writes WHERE id = ?", arguments: [id]) }
    }

    /// The unconfirmed writes now on disk (for tests and tools).
    func pendingWrites() -> [Write] {
        (try? queue.read { db in
            try Row.fetchAll(db, sql: "SELECT id, action, body FROM pending_writes ORDER BY id").compactMap { row -> Write? in
                let text: String = row["body"]
                guard let body = try? JSONValue(parsing: text) else { return nil }
                return Write(id: row["id"], action: row["action"], body: body)
            }
        }) ?? []
    }

    /// Saves the server data of complete locations (each replacing what was cached at or below it)
    /// and the windows of filtered queries, then evicts the least recently saved entries outside
    /// `active` until the cache fits `limit`.
    func saveCache(
        _ locations: [(path: DatabasePath, node: Node)],
        windows: [(spec: QuerySpec, node: Node)] = [],
        savedAt now: Int,
        limit: Int,
        active: Set<DatabasePath>
    ) {
        let rows = locations.map { (path: $0.path.description, data: $0.node.jsonString(format: .export)) }
        let windowRows = windows.compactMap { window -> (path: String, query: String, data: String)? in
            guard let query = ClientWire.queryObject(window.spec.query) else { return nil }
            return (window.spec.path.description, query.jsonText, window.node.jsonString(format: .export))
        }
        try? queue.write { db in
            for row in windowRows {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO query_cache (path, query, data, bytes, saved) VALUES (?, ?, ?, ?, ?)",
                    arguments: [row.path, row.query, row.data, row.data.utf8.count, now]
                )
            }
            for row in rows {
                let prefix = row.path == "/" ? "/" : row.path + "/"
                try db.execute(
                    sql: "DELETE FROM server_cache WHERE path = ? OR substr(path, 1, ?) = ?",
                    arguments: [row.path, prefix.utf8.count, prefix]
                )
                try db.execute(
                    sql: "INSERT INTO server_cache (path, data, bytes, saved) VALUES (?, ?, ?, ?)",
                    arguments: [row.path, row.data, row.data.utf8.count, now]
                )
            }
            var total = try Int.fetchOne(
                db, sql: "SELECT (SELECT COALESCE(SUM(bytes), 0) FROM server_cache) + (SELECT COALESCE(SUM(bytes), 0) FROM query_cache)"
            ) ?? 0
            guard total > limit else { return }
            let entries = try Row.fetchAll(db, sql: """
                SELECT path, NULL AS query, bytes, saved FROM server_cache
                UNION ALL SELECT path, query, bytes, saved FROM query_cache
                ORDER BY saved, path
                """)
            for row in entries where total > limit {
                let path: String = row["path"]
                let query: String? = row["query"]
                if let location = try? DatabasePath(path), active.contains(where: { $0.contains(location) || location.contains($0) }) {
                    continue
                }
                if let query {
                    try db.execute(sql: "DELETE FROM query_cache WHERE path = ? AND query = ?", arguments: [path, query])
                } else {
                    try db.execute(sql: "DELETE FROM server_cache WHERE path = ?", arguments: [path])
                }
                total -= row["bytes"] as Int
            }
        }
    }

    /// The filtered queries cached now, as `path query` (for tests and tools).
    func cachedWindows() -> Set<String> {
        (try? queue.read { db in
            Set(try Row.fetchAll(db, sql: "SELECT path, query FROM query_cache").map { row in
                let path: String = row["path"]
                let query: String = row["query"]
                return "\(path) \(query)"
            })
        }) ?? []
    }

    /// The locations cached now and their sizes in bytes (for tests and tools).
    func cachedLocations() -> [String: Int] {
        (try? queue.read { db in
            var result: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT path, bytes FROM server_cache") {
                let path: String = row["path"]
                result[path] = row["bytes"]
            }
            return result
        }) ?? [:]
    }
}
