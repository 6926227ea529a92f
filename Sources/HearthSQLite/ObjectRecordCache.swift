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
/// Bounded, in two generations: when the current one is full it becomes the previous one (the older
/// previous one is dropped), and a hit in the previous one moves the entry back to the current one. A
/// set of objects read over and over that is larger than one generation still hits (emptying the
/// whole cache when full missed every read of such a set: measured with 12,000–18,000 objects of
/// 64 KiB downloaded in turn, `docs/benchmarks.md`).
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
        var current: [Key: StoredObject?] = [:]
        /// The generation before `current`; `current` takes precedence.
        var previous: [Key: StoredObject?] = [:]
        /// How many changes have committed: a fill whose ticket is older is dropped.
        var changes: UInt64 = 0
        let capacity: Int

        /// Puts an entry in the current generation, which becomes the previous one first if it is full.
        mutating func put(_ key: Key, _ object: StoredObject?) {
            if current.count >= capacity, current[key] == nil {
                previous = current
                current = [:]
                current.reserveCapacity(capacity)
            }
            current[key] = .some(object)
        }
    }

    private let state: Mutex<State>
    /// The most entries one generation holds; the cache holds at most twice as many.
    let capacity: Int

    init(capacity: Int = 10_000) {
        self.capacity = capacity
        state = Mutex(State(capacity: capacity))
    }

    /// How many entries the cache holds (both generations; an entry in both counts twice).
    var count: Int {
        state.withLock { $0.current.count + $0.previous.count }
    }

    func lookup(bucket: String, name: String) -> Lookup {
        let key = Key(bucket: bucket, name: name)
        return state.withLock { state in
            if let cached = state.current[key] { return .hit(cached) }
            if let cached = state.previous.removeValue(forKey: key) {
                state.put(key, cached)
                return .hit(cached)
            }
            return .miss(ticket: state.changes)
        }
    }

    func fill(bucket: String, name: String, _ object: StoredObject?, ticket: UInt64) {
        state.withLock { state in
            guard state.changes == ticket else { return }
            state.put(Key(bucket: bucket, name: name), object)
        }
    }

    /// After a change to these objects may have committed (it failed): their entries go, and fills
    /// that began before it are dropped.
    func changed(_ keys: [Key]) {
        state.withLock { state in
            state.changes &+= 1
            for key in keys {
                state.current[key] = nil
                state.previous[key] = nil
            }
        }
    }

    /// After a change committed, with the rows it left (nil: removed), in commit order: they are what
    /// the next reads get (an upload is often downloaded soon after), and fills that began before it
    /// are dropped.
    func committed(_ rows: [(key: Key, object: StoredObject?)]) {
        state.withLock { state in
            state.changes &+= 1
            for row in rows {
                state.previous[row.key] = nil
                state.put(row.key, row.object)
            }
        }
    }
}
