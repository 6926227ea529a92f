import HearthCore
import HearthStorage

/// Storage mutations as the row operations `hearth_commit` applies: three parallel arrays, in order.
///
/// Kind `d` deletes the row `key`, `r` deletes the rows in `[key, value)`, `u` upserts `(key, value)`,
/// and `i` inserts a row that cannot exist: one of the rows of a `replace`, whose key and range were
/// deleted just before (a plain `INSERT` costs about 40% less than `INSERT … ON CONFLICT`).
/// Between two deletes each key appears once (a later write of the same key replaces the earlier one in
/// place), since one `INSERT` statement cannot touch a row twice.
///
/// For example:
/// ```swift
/// var operations = RowOperations()
/// operations.append([.replace(try DatabasePath("/a"), .leaf(.number(1)))])
/// // kinds == ["d", "r", "i"]
/// ```
struct RowOperations: Sendable, Equatable {
    var kinds: [String] = []
    var keys: [String] = []
    var values: [String] = []
    /// Where each key of the current run of upserts is, to fold repeats.
    private var runIndex: [String: Int] = [:]

    init() {}

    init(_ mutations: [StorageMutation]) {
        append(mutations)
    }

    var count: Int { kinds.count }

    mutating func append(_ mutations: [StorageMutation]) {
        for mutation in mutations {
            switch mutation {
            case .replace(let path, let node):
                delete(NodeRows.key(path))
                let range = NodeRows.descendantRange(path)
                deleteRange(range.lower, range.upper)
                NodeRows.forEachRow(of: node, at: path) { key, value in write(key, value, kind: "i") }
            case .removeLeafValue(let path):
                delete(NodeRows.key(path))
            case .setPriority(let path, let priority):
                if let priority {
                    write(NodeRows.priorityKey(path), NodeRows.encode(priority.primitive), kind: "u")
                } else {
                    delete(NodeRows.priorityKey(path))
                }
            }
        }
    }

    mutating func delete(_ key: String) {
        runIndex.removeAll(keepingCapacity: true)
        kinds.append("d")
        keys.append(key)
        values.append("")
    }

    mutating func deleteRange(_ lower: String, _ upper: String) {
        runIndex.removeAll(keepingCapacity: true)
        kinds.append("r")
        keys.append(lower)
        values.append(upper)
    }

    /// Adds an upsert (`u`) or insert (`i`) of the row, or folds it into the earlier write of the same
    /// key since the last delete (which keeps its kind: an `i` row still cannot exist before the run).
    mutating func write(_ key: String, _ value: String, kind: String) {
        if let index = runIndex[key] {
            values[index] = value
            return
        }
        runIndex[key] = keys.count
        kinds.append(kind)
        keys.append(key)
        values.append(value)
    }

    static func == (a: RowOperations, b: RowOperations) -> Bool {
        a.kinds == b.kinds && a.keys == b.keys && a.values == b.values
    }
}
