import CHearthFiles
import Crypto
import Foundation
@testable import HearthFiles
import NIOCore
import Testing

/// MD5 in lanes gives every body Crypto's MD5, whatever its length, its chunks, and the bodies hashed
/// beside it (lanes joining and leaving mid-run, a body alone on the plain C function).
struct MD5LanesTests {
    /// Deterministic bytes of `count`, different for each `seed`.
    static func bytes(_ count: Int, seed: Int) -> [UInt8] {
        var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    /// `body` cut into chunks of the given sizes in turn (the last takes what is left), empty ones included.
    static func chunks(_ body: [UInt8], sizes: [Int]) -> [ByteBuffer] {
        var result: [ByteBuffer] = []
        var rest = body[...]
        var index = 0
        while !rest.isEmpty {
            let size = sizes[index % sizes.count]
            result.append(ByteBuffer(bytes: rest.prefix(size)))
            rest = rest.dropFirst(size)
            index += 1
        }
        return result
    }

    static func expected(_ body: [UInt8]) -> [UInt8] { Array(Insecure.MD5.hash(data: body)) }

    /// The lengths around MD5's block and padding edges, alone on the lanes' thread.
    @Test(arguments: [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1_000, 65_536, 1 << 20])
    func aBodyAloneHasCryptosMD5(length: Int) async {
        let body = Self.bytes(length, seed: length)
        #expect(await MD5Lanes.shared.digest(of: [ByteBuffer(bytes: body)]) == Self.expected(body))
        #expect(await MD5Lanes.shared.digest(of: Self.chunks(body, sizes: [1, 63, 0, 70, 5])) == Self.expected(body))
    }

    /// Forty bodies at once, of lengths and chunkings that differ: more than the 16 lanes, so lanes
    /// free up at different blocks and waiting bodies join them mid-run.
    /// (Also without the lanes, as on a CPU without AVX-512.)
    @Test(arguments: [true, false])
    func manyBodiesAtOnceEachGetTheirOwnMD5(usesLanes: Bool) async {
        let hasher = usesLanes ? MD5Lanes.shared : MD5Lanes(usesLanes: false)
        let bodies = (0..<40).map { index in
            let length = [0, 17, 64, 100, 4_096, 70_001, 300_000, 1 << 20][index % 8] + index
            return Self.bytes(length, seed: index)
        }
        let chunkings: [[Int]] = [[1 << 20], [65_536], [1_000, 3], [64], [4_095, 1], [7, 0, 130_000]]
        let digests = await withTaskGroup(of: (Int, [UInt8]).self) { group in
            for (index, body) in bodies.enumerated() {
                let chunks = Self.chunks(body, sizes: chunkings[index % chunkings.count])
                group.addTask { (index, await hasher.digest(of: chunks)) }
            }
            var digests = [[UInt8]](repeating: [], count: bodies.count)
            for await (index, digest) in group { digests[index] = digest }
            return digests
        }
        for (index, body) in bodies.enumerated() {
            #expect(digests[index] == Self.expected(body), "body \(index) of \(body.count) bytes")
        }
    }

    /// The C kernel on all its lanes: random states and blocks (every word different, so words taken
    /// from the wrong place or lane show), several blocks a call, some lanes idle; each active lane
    /// against the plain compression. (Where the CPU has no AVX-512, the kernel runs the lanes one
    /// after another: this checks that form.)
    @Test func everyLaneOfTheKernelIsThePlainCompression() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<50 {
            let count = 1 + round % 5
            let blocks = (0..<16).map { _ in (0..<(64 * count)).map { _ in UInt8.random(in: 0...255, using: &generator) } }
            let idle = Set((0..<16).filter { _ in Bool.random(using: &generator) && round % 3 != 0 })
            var state = (0..<64).map { _ in UInt32.random(in: 0...UInt32.max, using: &generator) }
            let before = state
            var expected = state
            for lane in 0..<16 where !idle.contains(lane) {
                var one = [before[lane], before[16 + lane], before[32 + lane], before[48 + lane]]
                blocks[lane].withUnsafeBufferPointer { hearth_md5_compress(&one, $0.baseAddress!, count) }
                for word in 0..<4 { expected[16 * word + lane] = one[word] }
            }
            let pointers = blocks.map { bytes in bytes.withUnsafeBufferPointer { $0.baseAddress! } }
            withExtendedLifetime(blocks) {
                let lanes: [UnsafePointer<UInt8>?] = (0..<16).map { idle.contains($0) ? nil : pointers[$0] }
                state.withUnsafeMutableBufferPointer { s in lanes.withUnsafeBufferPointer { hearth_md5_lanes(s.baseAddress!, $0.baseAddress!, count) } }
            }
            #expect(state == expected, "round \(round): \(count) blocks, idle lanes \(idle.sorted())")
        }
    }

    /// The C kernel itself: one lane active, idle lanes untouched.
    @Test func idleLanesKeepTheirState() {
        var state = (0..<64).map { UInt32($0) &* 0x0101_0101 }
        let before = state
        let block = [UInt8](repeating: 0x61, count: 64)
        block.withUnsafeBufferPointer { bytes in
            var lanes = [UnsafePointer<UInt8>?](repeating: nil, count: 16)
            lanes[3] = bytes.baseAddress
            state.withUnsafeMutableBufferPointer { s in lanes.withUnsafeBufferPointer { hearth_md5_lanes(s.baseAddress!, $0.baseAddress!, 1) } }
        }
        var one = [before[3], before[19], before[35], before[51]]
        block.withUnsafeBufferPointer { hearth_md5_compress(&one, $0.baseAddress!, 1) }
        for lane in 0..<16 {
            let words = [state[lane], state[16 + lane], state[32 + lane], state[48 + lane]]
            if lane == 3 {
                #expect(words == one)
            } else {
                #expect(words == [before[lane], before[16 + lane], before[32 + lane], before[48 + lane]])
            }
        }
    }
}
