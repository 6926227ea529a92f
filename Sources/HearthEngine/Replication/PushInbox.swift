import HearthAccess
import HearthStorage

/// A follower's bookkeeping for one database's pushed entries: what the owner pushed that the writer has
/// not taken yet, and which committed entries it knows of (wake-ups, lease checks, forwarded writes) that
/// no push has brought, so it reads those from the log only if the push does not come.
///
/// Pure state (no I/O, no clock): ``DatabaseReplica`` keeps it under its lock, the database's writer
/// applies what ``take()`` gives, deciding entry by entry with ``decide(_:applied:)``.
///
/// Why this is safe: an owner pushes an entry only after the fenced commit that appended it to the log
/// succeeded, and a sequence number names one committed entry forever, so a pushed entry *is* the log's
/// entry at that sequence, whoever pushed it (even an owner deposed since). Applying only the entry after
/// the last applied one keeps the tree exactly where applying the log would have it.
///
/// For example:
/// ```swift
/// var inbox = PushInbox()
/// if inbox.receive([LogEntry(sequence: 8, payload: p)]) { /* wake the writer */ }
/// let (entries, overflowed) = inbox.take()
/// for entry in entries where PushInbox.decide(entry.sequence, applied: applied) == .apply { /* … */ }
/// ```
struct PushInbox: Sendable {
    /// What the writer does with a pushed entry.
    enum Decision: Sendable, Equatable {
        /// The next entry of the log: apply it.
        case apply
        /// Applied already (a duplicate, or the log brought it first): drop it.
        case ignore
        /// Entries between the last applied one and this are missing: read them from the log.
        case catchUp
    }

    static func decide(_ sequence: Int64, applied: Int64) -> Decision {
        if sequence <= applied { return .ignore }
        return sequence == applied + 1 ? .apply : .catchUp
    }

    /// Entries waiting for the writer, in arrival order.
    private(set) var entries: [LogEntry] = []
    private(set) var bytes = 0
    /// More arrived than ``limit`` allows: the waiting ones were dropped, the writer reads the log instead.
    private(set) var overflowed = false
    /// The writer has been asked to take the entries, and has not yet.
    private(set) var takeQueued = false
    /// The highest sequence number pushed here.
    private(set) var receivedThrough: Int64 = 0
    /// The highest sequence number known to be committed (not necessarily pushed).
    private(set) var expected: Int64 = 0
    /// ``expected`` when ``overdue(applied:)`` last looked: what a push has had a whole round to bring.
    private var expectedAtLastCheck: Int64 = 0
    let limit: (entries: Int, bytes: Int)

    init(limit: (entries: Int, bytes: Int) = (100_000, 64 * 1024 * 1024)) {
        self.limit = limit
    }

    /// Queues pushed entries. Returns true when the writer must be asked to take them (it has not been
    /// asked since it last took).
    mutating func receive(_ batch: [LogEntry]) -> Bool {
        guard !batch.isEmpty else { return false }
        for entry in batch {
            receivedThrough = max(receivedThrough, entry.sequence)
            expected = max(expected, entry.sequence)
        }
        if !overflowed {
            entries += batch
            bytes += batch.reduce(0) { $0 + $1.payload.utf8.count }
            if entries.count > limit.entries || bytes > limit.bytes {
                // The writer is far behind: keep nothing, it reads the log in pages instead.
                overflowed = true
                entries = []
                bytes = 0
            }
        }
        if takeQueued { return false }
        takeQueued = true
        return true
    }

    /// Hands the waiting entries to the writer, sorted by sequence (pushes from two owners, the one
    /// deposed and the new one, may interleave), and whether some were dropped.
    mutating func take() -> (entries: [LogEntry], overflowed: Bool) {
        let taken = (entries.sorted { $0.sequence < $1.sequence }, overflowed)
        entries = []
        bytes = 0
        overflowed = false
        takeQueued = false
        return taken
    }

    /// Records that `sequence` is committed. Returns true when a push already brought it (nothing to
    /// do); otherwise ``overdue(applied:)`` reports it if it is still missing a round later.
    mutating func expect(_ sequence: Int64) -> Bool {
        expected = max(expected, sequence)
        return receivedThrough >= sequence
    }

    /// Called once per round (a few tens of milliseconds): true when an entry known to be committed a
    /// round ago is not applied, and neither a push still to bring it nor one waiting here for the writer
    /// can apply it, so the writer must read the log. (A pushed entry the writer took but could not
    /// apply, after a gap whose read of the log failed, is waiting for nothing: the log must be read.)
    mutating func overdue(applied: Int64) -> Bool {
        let due = expectedAtLastCheck
        expectedAtLastCheck = expected
        return due > applied && (due > receivedThrough || (entries.isEmpty && !takeQueued && !overflowed))
    }
}
