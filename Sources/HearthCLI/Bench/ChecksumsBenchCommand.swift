import ArgumentParser
import Crypto
import Foundation
import HearthFiles
import NIOCore

/// The speed of the checksums every uploaded byte goes through: MD5 (Cloud Storage's `md5Hash`) and
/// CRC-32C (its `crc32c`), with the CPU's instruction and with the table other CPUs use.
struct ChecksumsBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checksums",
        abstract: "Throughput of an upload's checksums (MD5, CRC-32C by instruction and by table) in one thread, and of MD5 in lanes."
    )

    @Option(help: "Megabytes to checksum per measurement.")
    var megabytes = 512

    @Option(help: "Measurements of each; the best is reported.")
    var rounds = 3

    func run() async throws {
        // 1 MiB chunks, as an upload's body arrives in pieces.
        var generator = SystemRandomNumberGenerator()
        let chunk = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let chunks = max(1, megabytes)
        func best(_ name: String, _ body: (UnsafeRawBufferPointer) -> Void) {
            let clock = ContinuousClock()
            var fastest = Duration.seconds(1_000_000)
            for _ in 0..<max(1, rounds) {
                let elapsed = chunk.withUnsafeBytes { bytes in
                    clock.measure { for _ in 0..<chunks { body(bytes) } }
                }
                fastest = min(fastest, elapsed)
            }
            let seconds = Double(fastest.components.seconds) + Double(fastest.components.attoseconds) / 1e18
            print(String(format: "%@: %.2f GB/s (%d MiB in %.3f s, best of %d)", name, Double(chunks << 20) / seconds / 1e9, chunks, seconds, rounds))
        }
        print("CRC-32C uses the CPU's instruction: \(CRC32C.usesHardware ? "yes" : "no (the table)")")
        var md5 = Insecure.MD5()
        best("MD5") { md5.update(bufferPointer: $0) }
        var crc = CRC32C()
        best("CRC-32C") { crc.update($0) }
        var table = CRC32C()
        best("CRC-32C by table") { table.updateWithTable($0) }
        // Keep the results alive, so the work is not optimized away.
        if crc.value == 1 && table.value == 1 { print(md5.finalize()) }
        // MD5 of many bodies at once (decision 0022): 1 MiB bodies, as the files benchmark uploads, 1 and
        // 16 at a time through the lanes' thread.
        print("MD5 runs in AVX-512's lanes: \(MD5Lanes.isAccelerated ? "yes" : "no (one lane after another)")")
        let body = [ByteBuffer(bytes: chunk)]
        for together in [1, 4, 16] {
            let clock = ContinuousClock()
            var fastest = Duration.seconds(1_000_000)
            for _ in 0..<max(1, rounds) {
                let elapsed = await clock.measure {
                    await withTaskGroup(of: Void.self) { group in
                        for worker in 0..<together {
                            group.addTask {
                                for _ in stride(from: worker, to: chunks, by: together) { _ = await MD5Lanes.shared.digest(of: body) }
                            }
                        }
                    }
                }
                fastest = min(fastest, elapsed)
            }
            let seconds = Double(fastest.components.seconds) + Double(fastest.components.attoseconds) / 1e18
            print(String(format: "MD5 in lanes, 1 MiB bodies, %d at a time: %.2f GB/s (%d MiB in %.3f s, best of %d)", together, Double(chunks << 20) / seconds / 1e9, chunks, seconds, rounds))
        }
    }
}
