#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A recursive-descent JSON parser over UTF-8 bytes.
///
/// Hand-written rather than Foundation's `JSONSerialization` because we need exact key bytes, key order,
/// JavaScript number semantics and speed for imports (see `docs/decisions/0002-json.md`). The scanning
/// primitives are shared with the streaming importer.
public struct JSONParser {
    public let bytes: UnsafeRawBufferPointer
    public var offset: Int
    /// Containers nested deeper than this are rejected, so hostile input cannot exhaust the stack.
    public var maximumNesting = 512
    /// Half of a UTF-16 surrogate pair (`"\ud83d"` alone, as JavaScript's `JSON.stringify` writes a
    /// string cut inside an emoji) becomes U+FFFD instead of failing the parse. Off by default: data
    /// with one is refused; the WebSocket uses it only to find which request to refuse.
    public var replacesUnpairedSurrogates = false

    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        self.offset = 0
    }

    /// Parses exactly one JSON value surrounded by optional whitespace.
    public mutating func parseDocument() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if offset != bytes.count { throw JSONError("Unexpected data after the JSON value", offset: offset) }
        return value
    }

    public mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        guard offset < bytes.count else { throw JSONError("Unexpected end of JSON", offset: offset) }
        switch bytes[offset] {
        case UInt8(ascii: "{"):
            guard depth < maximumNesting else { throw JSONError("JSON nested too deeply", offset: offset) }
            offset += 1
            var members: [(key: String, value: JSONValue)] = []
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                offset += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                let key = try parseString()
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                let value = try parseValue(depth: depth + 1)
                members.append((key, value))
                skipWhitespace()
                if try endOfContainer(UInt8(ascii: "}")) { return .object(members) }
            }
        case UInt8(ascii: "["):
            guard depth < maximumNesting else { throw JSONError("JSON nested too deeply", offset: offset) }
            offset += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                offset += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try parseValue(depth: depth + 1))
                skipWhitespace()
                if try endOfContainer(UInt8(ascii: "]")) { return .array(elements) }
            }
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default:
            return .number(try parseNumber())
        }
    }

    /// Moves past one value without building it: a structural scan that finds the value's end (string
    /// ends and bracket nesting only). It validates nothing else, so a caller that skips a value to
    /// come back to it later still parses it for real then.
    public mutating func skipValue() throws(JSONError) {
        guard offset < bytes.count, let base = bytes.baseAddress else { throw JSONError("Unexpected end of JSON", offset: offset) }
        let count = bytes.count
        var i = offset
        switch base.load(fromByteOffset: i, as: UInt8.self) {
        case UInt8(ascii: "\""):
            offset = try endOfString(base, count, from: i + 1)
            return
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            repeat {
                guard i < count else { throw JSONError("Unexpected end of JSON", offset: i) }
                switch base.load(fromByteOffset: i, as: UInt8.self) {
                case UInt8(ascii: "\""):
                    i = try endOfString(base, count, from: i + 1)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    guard depth <= maximumNesting else { throw JSONError("JSON nested too deeply", offset: i) }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                default:
                    break
                }
                i += 1
            } while depth > 0
            offset = i
        default:
            while i < count {
                switch base.load(fromByteOffset: i, as: UInt8.self) {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09:
                    offset = i
                    return
                default:
                    i += 1
                }
            }
            offset = i
        }
    }

    /// Moves past a string of printable ASCII without escapes (its opening quote at `offset`) and returns
    /// true; for any other string returns false and moves nothing. Such a string's JSON text is its
    /// value, so the common case needs no decoding, UTF-8 check or allocation.
    public mutating func skipPlainASCIIString() -> Bool {
        guard offset < bytes.count, let base = bytes.baseAddress, base.load(fromByteOffset: offset, as: UInt8.self) == UInt8(ascii: "\"")
        else { return false }
        var i = offset + 1
        while i < bytes.count {
            let byte = base.load(fromByteOffset: i, as: UInt8.self)
            if byte == UInt8(ascii: "\"") {
                offset = i + 1
                return true
            }
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\\") { return false }
            i += 1
        }
        return false
    }

    /// The index after the closing quote of the string whose contents start at `start`.
    private func endOfString(_ base: UnsafeRawPointer, _ count: Int, from start: Int) throws(JSONError) -> Int {
        var i = start
        while i < count {
            guard let found = memchr(base + i, Int32(UInt8(ascii: "\"")), count - i) else { break }
            let quote = base.distance(to: UnsafeRawPointer(found))
            var backslashes = 0
            while quote - backslashes - 1 >= start, base.load(fromByteOffset: quote - backslashes - 1, as: UInt8.self) == UInt8(ascii: "\\") {
                backslashes += 1
            }
            if backslashes % 2 == 0 { return quote + 1 }
            i = quote + 1
        }
        throw JSONError("Unterminated string", offset: start - 1)
    }

    /// After a member or element: consumes `,` (returns false) or the closing bracket (returns true).
    public mutating func endOfContainer(_ close: UInt8) throws(JSONError) -> Bool {
        guard offset < bytes.count else { throw JSONError("Unexpected end of JSON", offset: offset) }
        let byte = bytes[offset]
        offset += 1
        if byte == UInt8(ascii: ",") { return false }
        if byte == close { return true }
        throw JSONError("Expected ',' or '\(Character(Unicode.Scalar(close)))'", offset: offset - 1)
    }

    @inline(__always)
    public func peek() -> UInt8? {
        offset < bytes.count ? bytes[offset] : nil
    }

    @inline(__always)
    public mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    public mutating func expect(_ byte: UInt8) throws(JSONError) {
        guard offset < bytes.count, bytes[offset] == byte else {
            throw JSONError("Expected '\(Character(Unicode.Scalar(byte)))'", offset: offset)
        }
        offset += 1
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let count = literal.utf8CodeUnitCount
        guard offset + count <= bytes.count else { throw JSONError("Invalid literal", offset: offset) }
        let base = literal.utf8Start
        for i in 0..<count where bytes[offset + i] != base[i] {
            throw JSONError("Invalid literal", offset: offset)
        }
        offset += count
    }

    /// Parses a JSON number into a double, as JavaScript's `JSON.parse` does.
    public mutating func parseNumber() throws(JSONError) -> Double {
        let start = offset
        var i = offset
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        let intStart = i
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
        let intDigits = i - intStart
        guard intDigits > 0 else { throw JSONError("Invalid JSON value", offset: start) }
        if intDigits > 1, bytes[intStart] == UInt8(ascii: "0") { throw JSONError("Invalid number", offset: start) }
        var isInteger = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            let fracStart = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            guard i > fracStart else { throw JSONError("Invalid number", offset: start) }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            let expStart = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            guard i > expStart else { throw JSONError("Invalid number", offset: start) }
        }
        offset = i
        if isInteger && intDigits <= 15 {
            // Fast path: exact in a double.
            var value: Int64 = 0
            for j in intStart..<i { value = value &* 10 &+ Int64(bytes[j] &- UInt8(ascii: "0")) }
            return bytes[start] == UInt8(ascii: "-") ? (value == 0 ? -0.0 : -Double(value)) : Double(value)
        }
        // strtod needs a terminated buffer; numbers are short, so copy onto the stack.
        let length = i - start
        let value = withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer in
            for j in 0..<length { buffer[j] = CChar(bitPattern: bytes[start + j]) }
            buffer[length] = 0
            return strtod(buffer.baseAddress!, nil)
        }
        // `1e999` is Infinity to strtod: no JSON value (nor one Firebase stores), and it would be written
        // out as `Infinity`, which no JSON parser reads back.
        guard value.isFinite else { throw JSONError("Number out of range", offset: start) }
        return value
    }

    /// Parses a JSON string (the opening quote is at `offset`), checking that it is valid UTF-8.
    public mutating func parseString() throws(JSONError) -> String {
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
            throw JSONError("Expected a string", offset: offset)
        }
        offset += 1
        let start = offset
        // Fast path: no escapes.
        var i = start
        var allBits: UInt8 = 0
        while i < bytes.count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") {
                offset = i + 1
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                // ASCII is valid UTF-8: skip the (generic, slower) validation.
                if allBits < 0x80 { return String(decoding: raw.assumingMemoryBound(to: UInt8.self), as: UTF8.self) }
                return try makeString(raw, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw JSONError("Control character in string", offset: i) }
            allBits |= byte
            i += 1
        }
        var scratch = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") {
                offset = i + 1
                guard let string = String(validating: scratch, as: UTF8.self) else {
                    throw JSONError("Invalid UTF-8 in string", offset: start)
                }
                return string
            }
            if byte < 0x20 { throw JSONError("Control character in string", offset: i) }
            if byte != UInt8(ascii: "\\") {
                scratch.append(byte)
                i += 1
                continue
            }
            i += 1
            guard i < bytes.count else { break }
            let escape = bytes[i]
            i += 1
            switch escape {
            case UInt8(ascii: "\""): scratch.append(0x22)
            case UInt8(ascii: "\\"): scratch.append(0x5C)
            case UInt8(ascii: "/"): scratch.append(0x2F)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                var unit = try hex4(at: i)
                i += 4
                var scalarValue = UInt32(unit)
                if (0xD800...0xDBFF).contains(unit) {
                    if i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u"),
                        case let low = try hex4(at: i + 2), (0xDC00...0xDFFF).contains(low)
                    {
                        i += 6
                        scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                        unit = 0
                    } else if replacesUnpairedSurrogates {
                        scalarValue = 0xFFFD
                    } else {
                        throw JSONError("Unpaired surrogate in string", offset: i)
                    }
                } else if (0xDC00...0xDFFF).contains(unit) {
                    guard replacesUnpairedSurrogates else { throw JSONError("Unpaired surrogate in string", offset: i) }
                    scalarValue = 0xFFFD
                }
                guard let scalar = Unicode.Scalar(scalarValue) else { throw JSONError("Invalid escape", offset: i) }
                scratch.append(contentsOf: String(Character(scalar)).utf8)
            default:
                throw JSONError("Invalid escape in string", offset: i - 1)
            }
        }
        throw JSONError("Unterminated string", offset: start - 1)
    }

    private func hex4(at index: Int) throws(JSONError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw JSONError("Invalid \\u escape", offset: index) }
        var value: UInt16 = 0
        for j in index..<(index + 4) {
            let c = bytes[j]
            let digit: UInt16
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt16(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt16(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt16(c - UInt8(ascii: "A") + 10)
            default: throw JSONError("Invalid \\u escape", offset: index)
            }
            value = value << 4 | digit
        }
        return value
    }

    private func makeString(_ raw: UnsafeRawBufferPointer, at position: Int) throws(JSONError) -> String {
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw JSONError("Invalid UTF-8 in string", offset: position)
        }
        return string
    }
}
