import NIOCore
import NIOWebSocket
import Synchronization

/// The text frames queued for one socket and whether a drain of them is already scheduled.
///
/// Frames may be queued from any thread; one drain on the socket's event loop takes everything queued
/// so far. A burst of writes made faster than the loop runs thus leaves in a few large socket writes
/// (one flush each) instead of one task hop, one frame through the pipeline and one syscall per write.
///
/// For example:
/// ```swift
/// var batch = OutboundFrameBatch()
/// batch.enqueue("a")   // true: schedule a drain
/// batch.enqueue("b")   // false: the drain already scheduled takes it too
/// batch.drain()        // ["a", "b"]
/// ```
struct OutboundFrameBatch: Sendable {
    private var queued: [String] = []
    private var drainScheduled = false

    /// Queues `text`; true when the caller must schedule a drain (none is pending).
    mutating func enqueue(_ text: String) -> Bool {
        queued.append(text)
        guard !drainScheduled else { return false }
        drainScheduled = true
        return true
    }

    /// Everything queued, in order. Frames queued after this schedule a new drain.
    mutating func drain() -> [String] {
        drainScheduled = false
        let frames = queued
        // Keep the capacity: a steady stream refills a buffer of about the same size.
        queued.removeAll(keepingCapacity: true)
        return frames
    }

    var isDrainScheduled: Bool { drainScheduled }
}

/// Client-to-server WebSocket framing (RFC 6455 §5.2) of text frames, written straight into one buffer:
/// a batch of frames is one allocation and one write rather than a `WebSocketFrame`, a header buffer and
/// a pipeline pass each.
enum ClientTextFrames {
    /// Appends `text` as one final, masked text frame (`key`: the frame's masking key, big-endian).
    static func append(_ text: String, maskKey key: UInt32, to buffer: inout ByteBuffer) {
        var text = text
        text.withUTF8 { payload in append(payload, maskKey: key, to: &buffer) }
    }

    static func append(_ payload: UnsafeBufferPointer<UInt8>, maskKey key: UInt32, to buffer: inout ByteBuffer) {
        let count = payload.count
        // FIN + text opcode, then the length with the mask bit (clients must mask every frame).
        buffer.writeInteger(UInt8(0x81))
        if count < 126 {
            buffer.writeInteger(UInt8(0x80 | count))
        } else if count <= Int(UInt16.max) {
            buffer.writeInteger(UInt8(0x80 | 126))
            buffer.writeInteger(UInt16(count))
        } else {
            buffer.writeInteger(UInt8(0x80 | 127))
            buffer.writeInteger(UInt64(count))
        }
        buffer.writeInteger(key)
        let mask = (UInt8(truncatingIfNeeded: key >> 24), UInt8(truncatingIfNeeded: key >> 16), UInt8(truncatingIfNeeded: key >> 8), UInt8(truncatingIfNeeded: key))
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { output in
            var index = 0
            while index + 4 <= count {
                output[index] = payload[index] ^ mask.0
                output[index + 1] = payload[index + 1] ^ mask.1
                output[index + 2] = payload[index + 2] ^ mask.2
                output[index + 3] = payload[index + 3] ^ mask.3
                index += 4
            }
            while index < count {
                let byte: UInt8
                switch index & 3 {
                case 0: byte = mask.0
                case 1: byte = mask.1
                case 2: byte = mask.2
                default: byte = mask.3
                }
                output[index] = payload[index] ^ byte
                index += 1
            }
            return count
        }
    }

    /// The encoded size of a frame carrying `count` payload bytes.
    static func encodedSize(payloadCount count: Int) -> Int {
        count + 6 + (count < 126 ? 0 : count <= Int(UInt16.max) ? 2 : 8)
    }
}
