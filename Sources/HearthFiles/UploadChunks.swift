import NIOCore

/// The chunks of an upload held until they are written: large ones as they arrived, small ones
/// copied together into buffers of their own.
///
/// A chunk from the socket is a slice of the read buffer it arrived in, and keeps all of that buffer
/// alive. Holding large chunks as they are saves copying every byte of an upload; copying the small
/// ones bounds what a body trickled in tiny reads can hold: at most about twice its bytes, as the
/// doubling buffer this replaces could.
///
/// For example:
/// ```swift
/// var chunks = UploadChunks()
/// chunks.append(ByteBuffer(repeating: 1, count: 64 * 1024))  // kept as it is
/// chunks.append(ByteBuffer(repeating: 2, count: 10))         // copied into a buffer of its own
/// #expect(chunks.byteCount == 64 * 1024 + 10 && chunks.buffers.count == 2)
/// ```
struct UploadChunks: Sendable {
    /// Chunks at least this large are kept as they arrived.
    static let keptMinimum = 32 * 1024
    /// The capacity of a buffer small chunks are copied into.
    static let copyCapacity = 64 * 1024

    private(set) var buffers: [ByteBuffer] = []
    private(set) var byteCount = 0
    /// Whether the last buffer is one of ours, with room for more small chunks.
    private var lastIsCopy = false

    mutating func append(_ chunk: ByteBuffer) {
        let count = chunk.readableBytes
        guard count > 0 else { return }
        byteCount += count
        if count >= Self.keptMinimum {
            buffers.append(chunk)
            lastIsCopy = false
            return
        }
        var chunk = chunk
        // Taken out of the array while written to, so the write does not copy it.
        if lastIsCopy, var last = buffers.popLast() {
            let fits = min(last.writableBytes, count)
            var part = chunk.readSlice(length: fits)!
            last.writeBuffer(&part)
            buffers.append(last)
            if chunk.readableBytes == 0 { return }
        }
        var copy = ByteBufferAllocator().buffer(capacity: Self.copyCapacity)
        copy.writeBuffer(&chunk)
        buffers.append(copy)
        lastIsCopy = true
    }
}
