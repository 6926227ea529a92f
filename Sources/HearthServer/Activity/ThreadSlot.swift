import NIOPosix
import Synchronization

/// A small number for the current thread, handed out in the order threads first ask: per-thread
/// shards (``ActivityShard``) are picked by it without hashing and, for as many threads as there are
/// shards, without two threads sharing one. One thread-specific key serves the whole process.
///
/// For example: `shards[ThreadSlot.current % shards.count]`.
enum ThreadSlot {
    private final class Slot: Sendable {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    private static let slots = ThreadSpecificVariable<Slot>()
    private static let handedOut = Atomic<Int>(0)

    /// This thread's number, from 0.
    static var current: Int {
        if let slot = slots.currentValue { return slot.number }
        let slot = Slot(handedOut.wrappingAdd(1, ordering: .relaxed).oldValue)
        slots.currentValue = slot
        return slot.number
    }
}
