#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import HearthCore

/// Streams a JSON document into storage rows without building a tree, for fast imports of large files.
///
/// Handles everything a Firebase export contains: arrays (index keys), `null` (skipped), `.priority`
/// and `.value`. Keys and depth are validated as for writes; server values are rejected.
///
/// Rows are handed out as byte buffers valid only during the call: the key from a reused buffer, the value
/// as the primitive's own JSON text in the input. Nothing is allocated per row but strings' validation.
///
/// For example:
/// ```swift
/// var importer = RowImporter(base: .root)
/// try importer.run(bytes) { key, value in rows.append((Array(key), Array(value))) }
/// ```
public struct RowImporter {
    /// Receives one row: its key and its value's JSON text.
    public typealias RowSink = (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Void

    public let base: DatabasePath
    /// Called every so often with the number of bytes consumed, for progress bars.
    public var progress: ((Int) -> Void)?
    public private(set) var rowCount = 0
    /// Rows come in ascending key order rather than document order (what a bulk B-tree build needs):
    /// each container's members are listed first (their values skipped with a structural scan), then
    /// visited sorted by key bytes. A repeated member keeps its last value, as `JSON.parse` does. Costs
    /// one extra scan of the bytes per nesting level; memory is one member list per open container.
    public let keyOrder: Bool

    /// A member of a container being visited in key order: where its key's UTF-8 bytes are, and where its
    /// value starts and ends. A plain value (no string), so that listing and sorting millions of members
    /// costs no reference counting: the key is read in place in the input, or, for a key written with
    /// escapes and for an array index, from ``names``.
    /// 32 bytes, as small as a member with a `String` was: a large import lists millions of them at once.
    struct Member {
        var nameOffset: Int
        var start: Int
        var end: Int
        /// At most ``Key/maximumByteCount``.
        var nameCount: UInt16
        var nameInInput: Bool

        init(nameOffset: Int, nameCount: Int, nameInInput: Bool, start: Int, end: Int) {
            self.nameOffset = nameOffset
            self.start = start
            self.end = end
            self.nameCount = UInt16(nameCount)
            self.nameInInput = nameInInput
        }

        @inline(__always)
        func name(input: UnsafeRawPointer, names: UnsafeRawPointer?) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: (nameInInput ? input : names.unsafelyUnwrapped) + nameOffset, count: Int(nameCount))
        }
    }

    /// Member lists of finished containers, reused so that visiting a container allocates nothing.
    private var memberLists: [[Member]] = []
    /// The bytes of keys not read in place: each container appends its own and removes them when done
    /// (its parent's stay below them).
    private var names: [UInt8] = []

    public init(base: DatabasePath, keyOrder: Bool = false) {
        self.base = base
        self.keyOrder = keyOrder
    }

    /// Parses the whole buffer, calling `emit(rowKey, jsonValueText)` for every row.
    public mutating func run(_ bytes: UnsafeRawBufferPointer, emit: RowSink) throws {
        var parser = JSONParser(bytes)
        var prefix = Array(NodeRows.key(base).utf8)
        parser.skipWhitespace()
        var lastReport = 0
        try value(&parser, prefix: &prefix, depth: base.count, emit: emit, lastReport: &lastReport)
        parser.skipWhitespace()
        if parser.offset != bytes.count { throw JSONError("Unexpected data after the JSON value", offset: parser.offset) }
        progress?(parser.offset)
    }

    /// The top-level children of an object document, for `--merge` imports (each replaced separately).
    private mutating func value(
        _ parser: inout JSONParser,
        prefix: inout [UInt8],
        depth: Int,
        emit: RowSink,
        lastReport: inout Int
    ) throws {
        if let progress, parser.offset - lastReport > 1 << 20 {
            lastReport = parser.offset
            progress(parser.offset)
        }
        guard let byte = parser.peek() else { throw JSONError("Unexpected end of JSON", offset: parser.offset) }
        if keyOrder, byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
            try orderedContainer(&parser, prefix: &prefix, depth: depth, emit: emit, lastReport: &lastReport)
            return
        }
        switch byte {
        case UInt8(ascii: "{"):
            parser.offset += 1
            parser.skipWhitespace()
            if parser.peek() == UInt8(ascii: "}") {
                parser.offset += 1
                return
            }
            while true {
                parser.skipWhitespace()
                let name = try parser.parseString()
                parser.skipWhitespace()
                try parser.expect(UInt8(ascii: ":"))
                parser.skipWhitespace()
                switch name {
                case ".priority":
                    let start = parser.offset
                    let priority = try parser.parseValue(depth: 0)
                    switch priority {
                    case .null: break
                    case .number, .string:
                        try emitRow(prefix + [1, 1], parser.bytes, start, parser.offset, emit)
                    default: throw DataError(.invalidPriority, "Invalid data; priorities must be strings, numbers or null")
                    }
                case ".value":
                    let start = parser.offset
                    let leaf = try parser.parseValue(depth: 0)
                    guard leaf.isPrimitive else { throw DataError(.invalidValue, "Invalid data; \".value\" must be a primitive") }
                    if leaf != .null { try emitLeaf(prefix, leaf, parser.bytes, start, parser.offset, emit) }
                case ".sv":
                    throw DataError(.invalidServerValue, "Invalid data; server values cannot be imported")
                default:
                    do {
                        try Key.validate(name)
                    } catch {
                        throw DataError(.invalidKey, "Invalid data; \(error.message)")
                    }
                    guard depth + 1 <= DatabasePath.maximumDepth else {
                        throw DataError(.tooDeep, "Invalid data; data must not be nested more than 32 levels deep")
                    }
                    let length = prefix.count
                    prefix.append(1)
                    prefix.append(contentsOf: name.utf8)
                    try value(&parser, prefix: &prefix, depth: depth + 1, emit: emit, lastReport: &lastReport)
                    prefix.removeLast(prefix.count - length)
                }
                parser.skipWhitespace()
                if try parser.endOfContainer(UInt8(ascii: "}")) { return }
            }
        case UInt8(ascii: "["):
            parser.offset += 1
            parser.skipWhitespace()
            if parser.peek() == UInt8(ascii: "]") {
                parser.offset += 1
                return
            }
            guard depth + 1 <= DatabasePath.maximumDepth else {
                throw DataError(.tooDeep, "Invalid data; data must not be nested more than 32 levels deep")
            }
            var index = 0
            while true {
                parser.skipWhitespace()
                let length = prefix.count
                prefix.append(1)
                prefix.append(contentsOf: String(index).utf8)
                try value(&parser, prefix: &prefix, depth: depth + 1, emit: emit, lastReport: &lastReport)
                prefix.removeLast(prefix.count - length)
                index += 1
                parser.skipWhitespace()
                if try parser.endOfContainer(UInt8(ascii: "]")) { return }
            }
        default:
            let start = parser.offset
            if parser.skipPlainASCIIString() {
                if parser.offset - start - 2 <= Node.maximumStringByteCount {
                    try emitRow(prefix, parser.bytes, start, parser.offset, emit)
                    return
                }
                parser.offset = start
            }
            let leaf = try parser.parseValue(depth: 0)
            if leaf != .null { try emitLeaf(prefix, leaf, parser.bytes, start, parser.offset, emit) }
        }
    }

    /// An object or array in key order: lists its members, then emits its own value and priority rows
    /// (they sort before any child's) and the children sorted by key.
    private mutating func orderedContainer(
        _ parser: inout JSONParser,
        prefix: inout [UInt8],
        depth: Int,
        emit: RowSink,
        lastReport: inout Int
    ) throws {
        let isArray = parser.peek() == UInt8(ascii: "[")
        let close = isArray ? UInt8(ascii: "]") : UInt8(ascii: "}")
        parser.offset += 1
        parser.skipWhitespace()
        if parser.peek() == close {
            parser.offset += 1
            return
        }
        if isArray, depth + 1 > DatabasePath.maximumDepth {
            throw DataError(.tooDeep, "Invalid data; data must not be nested more than 32 levels deep")
        }
        var members = memberLists.popLast() ?? []
        members.removeAll(keepingCapacity: true)
        let namesMark = names.count
        var valueStart: Int?
        var priorityStart: Int?
        var index = 0
        while true {
            parser.skipWhitespace()
            if isArray {
                let start = parser.offset
                try parser.skipValue()
                let nameOffset = names.count
                names.append(contentsOf: String(index).utf8)
                members.append(
                    Member(nameOffset: nameOffset, nameCount: names.count - nameOffset, nameInInput: false, start: start, end: parser.offset)
                )
                index += 1
            } else {
                let member = try memberName(&parser)
                parser.skipWhitespace()
                try parser.expect(UInt8(ascii: ":"))
                parser.skipWhitespace()
                let start = parser.offset
                switch member {
                case .priority:
                    priorityStart = start
                    try parser.skipValue()
                case .value:
                    valueStart = start
                    try parser.skipValue()
                case .key(let nameOffset, let nameCount, let nameInInput):
                    guard depth + 1 <= DatabasePath.maximumDepth else {
                        throw DataError(.tooDeep, "Invalid data; data must not be nested more than 32 levels deep")
                    }
                    try parser.skipValue()
                    members.append(
                        Member(nameOffset: nameOffset, nameCount: nameCount, nameInInput: nameInInput, start: start, end: parser.offset)
                    )
                }
            }
            parser.skipWhitespace()
            if try parser.endOfContainer(close) { break }
        }
        let end = parser.offset
        // The node's own rows: its value (key P), then its priority (P 01 01), before any child (P 01 k).
        if let valueStart {
            parser.offset = valueStart
            let leaf = try parser.parseValue(depth: 0)
            guard leaf.isPrimitive else { throw DataError(.invalidValue, "Invalid data; \".value\" must be a primitive") }
            if leaf != .null { try emitLeaf(prefix, leaf, parser.bytes, valueStart, parser.offset, emit) }
        }
        if let priorityStart {
            parser.offset = priorityStart
            switch try parser.parseValue(depth: 0) {
            case .null: break
            case .number, .string: try emitRow(prefix + [1, 1], parser.bytes, priorityStart, parser.offset, emit)
            default: throw DataError(.invalidPriority, "Invalid data; priorities must be strings, numbers or null")
            }
        }
        let input = parser.bytes.baseAddress.unsafelyUnwrapped
        names.withUnsafeBytes { RowImporter.sortByKey(&members, input: input, names: $0.baseAddress) }
        for member in members {
            parser.offset = member.start
            let length = prefix.count
            prefix.append(1)
            // Copied before the visit: a nested container's keys may move `names`.
            names.withUnsafeBytes { prefix.append(contentsOf: member.name(input: input, names: $0.baseAddress)) }
            try value(&parser, prefix: &prefix, depth: depth + 1, emit: emit, lastReport: &lastReport)
            prefix.removeLast(prefix.count - length)
            guard parser.offset == member.end else { throw JSONError("Unexpected data after a value", offset: parser.offset) }
        }
        parser.offset = end
        names.removeLast(names.count - namesMark)
        memberLists.append(members)
    }

    /// An object member's name, checked: a key (where its bytes are), or one of the names with a meaning.
    private enum MemberName {
        case key(offset: Int, count: Int, inInput: Bool)
        case priority
        case value
    }

    /// Reads a member's name. A plain ASCII name (no escapes), the usual case, is checked and kept in
    /// place in the input; any other is decoded and its bytes appended to ``names``.
    private mutating func memberName(_ parser: inout JSONParser) throws -> MemberName {
        let quote = parser.offset
        if parser.skipPlainASCIIString() {
            let raw = UnsafeRawBufferPointer(rebasing: parser.bytes[(quote + 1)..<(parser.offset - 1)])
            // Valid keys have no ".", so ".priority" and ".value" take the slower path below.
            if Key.isValid(raw) {
                return .key(offset: quote + 1, count: raw.count, inInput: true)
            }
            parser.offset = quote
        }
        let name = try parser.parseString()
        switch name {
        case ".priority": return .priority
        case ".value": return .value
        case ".sv": throw DataError(.invalidServerValue, "Invalid data; server values cannot be imported")
        default:
            do {
                try Key.validate(name)
            } catch {
                throw DataError(.invalidKey, "Invalid data; \(error.message)")
            }
            let offset = names.count
            names.append(contentsOf: name.utf8)
            return .key(offset: offset, count: names.count - offset, inInput: false)
        }
    }

    /// Sorts members by key bytes (the row order), keeping only the last of members with the same key.
    /// Already sorted lists, the usual case for exports, cost one comparison per member.
    static func sortByKey(_ members: inout [Member], input: UnsafeRawPointer, names: UnsafeRawPointer?) {
        func compare(_ a: Member, _ b: Member) -> Int {
            RowImporter.compare(a.name(input: input, names: names), b.name(input: input, names: names))
        }
        var sorted = true
        var index = 1
        while index < members.count {
            if compare(members[index - 1], members[index]) >= 0 {
                sorted = false
                break
            }
            index += 1
        }
        if sorted { return }
        members.sort { a, b in
            let order = compare(a, b)
            return order < 0 || (order == 0 && a.start < b.start)
        }
        var kept = 0
        for index in 0..<members.count {
            if index + 1 < members.count, compare(members[index + 1], members[index]) == 0 { continue }
            members[kept] = members[index]
            kept += 1
        }
        members.removeLast(members.count - kept)
    }

    /// Byte order (negative, zero, positive), which is how SQLite compares the row keys.
    @inline(__always)
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        if common > 0 {
            let order = memcmp(a.baseAddress.unsafelyUnwrapped, b.baseAddress.unsafelyUnwrapped, common)
            if order != 0 { return Int(order) }
        }
        return a.count - b.count
    }

    private mutating func emitLeaf(
        _ prefix: [UInt8],
        _ leaf: JSONValue,
        _ source: UnsafeRawBufferPointer,
        _ start: Int,
        _ end: Int,
        _ emit: RowSink
    ) throws {
        if case .string(let s) = leaf, s.utf8.count > Node.maximumStringByteCount {
            throw DataError(.tooLarge, "Invalid data; strings must be at most 10 MB")
        }
        try emitRow(prefix, source, start, end, emit)
    }

    /// Emits a row whose value is the JSON text `source[start..<end]`, as written in the input.
    private mutating func emitRow(_ key: [UInt8], _ source: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ emit: RowSink) throws {
        rowCount += 1
        let value = UnsafeRawBufferPointer(rebasing: source[start..<end]).assumingMemoryBound(to: UInt8.self)
        try key.withUnsafeBufferPointer { try emit($0, value) }
    }
}
