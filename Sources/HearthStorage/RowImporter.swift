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

    public init(base: DatabasePath) {
        self.base = base
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
                    prefix.removeSubrange(length...)
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
                prefix.removeSubrange(length...)
                index += 1
                parser.skipWhitespace()
                if try parser.endOfContainer(UInt8(ascii: "]")) { return }
            }
        default:
            let start = parser.offset
            let leaf = try parser.parseValue(depth: 0)
            if leaf != .null { try emitLeaf(prefix, leaf, parser.bytes, start, parser.offset, emit) }
        }
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
