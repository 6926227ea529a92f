#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small map of children in one allocation: each entry's key and, for a leaf, its value as bytes, in
/// Firebase key order. Children that are not plain leaves (inner nodes, leaves with a priority, long
/// strings) are kept as nodes beside the bytes and referenced by position.
///
/// An entry is laid out as:
/// - the key's length: one byte below 255, else 255 and two bytes (little-endian);
/// - the key's UTF-8 bytes;
/// - a tag: `false`, `true`, a number (8 bytes, the `Double`'s bits, little-endian), a string (two
///   length bytes and its UTF-8 bytes), or a node (one byte: its position among the nested nodes).
///
/// Immutable once made, so it is shared freely between trees and threads.
struct PackedChildren: @unchecked Sendable {
    let buffer: PackedChildrenBuffer

    /// Packs entries already sorted by key and unique; nil when they cannot be packed (too many).
    static func make(sorted entries: [(key: Key, value: Node)]) -> PackedChildren? {
        PackedChildrenBuffer.make(sorted: entries).map(PackedChildren.init(buffer:))
    }

    var count: Int { buffer.count }
    var entries: [(key: Key, value: Node)] { buffer.entries }
    func value(for key: Key) -> Node? { buffer.value(for: key) }
    func isEqual(to other: PackedChildren) -> Bool { buffer.isEqual(to: other.buffer) }
    func isIdentical(to other: PackedChildren) -> Bool { buffer === other.buffer }
}

/// The storage of ``PackedChildren``: a header and the entries' bytes in one allocation.
final class PackedChildrenBuffer: ManagedBuffer<PackedChildrenBuffer.Header, UInt8> {
    struct Header {
        var count: Int32
        var byteCount: Int32
        /// The children stored as nodes, in the order their entries reference them.
        var nested: [Node]
    }

    enum Tag: UInt8 {
        case `false` = 0
        case `true` = 1
        case number = 2
        case string = 3
        case node = 4
    }

    /// Strings longer than this are kept as nodes (shared, not copied when a sibling changes).
    static let inlineStringLimit = 256

