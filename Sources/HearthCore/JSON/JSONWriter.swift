/// Writes compact (or indented) JSON into a byte buffer, printing numbers as JavaScript does.
///
/// For example:
/// ```swift
/// var writer = JSONWriter()
/// writer.writeNumber(25)
/// #expect(writer.string == "25")
/// ```
public struct JSONWriter: Sendable {
    public var bytes: [UInt8] = []
    /// Indent nested values by two spaces (`print=pretty`).
    public var pretty: Bool
    var depth = 0

    public init(pretty: Bool = false, capacity: Int = 64) {
        self.pretty = pretty
        bytes.reserveCapacity(capacity)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let b): writeRaw(b ? "true" : "false")
        case .number(let n): writeNumber(n)
        case .string(let s): writeString(s)
        case .array(let elements):
            beginArray()
            for (i, element) in elements.enumerated() {
                if i > 0 { comma() }
                newline()
                write(element)
            }
            endArray(empty: elements.isEmpty)
        case .object(let members):
            beginObject()
            for (i, member) in members.enumerated() {
                if i > 0 { comma() }
                newline()
                writeKey(member.key)
                write(member.value)
            }
            endObject(empty: members.isEmpty)
        }
    }

    public mutating func writeRaw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func writeRaw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        depth += 1
    }

    public mutating func endObject(empty: Bool) {
        depth -= 1
        if !empty { newline() }
        bytes.append(UInt8(ascii: "}"))
    }

    public mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        depth += 1
    }

    public mutating func endArray(empty: Bool) {
        depth -= 1
        if !empty { newline() }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func comma() {
        bytes.append(UInt8(ascii: ","))
    }

    /// In pretty mode, a line break and indentation before a member.
    public mutating func newline() {
        guard pretty else { return }
        bytes.append(0x0A)
        for _ in 0..<(depth * 2) { bytes.append(0x20) }
    }

    public mutating func writeKey(_ key: String) {
        writeString(key)
        if pretty { writeRaw(" : ") } else { bytes.append(UInt8(ascii: ":")) }
    }

    /// Writes a string escaped as `JSON.stringify` does.
    public mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): writeRaw("\\\"")
            case UInt8(ascii: "\\"): writeRaw("\\\\")
            case 0x0A: writeRaw("\\n")
            case 0x0D: writeRaw("\\r")
            case 0x09: writeRaw("\\t")
            case 0x08: writeRaw("\\b")
            case 0x0C: writeRaw("\\f")
            case 0x00..<0x20:
                writeRaw("\\u00")
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func writeNumber(_ number: Double) {
        bytes.append(contentsOf: JavaScriptNumber.format(number).utf8)
    }
}

/// JavaScript's `Number.prototype.toString()` for finite doubles.
public enum JavaScriptNumber {
    /// Formats like JavaScript: `25`, `0.6`, `1e-7`, `1e+21`, `-70000000`.
    public static func format(_ value: Double) -> String {
        if value == 0 { return "0" }
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        if value == value.rounded(), abs(value) < 9.007_199_254_740_992e15 {
            return String(Int64(value))
        }
        // Swift's description is the shortest round-trip form; re-layout its digits the JS way.
        let negative = value < 0
        let text = abs(value).description
        var mantissa = Substring(text)
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...]) ?? 0
        }
        var digits = ""
        var pointPosition = 0
        var seenPoint = false
        for c in mantissa {
            if c == "." {
                seenPoint = true
            } else {
                digits.append(c)
                if !seenPoint { pointPosition += 1 }
            }
        }
        // Strip leading zeros (moving the point) and trailing zeros.
        while digits.count > 1, digits.first == "0" {
            digits.removeFirst()
            pointPosition -= 1
        }
        while digits.count > 1, digits.last == "0" { digits.removeLast() }
        let k = digits.count
        let n = pointPosition + exponent
        var out = negative ? "-" : ""
        if k <= n && n <= 21 {
            out += digits + String(repeating: "0", count: n - k)
        } else if 0 < n && n <= 21 {
            out += String(digits.prefix(n)) + "." + String(digits.dropFirst(n))
        } else if -6 < n && n <= 0 {
            out += "0." + String(repeating: "0", count: -n) + digits
        } else {
            let e = n - 1
            out += String(digits.prefix(1))
            if k > 1 { out += "." + String(digits.dropFirst()) }
            out += "e" + (e >= 0 ? "+" : "-") + String(abs(e))
        }
        return out
    }
}
