import HearthRules

/// A rules file's bytes, with what diagnostics and decisions need from them: 1-based line and byte
/// column of an offset, and a range's text with whitespace collapsed.
///
/// For example:
/// ```swift
/// let text = SourceText("service x {\n  match /a {}\n}")
/// text.position(of: 14)  // (line: 2, column: 3)
/// ```
struct SourceText: Sendable {
    let bytes: [UInt8]
    /// The offset where each line starts.
    let lineStarts: [Int]

    init(_ source: String) {
        bytes = Array(source.utf8)
        var starts = [0]
        for (index, byte) in bytes.enumerated() where byte == 0x0A { starts.append(index + 1) }
        lineStarts = starts
    }

    /// 1-based line and byte column (the convention of HearthRules' diagnostics).
    func position(of offset: Int) -> (line: Int, column: Int) {
        let offset = max(0, min(offset, bytes.count))
        // The last line start at or before the offset.
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return (low + 1, offset - lineStarts[low] + 1)
    }

    func diagnostic(_ message: String, at offset: Int) -> Diagnostic {
        let (line, column) = position(of: offset)
        return Diagnostic(line: line, column: column, message: message)
    }

    /// The source between two offsets, runs of whitespace (newlines included) turned into one space.
    func collapsedText(from start: Int, to end: Int) -> String {
        let start = max(0, min(start, bytes.count))
        let end = max(start, min(end, bytes.count))
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        var pendingSpace = false
        for byte in bytes[start..<end] {
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(0x20) }
                pendingSpace = false
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
