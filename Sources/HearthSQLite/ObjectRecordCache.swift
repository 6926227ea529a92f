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
/// Bounded, with second-chance ("clock") eviction: when the cache is full, a hand sweeps its slots,
/// sparing once each entry read since the hand last passed and evicting the first that was not. A
/// set of objects read over and over that fits the cache always hits. (The same bound in two
/// generations lost the unread part of the older one at each turn: the bench's 14,667 objects of
/// 64 KiB, downloaded in turn, missed about 4 reads in 10; `docs/benchmarks.md`.)
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

    private struct Slot {
        var key: Key
        /// nil: the object is known not to exist.
        var object: StoredObject?
        /// Read since the hand last passed: spared once.
        var referenced: Bool
    }

    private struct State {
        /// The entries; a nil slot's entry was dropped.
        var slots: [Slot?] = []
        /// The nil slots, used before the hand evicts anything.
        var free: [Int] = []
        var index: [Key: Int] = [:]
        var hand = 0
        /// How many changes have committed: a fill whose ticket is older is dropped.
        var changes: UInt64 = 0
        /// The commit order of the latest change whose rows were put in the cache.
        var latestCommit: UInt64 = 0
        let capacity: Int

        mutating func get(_ key: Key) -> StoredObject?? {
            guard let slot = index[key] else { return nil }
            slots[slot]!.referenced = true
            return .some(slots[slot]!.object)
        }

        /// Puts an entry in, evicting one if the cache is full.
        mutating func put(_ key: Key, _ object: StoredObject?) {
            if let slot = index[key] {
                slots[slot]!.object = object
                return
            }
            let entry = Slot(key: key, object: object, referenced: false)
            if let slot = free.popLast() {
                slots[slot] = entry
                index[key] = slot
                return
            }
            if slots.count < capacity {
                index[key] = slots.count
                slots.append(entry)
                return
            }
            // At most two sweeps: the first clears every mark it passes.
            while true {
                let slot = hand
                hand = (hand + 1) % slots.count
                let old = slots[slot]!  // no slot is nil while `free` is empty
                if old.referenced {
                    slots[slot]!.referenced = false
                    continue
                }
                index[old.key] = nil
                slots[slot] = entry
                index[key] = slot
                return
            }
        }

        mutating func remove(_ key: Key) {
            guard let slot = index.removeValue(forKey: key) else { return }
            slots[slot] = nil
            free.append(slot)
        }
    }

    private let state: Mutex<State>
    /// The most entries the cache holds.
    let capacity: Int

    init(capacity: Int = 20_000) {
        precondition(capacity > 0)
        self.capacity = capacity
        state = Mutex(State(capacity: capacity))
    }

    /// How many entries the cache holds.
    var count: Int {
        state.withLock { $0.index.count }
    }

    func lookup(bucket: String, name: String) -> Lookup {
        let key = Key(bucket: bucket, name: name)
        return state.withLock { state in
            if let cached = state.get(key) { return .hit(cached) }
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
            for key in keys { state.remove(key) }
        }
    }

    /// After a change committed, with the rows it left (nil: removed): they are what the next reads get
    /// (an upload is often downloaded soon after), and fills that began before it are dropped.
    ///
    /// `commit` is the change's place in the catalog's commit order. Changes that commit one after the
    /// other can reach the cache the other way round (each caller resumes on its own): the rows of a
    /// change that a later one reached the cache before may be stale, so their entries go instead.
    func committed(_ rows: [(key: Key, object: StoredObject?)], commit: UInt64) {
        state.withLock { state in
            state.changes &+= 1
            if commit > state.latestCommit {
                state.latestCommit = commit
                for row in rows { state.put(row.key, row.object) }
            } else {
                for row in rows { state.remove(row.key) }
            }
        }
    }
}
