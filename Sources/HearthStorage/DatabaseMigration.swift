import HashTreeCollections
public import HearthCore

/// Copies every database (data, priorities, rules and their history) from one storage to another, one
/// namespace at a time, in commits of a bounded number of rows: `hearth migrate` between a data
/// directory and PostgreSQL, either way.
///
/// It refuses to touch a target that already holds any of the namespaces, unless `replace` is set.
///
/// For example:
/// ```swift
/// let migration = DatabaseMigration(replace: false)
/// let summary = try await migration.run(from: sqlite, to: postgres)
/// print("\(summary.namespaces) databases, \(summary.rows) rows")
/// ```
public struct DatabaseMigration: Sendable {
    /// Overwrite namespaces the target already holds (their data is replaced, their rules history grows).
    public var replace: Bool
    /// Rows per commit, roughly: one top-level child is never split.
    public var batchRows: Int

    public init(replace: Bool = false, batchRows: Int = 50_000) {
        self.replace = replace
        self.batchRows = max(1, batchRows)
    }

    /// Where a migration is.
    public struct Progress: Sendable, Equatable {
        public var namespace: String
        /// 1-based position of the namespace among all.
        public var index: Int
        public var count: Int
        /// Rows of this namespace copied so far, and in all.
        public var rowsDone: Int
        public var rowsTotal: Int

        public init(namespace: String, index: Int, count: Int, rowsDone: Int, rowsTotal: Int) {
            self.namespace = namespace
            self.index = index
            self.count = count
            self.rowsDone = rowsDone
            self.rowsTotal = rowsTotal
        }
    }

    public struct Summary: Sendable, Equatable {
        public var namespaces: Int
        public var rows: Int
        public var rulesVersions: Int

        public init(namespaces: Int, rows: Int, rulesVersions: Int) {
            self.namespaces = namespaces
            self.rows = rows
            self.rulesVersions = rulesVersions
        }
    }

    /// The target already holds some of the namespaces (and `replace` is off).
    public struct TargetNotEmpty: Error, Sendable, CustomStringConvertible {
        public var namespaces: [String]
        public var description: String {
            "The target already holds the database(s) \(namespaces.joined(separator: ", ")); nothing was copied. "
                + "Pass --replace to overwrite them."
        }
    }

    public func run(
        from source: any DatabaseStorage,
        to target: any DatabaseStorage,
        progress: @Sendable (Progress) -> Void = { _ in }
    ) async throws -> Summary {
        let names = try await source.namespaces()
        if !replace {
            var present: [String] = []
            for name in names where try await target.contains(namespace: name) { present.append(name) }
            guard present.isEmpty else { throw TargetNotEmpty(namespaces: present) }
        }
        var summary = Summary(namespaces: 0, rows: 0, rulesVersions: 0)
        for (offset, name) in names.enumerated() {
            let from = try await source.open(namespace: name)
            let to = try await target.open(namespace: name)
            let stored = try await from.load()
            let total = DatabaseMigration.rowCount(stored.root)
            var report = Progress(namespace: name, index: offset + 1, count: names.count, rowsDone: 0, rowsTotal: total)
            progress(report)
            for batch in batches(of: stored.root) {
                try await to.commit(batch.mutations)
                report.rowsDone += batch.rows
                progress(report)
            }
            // The history oldest first, so the versions keep their order; then the current rules, if the
            // history does not end with them (a file from before the history existed).
            let history = try await from.rulesHistory(limit: RulesVersion.kept).reversed()
            for version in history { try await to.saveRules(version.source, time: version.time) }
            if let rules = stored.rulesSource, history.last?.source != rules {
                try await to.saveRules(rules, time: history.last?.time ?? 0)
                summary.rulesVersions += 1
            }
            summary.rulesVersions += history.count
            summary.rows += total
            summary.namespaces += 1
            // Not closed: a storage may hand the same namespace object out again (SQLiteStorage caches them).
        }
        return summary
    }

    struct Batch {
        var mutations: [StorageMutation]
        var rows: Int
    }

    /// The commits that rebuild `root`: the first clears the target; children are grouped up to
    /// ``batchRows`` rows; the root's priority comes last.
    func batches(of root: Node) -> [Batch] {
        guard case .children(let children) = root, !children.entries.isEmpty else {
            return [Batch(mutations: [.replace(.root, root)], rows: DatabaseMigration.rowCount(root))]
        }
        var batches: [Batch] = []
        var current = Batch(mutations: [.replace(.root, .empty)], rows: 0)
        for (key, child) in children.entries {
            let rows = DatabaseMigration.rowCount(child)
            if current.rows > 0, current.rows + rows > batchRows {
                batches.append(current)
                current = Batch(mutations: [], rows: 0)
            }
            current.mutations.append(.replace(DatabasePath(keys: [key]), child))
            current.rows += rows
        }
        if let priority = children.priority {
            current.mutations.append(.setPriority(.root, priority))
            current.rows += 1
        }
        batches.append(current)
        return batches
    }

    /// The rows ``NodeRows`` stores for a node: one per leaf value and one per priority.
    public static func rowCount(_ node: Node) -> Int {
        switch node {
        case .leaf(_, let priority):
            return priority == nil ? 1 : 2
        case .children(let children):
            if children.entries.isEmpty { return 0 }
            var count = children.priority == nil ? 0 : 1
            for (_, child) in children.entries { count += rowCount(child) }
            return count
        }
    }
}
