import HearthStorage
import Synchronization

/// Catalog rows read recently, so a download neither queries `files.sqlite` nor decodes the row's
/// JSON again (measured: the lookup and the decode were a fifth of the server's time serving 64 KiB
/// downloads).
///
/// Every change to the catalog puts the row it committed in the cache (or drops the entry, if the
/// change failed) before it returns, so a read that starts after a change has returned never sees
/// what it replaced. A read that missed fills the cache only if no change at all committed while it
/// read (its ticket): else what it read may already be stale, and the next read looks again.
/// Bounded: emptied when full.
///
/// For example:
/// ```swift
/// let cache = ObjectRecordCache()
/// switch cache.lookup(bucket: "b", name: "a.png") {
/// case .hit(let object): return object
/// case .miss(let ticket):
///     let object = try read()                                     // from the database
///     cache.fill(bucket: "b", name: "a.png", object, ticket: ticket)
///     return object
/// }
/// ```
final class ObjectRecordCache: Sendable {
    struct Key: Hashable {
        var bucket: String
        var name: String
    }

    enum Lookup {
        case hit(StoredObject?)
        /// Not cached: fill with what the database holds, presenting this ticket.
        case miss(ticket: UInt64)
    }

    private struct State {
        /// nil: the object is known not to exist.
        var entries: [Key: StoredObject?] = [:]
        /// How many changes have committed: a fill whose ticket is older is dropped.
        var changes: UInt64 = 0
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    func lookup(bucket: String, name: String) -> Lookup {
        state.withLock { state in
            if let cached = state.entries[Key(bucket: bucket, name: name)] { return .hit(cached) }
            return .miss(ticket: state.changes)
        }
    }

    func fill(bucket: String, name: String, _ object: StoredObject?, ticket: UInt64) {
        state.withLock { state in
            guard state.changes == ticket else { return }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[Key(bucket: bucket, name: name)] = .some(object)
        }
    }

    /// After a change to these objects may have committed (it failed): their entries go, and fills
    /// that began before it are dropped.
    func changed(_ keys: [Key]) {
        state.withLock { state in
            state.changes &+= 1
            for key in keys { state.entries[key] = nil }
        }
    }

    /// After a change committed, with the rows it left (nil: removed), in commit order: they are what
    /// the next reads get (an upload is often downloaded soon after), and fills that began before it
    /// are dropped.
    func committed(_ rows: [(key: Key, object: StoredObject?)]) {
        state.withLock { state in
            state.changes &+= 1
            if state.entries.count + rows.count > capacity { state.entries.removeAll(keepingCapacity: true) }
            for row in rows { state.entries[row.key] = .some(row.object) }
        }
    }
}
