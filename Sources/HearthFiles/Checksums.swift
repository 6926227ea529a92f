import Crypto
import Foundation

/// CRC-32C (Castagnoli), the checksum Cloud Storage reports and `google-cloud-storage` verifies on
/// download. No package in our mirror implements it, so it is here: slicing-by-8 over a table built
/// once, measured at about 1 GB/s in release builds (`docs/decisions/0009-files.md`).
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

    static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][byte] = crc
        }
        for byte in 0..<256 {
            for table in 1..<8 {
                let previous = tables[table - 1][byte]
                tables[table][byte] = (previous >> 8) ^ tables[0][Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var crc = ~value
        let tables = Self.tables
        var index = 0
        let count = bytes.count
        let t0 = tables[0], t1 = tables[1], t2 = tables[2], t3 = tables[3]
        let t4 = tables[4], t5 = tables[5], t6 = tables[6], t7 = tables[7]
        while count - index >= 8 {
            let low = crc ^ (UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
            crc = t7[Int(low & 0xFF)] ^ t6[Int((low >> 8) & 0xFF)] ^ t5[Int((low >> 16) & 0xFF)] ^ t4[Int(low >> 24)]
                ^ t3[Int(bytes[index + 4])] ^ t2[Int(bytes[index + 5])] ^ t1[Int(bytes[index + 6])] ^ t0[Int(bytes[index + 7])]
            index += 8
        }
        while index < count {
            crc = (crc >> 8) ^ t0[Int((crc ^ UInt32(bytes[index])) & 0xFF)]
            index += 1
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
