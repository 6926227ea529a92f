@testable import HearthCluster
@testable import HearthServer
import HearthStorage
import NIOCore
import Testing

/// The commit push stream's frames: what an owner writes, a follower reads back exactly, whatever the
/// chunks the network cuts it into; anything else ends the stream.
struct PushFrameTests {
    let frames: [PushFrame] = [
        .hello(node: "node-é1"),
        .entry(namespace: "demo", LogEntry(sequence: 41, payload: #"{"c":[{"p":["a"],"n":1}]}"#)),
        .heartbeat,
        .entry(namespace: "x", LogEntry(sequence: Int64.max, payload: "")),
        .entry(namespace: "demo", LogEntry(sequence: 42, payload: "line\nbreak \u{0} and \u{1F525}")),
    ]

    var encoded: ByteBuffer {
        var buffer = ByteBuffer()
        for frame in frames { frame.write(to: &buffer) }
        return buffer
    }

    @Test func framesRoundTripInOneChunk() throws {
        var decoder = PushFrameDecoder()
        #expect(try decoder.feed(encoded) == frames)
        #expect(decoder.bufferedBytes == 0)
    }

    @Test func framesRoundTripWhateverTheChunks() throws {
        let bytes = Array(encoded.readableBytesView)
        for size in [1, 2, 3, 5, 7, 13, 64] {
            var decoder = PushFrameDecoder()
            var decoded: [PushFrame] = []
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + size)
                decoded += try decoder.feed(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
            }
            #expect(decoded == frames, "chunks of \(size) bytes")
            #expect(decoder.bufferedBytes == 0)
        }
    }

    @Test func aPartialFrameWaitsForTheRest() throws {
        var decoder = PushFrameDecoder()
        var first = PushFrame.entry(namespace: "demo", LogEntry(sequence: 7, payload: "{}")).bytes
        let head = first.readSlice(length: 9)!
        #expect(try decoder.feed(head).isEmpty)
        #expect(decoder.bufferedBytes == 9)
        #expect(try decoder.feed(first) == [.entry(namespace: "demo", LogEntry(sequence: 7, payload: "{}"))])
    }

    @Test func damagedStreamsAreRefused() {
        var unknownKind = ByteBuffer()
        unknownKind.writeInteger(UInt8(9))
        unknownKind.writeInteger(UInt32(0))
        var oversized = ByteBuffer()
        oversized.writeInteger(PushFrame.Kind.entry.rawValue)
        oversized.writeInteger(UInt32(PushFrameDecoder.largestFrame + 1))
        var shortEntry = ByteBuffer()
        shortEntry.writeInteger(PushFrame.Kind.entry.rawValue)
        shortEntry.writeInteger(UInt32(3))
        shortEntry.writeBytes([0, 9, 65])
        var heartbeatWithBody = ByteBuffer()
        heartbeatWithBody.writeInteger(PushFrame.Kind.heartbeat.rawValue)
        heartbeatWithBody.writeInteger(UInt32(1))
        heartbeatWithBody.writeInteger(UInt8(0))
        for damaged in [unknownKind, oversized, shortEntry, heartbeatWithBody] {
            var decoder = PushFrameDecoder()
            #expect(throws: PushFrameError.self) { try decoder.feed(damaged) }
        }
    }
}
