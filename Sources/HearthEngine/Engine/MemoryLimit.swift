/// Runs databases mostly from their files, within a memory budget: a database's tree is read from its
/// SQLite file on demand (`StoredChildren`), the children a write changes are kept in memory beside it,
/// and when the process holds more than ``bytes`` the writer drops all of that and starts again from
/// the file, which by then holds every change (decision 3 of
/// `docs/decisions/0012-compact-tree-and-warm-start.md`).
///
/// For example:
/// ```swift
/// var configuration = EngineConfiguration()
/// configuration.memoryLimit = MemoryLimit(bytes: 1 << 30)   // hearth serve --memory-limit 1GB
/// ```
public struct MemoryLimit: Sendable {
    /// The process's resident memory above which a database drops what it holds in memory.
    public var bytes: Int
    /// How often, at most, the writer measures the process's memory (after a batch of writes).
    public var checkInterval: Duration = .milliseconds(250)
    /// A database starts again from its file at least this often while it is written to, so the read
    /// snapshot under its tree never holds its file's write-ahead log for longer: while a reader holds
    /// it, SQLite cannot checkpoint and restart the log, and every commit and read pays for its growth
    /// (at 30 s, 2 GB served at 0.6× the resident engine's writes/s; at 1 s, about 1×: docs/benchmarks.md).
    public var refreshInterval: Duration = .seconds(1)

    public init(bytes: Int) {
        self.bytes = bytes
    }
}

/// Decides, after each committed batch, whether a database under a ``MemoryLimit`` starts again from
/// its file. Pure: the caller gives it the time and a way to measure memory.
struct ResidencyTracker {
    let limit: MemoryLimit
    private var lastCheck: ContinuousClock.Instant
    private var lastRefresh: ContinuousClock.Instant
    private var warnedBelowBaseline = false

    init(limit: MemoryLimit, now: ContinuousClock.Instant) {
        self.limit = limit
        lastCheck = now
        lastRefresh = now
    }

    /// A batch changed the tree; true when the tree should be dropped now. `residentBytes` is only
    /// called when it is time to measure.
    mutating func committed(now: ContinuousClock.Instant, residentBytes: () -> Int) -> Bool {
        if now - lastRefresh >= limit.refreshInterval { return true }
        guard now - lastCheck >= limit.checkInterval else { return false }
        lastCheck = now
        return residentBytes() > limit.bytes
    }

    /// The tree was dropped and read again from the file. Returns the memory still held when that is
    /// over the limit for the first time: the limit is below what the server needs besides the data, and
    /// the operator should hear so once.
    mutating func refreshed(now: ContinuousClock.Instant, residentBytes: () -> Int) -> Int? {
        lastRefresh = now
        lastCheck = now
        guard !warnedBelowBaseline else { return nil }
        let held = residentBytes()
        guard held > limit.bytes else { return nil }
        warnedBelowBaseline = true
        return held
    }
}
