@testable import Hearth
import NIOCore
import Testing

/// The outgoing side of the SDK's socket: frames queued from any thread and drained in batches, and
/// the client framing written for each batch.
@Suite struct OutboundFrameTests {
    @Test func onlyTheFirstFrameOfABatchSchedulesADrainAndADrainTakesAllInOrder() {
        var batch = OutboundFrameBatch()
        // Mutating calls cannot run inside #expect: their results are taken first.
        let nothing = batch.drain()
        #expect(nothing.isEmpty)
        let first = batch.enqueue("a"), second = batch.enqueue("b"), third = batch.enqueue("c")
        #expect(first && !second && !third)
        #expect(batch.isDrainScheduled)
        let drained = batch.drain()
        #expect(drained == ["a", "b", "c"])
        #expect(!batch.isDrainScheduled)
        // A frame queued after a drain needs a new one.
        let afterDrain = batch.enqueue("d")
        #expect(afterDrain)
        let again = batch.drain(), empty = batch.drain()
        #expect(again == ["d"] && empty.isEmpty)
        let next = batch.enqueue("e")
        #expect(next)
    }

    struct Truncated: Error {}

    /// Mutating reads cannot run inside #require: a truncated frame throws instead.
    static func read<T: FixedWidthInteger>(_ buffer: inout ByteBuffer, as type: T.Type) throws -> T {
        guard let value = buffer.readInteger(as: type) else { throw Truncated() }
        return value
    }

    /// A minimal RFC 6455 reader of client frames: (final, opcode, masking key, unmasked payload).
    static func readFrames(_ buffer: ByteBuffer) throws -> [(fin: Bool, opcode: UInt8, key: UInt32, payload: [UInt8])] {
        var buffer = buffer
        var frames: [(fin: Bool, opcode: UInt8, key: UInt32, payload: [UInt8])] = []
        while buffer.readableBytes > 0 {
            let first = try Self.read(&buffer, as: UInt8.self)
            let second = try Self.read(&buffer, as: UInt8.self)
            #expect(second & 0x80 != 0, "a client frame must be masked")
            var length = Int(second & 0x7F)
            if length == 126 { length = Int(try Self.read(&buffer, as: UInt16.self)) }
            else if length == 127 { length = Int(try Self.read(&buffer, as: UInt64.self)) }
            let key = try Self.read(&buffer, as: UInt32.self)
            guard let masked = buffer.readBytes(length: length) else { throw Truncated() }
            let mask = [UInt8(key >> 24), UInt8((key >> 16) & 0xFF), UInt8((key >> 8) & 0xFF), UInt8(key & 0xFF)]
            let payload = masked.enumerated().map { $0.element ^ mask[$0.offset % 4] }
            frames.append((first & 0x80 != 0, first & 0x0F, key, payload))
        }
        return frames
    }

    @Test(arguments: [0, 1, 3, 5, 125, 126, 127, 65_535, 65_536, 70_001])
    func framesOfEveryLengthFormReadBackAsTheirText(length: Int) throws {
        let text = String((0..<length).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
        var buffer = ByteBufferAllocator().buffer(capacity: 0)
        ClientTextFrames.append(text, maskKey: 0xA1B2_C3D4, to: &buffer)
        ClientTextFrames.append("é{}", maskKey: 0x0102_0304, to: &buffer)
        #expect(buffer.readableBytes == ClientTextFrames.encodedSize(payloadCount: length) + ClientTextFrames.encodedSize(payloadCount: "é{}".utf8.count))
        let frames = try Self.readFrames(buffer)
        #expect(frames.count == 2)
        #expect(frames.map(\.fin) == [true, true])
        #expect(frames.map(\.opcode) == [1, 1])
        #expect(frames.map(\.key) == [0xA1B2_C3D4, 0x0102_0304])
        #expect(String(decoding: frames[0].payload, as: UTF8.self) == text)
        #expect(String(decoding: frames[1].payload, as: UTF8.self) == "é{}")
    }

    @Test func theMaskIsAppliedByteForByteFromTheKeysMostSignificantByte() throws {
        var buffer = ByteBufferAllocator().buffer(capacity: 0)
        ClientTextFrames.append("abcde", maskKey: 0x0102_0304, to: &buffer)
        let expected: [UInt8] = [0x81, 0x85, 1, 2, 3, 4, 0x60, 0x60, 0x60, 0x60, 0x64]  // "abcde" ^ 1 2 3 4 1
        let written = Array(buffer.readableBytesView)
        #expect(written == expected)
    }
}
