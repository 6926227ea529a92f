#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small map of children as bytes in one allocation: each entry's key and, for a plain leaf, its value,
/// in Firebase key order. A small object without a priority among the children is packed inline, as a
/// record within the record (a user's `tags`, an address), so a typical record with its nested objects is
/// one allocation. Other children (large objects, leaves with a priority, long strings) are kept as nodes
/// beside the bytes and referenced by position.
///
/// A value is a view of a range of its buffer: the top record, or a record nested inline in it.
///
/// An entry is laid out as:
/// - the key's length: one byte below 255, else 255 and two bytes (little-endian);
/// - the key's UTF-8 bytes;
/// - a tag, then its value: `false`, `true`; a number (8 bytes, the `Double`'s bits, little-endian); a
///   string (two length bytes and its UTF-8 bytes); a node (one byte: its position among the record's
///   nested nodes); or a record (its entry count, the position of its first nested node, its number of
///   nested nodes, two bytes of length, then its entries).
///
/// Positions of nested nodes count from the record's first one, and a record without nested nodes says
/// its first is 0, so equal records without nested nodes have equal bytes wherever they sit.
///
/// Immutable once made, so it is shared freely between trees and threads.
struct PackedChildren: @unchecked Sendable {
    let buffer: PackedChildrenBuffer
    let start: UInt16
    let length: UInt16
    let entryCount: UInt8
    /// The record's first nested node in the buffer's list, and how many nodes its range refers to
    /// (its own and those of the records inside it).
    let nestedBase: UInt8
    let nestedCount: UInt8

    /// Packs entries already sorted by key and unique; nil when they cannot be packed (too many, or too
    /// large for one buffer).
    static func make(sorted entries: [(key: Key, value: Node)]) -> PackedChildren? {
        guard entries.count <= ChildMap.packedCapacity else { return nil }
        var encoder = PackedChildrenEncoder()
        guard encoder.encode(entries), encoder.bytes.count <= Int(UInt16.max) else { return nil }
        let buffer = PackedChildrenBuffer.make(bytes: encoder.bytes, nested: encoder.nested)
        return PackedChildren(
            buffer: buffer, start: 0, length: UInt16(encoder.bytes.count), entryCount: UInt8(entries.count), nestedBase: 0,
            nestedCount: UInt8(encoder.nested.count)
        )
    }

    var count: Int { Int(entryCount) }

    /// The entries in key order.
    var entries: [(key: Key, value: Node)] {
        var result: [(key: Key, value: Node)] = []
        result.reserveCapacity(count)
        var cursor = Cursor(self)
        while let entry = cursor.next() { result.append(entry) }
        return result
    }

