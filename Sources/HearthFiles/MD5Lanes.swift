import CHearthFiles
public import NIOCore
import NIOPosix
import Synchronization

/// MD5 of whole bodies, many at once: one thread runs up to 16 bodies' MD5 side by side in the lanes
/// of AVX-512 (`hearth_md5_lanes`), about seven times the bytes a second of one MD5, a serial chain
/// that no core runs faster than 0.7–0.9 GB/s. Cloud Storage answers every upload with its MD5, and
/// 1 MiB uploads spent a third of the server's CPU on it (`docs/decisions/0022-md5-in-lanes.md`).
///
/// A lane runs at about half the speed of one MD5 on its own, and a run of the lanes costs the same
/// however few are busy: they pay off from three bodies at once. Bodies join free lanes as they come,
/// between runs of at most ``blocksPerRun`` blocks, and a body alone runs the plain C compression.
/// (Holding a body back for company, up to 1 ms, gained nothing measurable: docs/benchmarks.md.)
///
/// For example:
/// ```swift
/// if MD5Lanes.isAccelerated {
///     let md5 = await MD5Lanes.shared.digest(of: [ByteBuffer(string: "hello")])  // 16 bytes
/// }
/// ```
public final class MD5Lanes: Sendable {
    /// Whether this CPU runs the lanes at once; elsewhere callers had better hash on their own threads.
    public static let isAccelerated = hearth_md5_lanes_available() != 0

    public static let shared = MD5Lanes()

    /// Blocks (64 bytes) per run of the lanes: 16 KiB a lane, about 50 µs, before waiting bodies join.
    static let blocksPerRun = 256

    fileprivate struct Job: Sendable {
        let chunks: [ByteBuffer]
        let continuation: CheckedContinuation<[UInt8], Never>
    }

    private struct Queue {
        var waiting: [Job] = []
        var draining = false
    }

    private let queue = Mutex(Queue())
    private let thread: NIOThreadPool

    /// Whether this instance runs AVX-512's lanes; false (the tests' choice) runs the bodies one after
    /// another on the same thread.
    let usesLanes: Bool

    init(usesLanes: Bool = MD5Lanes.isAccelerated) {
        self.usesLanes = usesLanes && MD5Lanes.isAccelerated
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    deinit { thread.shutdownGracefully { _ in } }

    /// The MD5 of the bytes of `chunks`, one after another (16 bytes).
    public func digest(of chunks: [ByteBuffer]) async -> [UInt8] {
        await withCheckedContinuation { continuation in
            let start = queue.withLock { queue in
                queue.waiting.append(Job(chunks: chunks, continuation: continuation))
                defer { queue.draining = true }
                return !queue.draining
            }
            if start { thread.submit { _ in self.drain() } }
        }
    }

    /// Hashes until no body is left, taking waiting bodies into free lanes between runs.
    private func drain() {
        var lanes = [BodyLane?](repeating: nil, count: 16)
        // Lane i's state: words i, 16 + i, 32 + i, 48 + i (A, B, C, D), as `hearth_md5_lanes` takes it.
        var states = [UInt32](repeating: 0, count: 64)
        var pointers = [UnsafePointer<UInt8>?](repeating: nil, count: 16)
        while true {
            let free = lanes.indices.filter { lanes[$0] == nil }
            let joining: [Job] = queue.withLock { queue in
                let taken = Array(queue.waiting.prefix(free.count))
                queue.waiting.removeFirst(taken.count)
                if taken.isEmpty && free.count == lanes.count { queue.draining = false }
                return taken
            }
            for (index, job) in zip(free, joining) {
                lanes[index] = BodyLane(job)
                for word in 0..<4 { states[16 * word + index] = BodyLane.initialState[word] }
            }
            let busy = lanes.indices.filter { lanes[$0] != nil }
            guard !busy.isEmpty else { return }
            var count = Self.blocksPerRun
            for index in busy { count = min(count, lanes[index]!.prepare()) }
            if busy.count == 1 || !usesLanes {
                // A body alone, or an instance told not to use the lanes (a test's, as on a CPU without
                // AVX-512): one body after another with the plain compression.
                for index in busy {
                    var one = (0..<4).map { states[16 * $0 + index] }
                    hearth_md5_compress(&one, lanes[index]!.blocks, count)
                    for word in 0..<4 { states[16 * word + index] = one[word] }
                }
            } else {
                for index in 0..<16 { pointers[index] = lanes[index]?.blocks }
                states.withUnsafeMutableBufferPointer { state in
                    pointers.withUnsafeBufferPointer { hearth_md5_lanes(state.baseAddress!, $0.baseAddress!, count) }
                }
            }
            for index in busy where lanes[index]!.advance(count) {
                let digest = (0..<4).flatMap { word in withUnsafeBytes(of: states[16 * word + index].littleEndian, Array.init) }
                lanes[index]!.job.continuation.resume(returning: digest)
                lanes[index] = nil
            }
        }
    }
}

/// One body in a lane: where its next whole blocks are, and the blocks that straddle two chunks or end
/// it (MD5's padding), copied into a buffer of its own.
private final class BodyLane {
    static let initialState: [UInt32] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476]

