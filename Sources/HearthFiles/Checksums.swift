import CHearthFiles
import Crypto
import Foundation

/// CRC-32C (Castagnoli), the checksum Cloud Storage reports and `google-cloud-storage` verifies on
/// download. No package in our mirror implements it, so it is here: the CPU's CRC-32C instruction where
/// it has one (SSE 4.2, ARM's CRC extension; `CHearthFiles`), else slicing-by-8 over a table built
/// once, about 1.35 GB/s in release builds (`docs/decisions/0020-hardware-crc32c.md`).
///
/// For example:
/// ```swift
/// var crc = CRC32C()
/// crc.update(Array("123456789".utf8))
/// crc.value  // 0xE3069283
/// ```
public struct CRC32C: Sendable {
    public private(set) var value: UInt32 = 0

    public init() {}

    /// Slicing-by-8's eight tables of 256 entries, one after another in one flat array: read through
    /// one pointer, without nested arrays' bounds checks (1.35 GB/s against 0.73–0.84 on this
    /// machine; a 1 GiB upload spent 17 % of its CPU here, docs/benchmarks.md, issue 30).
    static let table: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            table[byte] = crc
        }
        for byte in 0..<256 {
            for slice in 1..<8 {
                let previous = table[(slice - 1) * 256 + byte]
                table[slice * 256 + byte] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        return table
    }()

    /// Whether this CPU computes CRC-32C itself (else the table does).
    public static let usesHardware = hearth_crc32c_hardware_available() != 0

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        if Self.usesHardware {
            value = ~hearth_crc32c_hardware(~value, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        } else {
            updateWithTable(bytes)
        }
    }

    /// The table-driven CRC, for CPUs without the instruction (and for the tests, on any CPU).
    package mutating func updateWithTable(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var crc = ~value
        Self.table.withUnsafeBufferPointer { table in
            let t = table.baseAddress!
            var index = 0
            let count = bytes.count
            while count - index >= 8 {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let low = crc ^ UInt32(truncatingIfNeeded: word)
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(base.load(fromByteOffset: index, as: UInt8.self))) & 0xFF)]
                index += 1
            }
        }
        value = ~crc
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }
}

/// The checksums of a blob, computed as its bytes stream through.
struct BlobDigest {
    var md5 = Insecure.MD5()
    var crc32c = CRC32C()
    var size: Int64 = 0

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        md5.update(bufferPointer: bytes)
        crc32c.update(bytes)
        size += Int64(bytes.count)
    }

    /// Base64 of the MD5, as Cloud Storage reports it.
    func finish() -> (md5Base64: String, crc32c: UInt32, size: Int64) {
        let digest = md5.finalize()
        return (Data(digest).base64EncodedString(), crc32c.value, size)
    }
}

extension CRC32C {
    /// The big-endian bytes, base64: GCS's `crc32c` field and `x-goog-hash` form.
    static func base64(_ value: UInt32) -> String {
        Data([UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]).base64EncodedString()
    }
}