    /// Runs `body` with the record's bytes and the buffer's nested nodes.
    @inline(__always)
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>, [Node]) throws -> R) rethrows -> R {
        try buffer.withUnsafeMutablePointers { header, elements in
            try body(UnsafeBufferPointer(start: elements + Int(start), count: Int(length)), header.pointee.nested)
        }
    }

    /// The value of the child `key`, scanning the entries.
    func value(for key: Key) -> Node? {
        var name = key.string
        return name.withUTF8 { wanted in
            withBytes { bytes, nested in
                var offset = 0
                for _ in 0..<count {
                    let keyRange = PackedChildren.keyRange(bytes, at: offset)
                    if keyRange.count == wanted.count,
                        wanted.count == 0 || memcmp(bytes.baseAddress! + keyRange.lowerBound, wanted.baseAddress!, wanted.count) == 0
                    {
                        return decodeValue(bytes, at: keyRange.upperBound, nested: nested).value
                    }
                    offset = PackedChildren.skipValue(bytes, at: keyRange.upperBound)
                }
                return nil
            }
        }
    }

    func isIdentical(to other: PackedChildren) -> Bool {
        buffer === other.buffer && start == other.start
    }

    func isEqual(to other: PackedChildren) -> Bool {
        if isIdentical(to: other) { return true }
        guard count == other.count else { return false }
        if nestedCount == 0 && other.nestedCount == 0 {
            // No nested nodes: equal records have equal bytes.
            guard length == other.length else { return false }
            return withBytes { a, _ in other.withBytes { b, _ in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
        }
        return zip(entries, other.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    /// Walks the entries in key order.
    struct Cursor {
        let packed: PackedChildren
        var offset = 0
        var remaining: Int

        init(_ packed: PackedChildren) {
            self.packed = packed
            remaining = packed.count
        }

        mutating func next() -> (key: Key, value: Node)? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let start = offset
            let (entry, end) = packed.withBytes { bytes, nested in
                let keyRange = PackedChildren.keyRange(bytes, at: start)
                let key = Key(String(decoding: UnsafeBufferPointer(rebasing: bytes[keyRange]), as: UTF8.self))
                let (value, end) = packed.decodeValue(bytes, at: keyRange.upperBound, nested: nested)
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

    /// The value at `offset` (relative to this record) and the offset after it.
    @inline(__always)
    func decodeValue(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int, nested: [Node]) -> (value: Node, end: Int) {
        switch PackedChildrenBuffer.Tag(rawValue: bytes[offset]) {
        case .false: return (.leaf(.bool(false)), offset + 1)
        case .true: return (.leaf(.bool(true)), offset + 1)
        case .number:
            let bits = UnsafeRawPointer(bytes.baseAddress! + offset + 1).loadUnaligned(as: UInt64.self)
            return (.leaf(.number(Double(bitPattern: UInt64(littleEndian: bits)))), offset + 9)
        case .string:
            let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8
            let begin = offset + 3
            let string = String(decoding: UnsafeBufferPointer(rebasing: bytes[begin..<(begin + length)]), as: UTF8.self)
            return (.leaf(.string(string)), begin + length)
        case .node:
            return (nested[Int(nestedBase) + Int(bytes[offset + 1])], offset + 2)
        case .record:
            let length = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8
            let begin = offset + 6
            let inner = PackedChildren(
                buffer: buffer, start: start + UInt16(begin), length: UInt16(length), entryCount: bytes[offset + 1],
                nestedBase: nestedBase &+ bytes[offset + 2], nestedCount: bytes[offset + 3]
            )
            return (.children(Node.Children(entries: ChildMap(storage: .packed(inner)))), begin + length)
        case nil:
            preconditionFailure("A packed child has an unknown tag")
        }
    }

    @inline(__always)
    static func skipValue(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int {
        switch PackedChildrenBuffer.Tag(rawValue: bytes[offset]) {
        case .false, .true: offset + 1
        case .number: offset + 9
        case .string: offset + 3 + (Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8)
        case .node: offset + 2
        case .record: offset + 6 + (Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8)
        case nil: preconditionFailure("A packed child has an unknown tag")
        }
    }
}

/// Writes records in ``PackedChildren``'s layout.
struct PackedChildrenEncoder {
    var bytes: [UInt8] = []
    var nested: [Node] = []

    /// Strings longer than this are kept as nodes (shared, not copied when a sibling changes).
    static let inlineStringLimit = 256
    /// Nested nodes one buffer can refer to.
    static let nestedLimit = Int(UInt8.max)

    /// Appends the entries (sorted, unique) of a record whose nested nodes start at `nested.count`.
    /// False when they do not fit (too many nested nodes).
    mutating func encode(_ entries: [(key: Key, value: Node)]) -> Bool {
        let base = nested.count
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
                bytes.append(b ? PackedChildrenBuffer.Tag.true.rawValue : PackedChildrenBuffer.Tag.false.rawValue)
            case .leaf(.number(let n), priority: nil):
                bytes.append(PackedChildrenBuffer.Tag.number.rawValue)
                var bits = n.bitPattern.littleEndian
                withUnsafeBytes(of: &bits) { bytes.append(contentsOf: $0) }
            case .leaf(.string(var s), priority: nil) where s.utf8.count <= PackedChildrenEncoder.inlineStringLimit:
                bytes.append(PackedChildrenBuffer.Tag.string.rawValue)
                s.withUTF8 { utf8 in
                    bytes.append(UInt8(utf8.count & 0xFF))
                    bytes.append(UInt8(utf8.count >> 8))
                    bytes.append(contentsOf: utf8)
                }
            case .children(let children) where children.priority == nil && children.entries.isPackedRecord:
                guard encodeRecord(children.entries.sortedByKey, enclosingBase: base) else { return false }
            default:
                guard nested.count < PackedChildrenEncoder.nestedLimit else { return false }
                bytes.append(PackedChildrenBuffer.Tag.node.rawValue)
                bytes.append(UInt8(nested.count - base))
                nested.append(value)
            }
        }
        return true
    }

    /// Appends a record inline: its tag and header, then its entries. `enclosingBase` is the first nested
    /// node of the record it sits in.
    mutating func encodeRecord(_ entries: [(key: Key, value: Node)], enclosingBase: Int) -> Bool {
        let headerAt = bytes.count
        bytes.append(contentsOf: [PackedChildrenBuffer.Tag.record.rawValue, UInt8(entries.count), 0, 0, 0, 0])
        let base = nested.count
        guard encode(entries) else { return false }
        let length = bytes.count - headerAt - 6
        guard length <= Int(UInt16.max) else { return false }
        let used = nested.count - base
        // The first nested node's position counts from the enclosing record's first; 0 when none.
        bytes[headerAt + 2] = used == 0 ? 0 : UInt8(base - enclosingBase)
        bytes[headerAt + 3] = UInt8(used)
        bytes[headerAt + 4] = UInt8(length & 0xFF)
        bytes[headerAt + 5] = UInt8(length >> 8)
        return true
    }
}

/// The storage of ``PackedChildren``: the bytes and the nested nodes in one allocation.
final class PackedChildrenBuffer: ManagedBuffer<PackedChildrenBuffer.Header, UInt8> {
    struct Header {
        var byteCount: Int32
        /// The children stored as nodes, referenced by the records' entries.
        var nested: [Node]
    }

    enum Tag: UInt8 {
        case `false` = 0
        case `true` = 1
        case number = 2
        case string = 3
        case node = 4
        case record = 5
    }

    static func make(bytes: [UInt8], nested: [Node]) -> PackedChildrenBuffer {
        let buffer = PackedChildrenBuffer.create(minimumCapacity: bytes.count) { _ in
            Header(byteCount: Int32(bytes.count), nested: nested)
        }
        let packed = unsafeDowncast(buffer, to: PackedChildrenBuffer.self)
        packed.withUnsafeMutablePointerToElements { elements in
            bytes.withUnsafeBufferPointer { source in
                if let base = source.baseAddress { elements.initialize(from: base, count: source.count) }
            }
        }
        return packed
    }
}
