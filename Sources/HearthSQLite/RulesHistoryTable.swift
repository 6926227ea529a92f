import GRDB
import HearthStorage

/// The saved versions of a rules document in one table (`version`, `source`, `time`): the database
/// rules of a namespace file, and the storage rules of the files catalog.
enum RulesHistoryTable {
    /// Creates the table; a file from before the history existed starts it with its current rules
    /// (time 0: saved before the history began).
    static func create(_ db: GRDB.Database, table: String, seedFrom currentQuery: String) throws {
        guard try !db.tableExists(table) else { return }
        try db.execute(sql: "CREATE TABLE \(table) (version INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL, time INTEGER NOT NULL)")
        if let current = try String.fetchOne(db, sql: currentQuery) {
            try db.execute(sql: "INSERT INTO \(table) (source, time) VALUES (?, 0)", arguments: [current])
        }
    }

    /// Drops the versions beyond the newest ``RulesVersion/kept``.
    static func trim(_ db: GRDB.Database, table: String) throws {
        try db.execute(
            sql: "DELETE FROM \(table) WHERE version <= (SELECT MAX(version) FROM \(table)) - ?", arguments: [RulesVersion.kept]
        )
    }

    static func fetch(_ db: GRDB.Database, table: String, limit: Int) throws -> [RulesVersion] {
        try Row.fetchAll(db, sql: "SELECT version, source, time FROM \(table) ORDER BY version DESC LIMIT ?", arguments: [limit]).map {
            RulesVersion(version: $0["version"], source: $0["source"], time: $0["time"])
        }
    }
}