    let job: MD5Lanes.Job
    /// Each chunk's bytes, used past `withUnsafeReadableBytes`: the job holds the buffers until the
    /// digest is done, and a `ByteBuffer`'s storage neither moves nor changes while held (a writer to
    /// another copy of it gets storage of its own).
    private let chunks: [UnsafeRawBufferPointer]
    private let length: Int
    private var chunk = 0
    private var offset = 0
    private var left: Int
    /// Blocks copied out of the chunks: where one straddles two chunks, up to ``scratchBlocks`` from
    /// there on (a run of the lanes takes as many blocks as the busy lane with the fewest has at hand,
    /// so one straddling block would make a run of one for all); and the last block or two, padded.
    private let scratch = UnsafeMutableRawPointer.allocate(byteCount: 64 * BodyLane.scratchBlocks, alignment: 64)
    static let scratchBlocks = 64
    /// The blocks the next run reads, and how many are left of them.
    private(set) var blocks: UnsafePointer<UInt8>?
    private var blocksLeft = 0
    private var inChunk = false
    private var ending = false

    init(_ job: MD5Lanes.Job) {
        self.job = job
        chunks = job.chunks.map { buffer in buffer.withUnsafeReadableBytes { $0 } }
        length = chunks.reduce(0) { $0 + $1.count }
        left = length
    }

    deinit { scratch.deallocate() }

    /// Sets ``blocks`` to the next blocks, and returns how many follow one another there (at least one).
    func prepare() -> Int {
        if blocksLeft > 0 { return blocksLeft }
        while chunk < chunks.count && offset == chunks[chunk].count {
            chunk += 1
            offset = 0
        }
        if chunk < chunks.count, chunks[chunk].count - offset >= 64 {
            blocks = UnsafePointer(chunks[chunk].baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self))
            blocksLeft = (chunks[chunk].count - offset) / 64
            inChunk = true
            return blocksLeft
        }
        inChunk = false
        blocks = UnsafePointer(scratch.assumingMemoryBound(to: UInt8.self))
        if left >= 64 {
            // A block across the end of one chunk and the start of the next, and whole blocks after it.
            blocksLeft = min(left / 64, Self.scratchBlocks)
            copy(64 * blocksLeft)
            return blocksLeft
        }
        // The last bytes, then 0x80, zeros and the length in bits, to a whole block or two.
        let tail = left
        copy(tail)
        blocksLeft = tail + 9 <= 64 ? 1 : 2
        let end = 64 * blocksLeft
        scratch.storeBytes(of: 0x80, toByteOffset: tail, as: UInt8.self)
        (scratch + tail + 1).initializeMemory(as: UInt8.self, repeating: 0, count: end - 8 - tail - 1)
        scratch.storeBytes(of: (UInt64(length) &* 8).littleEndian, toByteOffset: end - 8, as: UInt64.self)
        ending = true
        return blocksLeft
    }

    /// Moves past `count` blocks of ``blocks``; true once the body's last block is done.
    func advance(_ count: Int) -> Bool {
        blocksLeft -= count
        blocks = blocks.map { $0 + 64 * count }
        if inChunk {
            offset += 64 * count
            left -= 64 * count
        }
        return blocksLeft == 0 && ending
    }

    /// Copies the next `count` bytes of the chunks into the scratch buffer.
    private func copy(_ count: Int) {
        var copied = 0
        while copied < count {
            while offset == chunks[chunk].count {
                chunk += 1
                offset = 0
            }
            let step = min(count - copied, chunks[chunk].count - offset)
            (scratch + copied).copyMemory(from: chunks[chunk].baseAddress! + offset, byteCount: step)
            copied += step
            offset += step
        }
        left -= count
    }
}
