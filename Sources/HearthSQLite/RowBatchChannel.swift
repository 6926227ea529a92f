import Foundation
import Synchronization

/// Rows packed back to back (`key length, value length, key, value`), to hand many rows to another
/// thread at once.
///
/// For example:
/// ```swift
/// var batch = RowBatch()
/// batch.append(key: key, value: value)
/// batch.forEachRow { key, value in print(key.count, value.count) }
/// ```
struct RowBatch: Sendable {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    mutating func append(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        withUnsafeBytes(of: UInt32(key.count).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(value.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: key)
        bytes.append(contentsOf: value)
    }

    func forEachRow(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { raw in
            let all = raw.assumingMemoryBound(to: UInt8.self)
            var offset = 0
            while offset < raw.count {
                let keyCount = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let valueCount = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
                let keyStart = offset + 8
                let valueStart = keyStart + keyCount
                offset = valueStart + valueCount
                try body(UnsafeBufferPointer(rebasing: all[keyStart..<valueStart]), UnsafeBufferPointer(rebasing: all[valueStart..<offset]))
            }
        }
    }
}

/// Hands row batches from the thread that parses to the thread that writes pages, at most `capacity`
/// batches in flight, so parsing and writing overlap on two cores (`docs/decisions/0011`), and carries
/// the writer's outcome back.
///
/// For example:
/// ```swift
/// let channel = RowBatchChannel(capacity: 4)
/// // writer thread: while let batch = channel.receive() { … }; channel.finishWriting(.success(pages))
/// _ = channel.send(batch); channel.close()
/// let pages = try channel.waitForWriter().get()
/// ```
final class RowBatchChannel: Sendable {
    struct State {
        var batches: [RowBatch] = []
        /// The writer stopped (it failed): sending is pointless.
        var writerStopped = false
        /// The parser failed: the writer should stop without finishing the tree.
        var abandoned = false
        var outcome: Result<Int, any Error>?
    }

    private let state = Mutex(State())
    private let filled = DispatchSemaphore(value: 0)
    private let room: DispatchSemaphore
    private let writerDone = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        room = DispatchSemaphore(value: capacity)
    }

    /// Parser: queues a batch, waiting for room; false once the writer has stopped.
    func send(_ batch: RowBatch) -> Bool {
        room.wait()
        let accepted = state.withLock { state in
            if state.writerStopped { return false }
            state.batches.append(batch)
            return true
        }
        if accepted { filled.signal() } else { room.signal() }
        return accepted
    }

    /// Parser: no more batches (`abandoned`: because parsing failed; the tree must not be finished).
    func close(abandoned: Bool = false) {
        state.withLock { $0.abandoned = abandoned }
        filled.signal()
    }

    /// Writer: the next batch, or nil once the parser closed and every batch was taken.
    func receive() -> RowBatch? {
        filled.wait()
        let batch = state.withLock { state -> RowBatch? in
            state.batches.isEmpty || state.abandoned ? nil : state.batches.removeFirst()
        }
        if batch != nil { room.signal() }
        return batch
    }

    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Writer: its outcome, once; a failure stops the parser at its next batch.
    func finishWriting(_ outcome: Result<Int, any Error>) {
        state.withLock { state in
            state.outcome = outcome
            if case .failure = outcome { state.writerStopped = true }
        }
        room.signal()
        writerDone.signal()
    }

    /// Parser: waits until the writer thread is done and returns its outcome.
    func waitForWriter() -> Result<Int, any Error> {
        writerDone.wait()
        writerDone.signal()
        return state.withLock { $0.outcome } ?? .failure(CancellationError())
    }
}