    /// Packs entries already sorted by key and unique; nil when they cannot be packed (too many).
    static func make(sorted entries: [(key: Key, value: Node)]) -> PackedChildrenBuffer? {
        guard entries.count <= ChildMap.packedCapacity, entries.count <= Int(UInt8.max) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.count * 16)
        var nested: [Node] = []
        for (key, value) in entries {
            var name = key.string
            name.withUTF8 { utf8 in
                if utf8.count < 255 {
                    bytes.append(UInt8(utf8.count))
                } else {
                    bytes.append(255)
                    bytes.append(UInt8(utf8.count & 0xFF))
                    bytes.append(UInt8(utf8.count >> 8))
                }
                bytes.append(contentsOf: utf8)
            }
            switch value {
            case .leaf(.bool(let b), priority: nil):
                bytes.append(b ? Tag.true.rawValue : Tag.false.rawValue)
            case .leaf(.number(let n), priority: nil):
                bytes.append(Tag.number.rawValue)
                var bits = n.bitPattern.littleEndian
                withUnsafeBytes(of: &bits) { bytes.append(contentsOf: $0) }
            case .leaf(.string(var s), priority: nil) where s.utf8.count <= inlineStringLimit:
                bytes.append(Tag.string.rawValue)
                s.withUTF8 { utf8 in
                    bytes.append(UInt8(utf8.count & 0xFF))
                    bytes.append(UInt8(utf8.count >> 8))
                    bytes.append(contentsOf: utf8)
                }
            default:
                bytes.append(Tag.node.rawValue)
                bytes.append(UInt8(nested.count))
                nested.append(value)
            }
        }
        let buffer = PackedChildrenBuffer.create(minimumCapacity: bytes.count) { _ in
            Header(count: Int32(entries.count), byteCount: Int32(bytes.count), nested: nested)
        }
        let packed = unsafeDowncast(buffer, to: PackedChildrenBuffer.self)
        packed.withUnsafeMutablePointerToElements { elements in
            bytes.withUnsafeBufferPointer { source in
                elements.initialize(from: source.baseAddress!, count: source.count)
            }
        }
        return packed
    }

    var count: Int { Int(header.count) }

    /// The entries in key order.
    var entries: [(key: Key, value: Node)] {
        var result: [(key: Key, value: Node)] = []
        result.reserveCapacity(count)
        var cursor = Cursor(self)
        while let entry = cursor.next() { result.append(entry) }
        return result
    }

    /// The value of the child `key`, scanning the entries.
    func value(for key: Key) -> Node? {
        var name = key.string
        return name.withUTF8 { wanted in
            withUnsafeMutablePointers { header, elements in
                let bytes = UnsafeBufferPointer(start: elements, count: Int(header.pointee.byteCount))
                var offset = 0
                for _ in 0..<Int(header.pointee.count) {
                    let keyRange = PackedChildrenBuffer.keyRange(bytes, at: offset)
                    let valueOffset = keyRange.upperBound
                    if keyRange.count == wanted.count,
                        wanted.count == 0 || memcmp(bytes.baseAddress! + keyRange.lowerBound, wanted.baseAddress!, wanted.count) == 0
                    {
                        return PackedChildrenBuffer.decodeValue(bytes, at: valueOffset, nested: header.pointee.nested).value
                    }
                    offset = PackedChildrenBuffer.skipValue(bytes, at: valueOffset)
                }
                return nil
            }
        }
    }

    func isEqual(to other: PackedChildrenBuffer) -> Bool {
        if self === other { return true }
        return withUnsafeMutablePointers { header, elements in
            other.withUnsafeMutablePointers { otherHeader, otherElements in
                let count = Int(header.pointee.byteCount)
                guard header.pointee.count == otherHeader.pointee.count, count == Int(otherHeader.pointee.byteCount),
                    count == 0 || memcmp(elements, otherElements, count) == 0
                else { return false }
                return header.pointee.nested == otherHeader.pointee.nested
            }
        }
    }

    /// Walks the entries in key order.
    struct Cursor {
        let packed: PackedChildrenBuffer
        var offset = 0
        var remaining: Int

        init(_ packed: PackedChildren) {
            self.init(packed.buffer)
        }

        init(_ packed: PackedChildrenBuffer) {
            self.packed = packed
            remaining = packed.count
        }

        mutating func next() -> (key: Key, value: Node)? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let (entry, end) = packed.withUnsafeMutablePointers { header, elements in
                let bytes = UnsafeBufferPointer(start: elements, count: Int(header.pointee.byteCount))
                let keyRange = PackedChildrenBuffer.keyRange(bytes, at: offset)
                let key = Key(String(decoding: UnsafeBufferPointer(rebasing: bytes[keyRange]), as: UTF8.self))
                let (value, end) = PackedChildrenBuffer.decodeValue(bytes, at: keyRange.upperBound, nested: header.pointee.nested)
                return ((key: key, value: value), end)
            }
            offset = end
            return entry
        }
    }

    // MARK: Decoding

    @inline(__always)
    static func keyRange(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Range<Int> {
        let first = Int(bytes[offset])
        if first < 255 { return (offset + 1)..<(offset + 1 + first) }
        let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8
        return (offset + 3)..<(offset + 3 + length)
    }

    /// The value at `offset` and the offset after it.
    @inline(__always)
    static func decodeValue(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int, nested: [Node]) -> (value: Node, end: Int) {
        switch Tag(rawValue: bytes[offset]) {
        case .false: return (.leaf(.bool(false)), offset + 1)
        case .true: return (.leaf(.bool(true)), offset + 1)
        case .number:
            let bits = UnsafeRawPointer(bytes.baseAddress! + offset + 1).loadUnaligned(as: UInt64.self)
            return (.leaf(.number(Double(bitPattern: UInt64(littleEndian: bits)))), offset + 9)
        case .string:
            let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8
            let start = offset + 3
            let string = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(start + length)]), as: UTF8.self)
            return (.leaf(.string(string)), start + length)
        case .node:
            return (nested[Int(bytes[offset + 1])], offset + 2)
        case nil:
            preconditionFailure("A packed child has an unknown tag")
        }
    }

    @inline(__always)
    static func skipValue(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int {
        switch Tag(rawValue: bytes[offset]) {
        case .false, .true: offset + 1
        case .number: offset + 9
        case .string: offset + 3 + (Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8)
        case .node: offset + 2
        case nil: preconditionFailure("A packed child has an unknown tag")
        }
    }
}
