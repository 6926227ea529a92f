import HearthCore

/// Where each rule's value sits in a rules document, so diagnostics can name the file's line and column.
///
/// The document is scanned once (after comments are blanked out, which keeps offsets) and the byte
/// offset of every object member's value is kept under its rules path (`rules/users/$uid/.write`).
/// A position inside an expression is carried into the string literal that holds it, escapes included.
///
/// For example:
/// ```swift
/// let map = RulesSourceMap(Array("{\"rules\": {\".read\": \"auth != nul\"}}".utf8))
/// let (line, column) = map.filePosition(of: Diagnostic(location: "rules/.read", column: 9, message: ""))!
/// // line 1, column 30: where `nul` starts in the file
/// ```
struct RulesSourceMap {
    let bytes: [UInt8]
    private(set) var valueOffsets: [String: Int] = [:]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var index = 0
        scanValue(&index, path: nil)
    }

    /// The file position (1-based line and byte column) a diagnostic of the rule at its location points to.
    func filePosition(of diagnostic: Diagnostic) -> (line: Int, column: Int)? {
        guard let start = valueOffsets[diagnostic.location] else { return nil }
        guard start < bytes.count, bytes[start] == UInt8(ascii: "\"") else { return RulesSourceMap.position(of: start, in: bytes) }
        // The diagnostic's line and column count bytes of the decoded expression.
        var target = 0
        var line = 1
        var column = 1
        let decoded = RulesSourceMap.decodedOffsets(ofStringAt: start, in: bytes)
        while target < decoded.count - 1, line < diagnostic.line || (line == diagnostic.line && column < diagnostic.column) {
            if decoded[target].byte == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
            target += 1
        }
        return RulesSourceMap.position(of: decoded[target].source, in: bytes)
    }

    /// For each byte of a string literal's decoded value, the source offset it came from; one more entry
    /// for the closing quote.
    static func decodedOffsets(ofStringAt start: Int, in bytes: [UInt8]) -> [(byte: UInt8, source: Int)] {
        var out: [(byte: UInt8, source: Int)] = []
        var index = start + 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
                let escape = bytes[index + 1]
                let decoded: UInt8 = switch escape {
                case UInt8(ascii: "n"): 0x0A
                case UInt8(ascii: "t"): 0x09
                case UInt8(ascii: "r"): 0x0D
                default: escape
                }
                out.append((decoded, index))
                // \uXXXX stands for one character; count it as one byte of the expression.
                index += escape == UInt8(ascii: "u") ? 6 : 2
            } else {
                out.append((bytes[index], index))
                index += 1
            }
        }
        out.append((0, min(index, bytes.count)))
        return out
    }

    /// A member name from its string literal (quotes included), escapes decoded as the JSON parser
    /// decodes them (`\u00e9` is `é`), so that the path names the key the rules were compiled with.
    static func memberName(_ literal: ArraySlice<UInt8>) -> String {
        let inner = literal.dropFirst().dropLast()
        guard inner.contains(UInt8(ascii: "\\")) else { return String(decoding: inner, as: UTF8.self) }
        if case .string(let name)? = try? JSONValue(parsing: String(decoding: literal, as: UTF8.self)) { return name }
        return String(decoding: inner, as: UTF8.self)
    }

    /// The offset just past the JSON value starting at `start`: a string literal's closing quote + 1,
    /// or the end of a literal such as `true`. (Rule values are never objects or arrays.)
    static func valueEnd(at start: Int, in bytes: [UInt8]) -> Int {
        guard start < bytes.count else { return start }
        if bytes[start] == UInt8(ascii: "\"") {
            return min(decodedOffsets(ofStringAt: start, in: bytes).last!.source + 1, bytes.count)
        }
        var end = start
        while end < bytes.count, !",}] \t\r\n".utf8.contains(bytes[end]) { end += 1 }
        return end
    }

    /// 1-based line and byte column of an offset.
    static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes[..<min(offset, bytes.count)] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }

    // MARK: Scanning (the document already parsed as JSON; this only finds offsets)

    private mutating func scanValue(_ index: inout Int, path: String?) {
        skipSpace(&index)
        guard index < bytes.count else { return }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            while true {
                skipSpace(&index)
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { break }
                let nameStart = index
                skipString(&index)
                let name = RulesSourceMap.memberName(bytes[nameStart..<min(index, bytes.count)])
                skipSpace(&index)
                if index < bytes.count, bytes[index] == UInt8(ascii: ":") { index += 1 }
                skipSpace(&index)
                let memberPath = path.map { "\($0)/\(name)" } ?? name
                valueOffsets[memberPath] = index
                scanValue(&index, path: memberPath)
                skipSpace(&index)
                if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 } else { break }
            }
            skipSpace(&index)
            if index < bytes.count { index += 1 }  // }
        case UInt8(ascii: "["):
            index += 1
            while true {
                skipSpace(&index)
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { break }
                scanValue(&index, path: nil)
                skipSpace(&index)
                if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 } else { break }
            }
            skipSpace(&index)
            if index < bytes.count { index += 1 }  // ]
        case UInt8(ascii: "\""):
            skipString(&index)
        default:
            while index < bytes.count, !",}] \t\r\n".utf8.contains(bytes[index]) { index += 1 }
        }
    }

    private func skipString(_ index: inout Int) {
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        index += 1
    }

    private func skipSpace(_ index: inout Int) {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }
}
