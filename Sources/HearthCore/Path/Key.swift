/// One segment of a database path: a child name such as `users` or `-NpK3x…`.
///
/// Keys compare and hash by their exact UTF-8 bytes, never by Unicode canonical equivalence:
/// Firebase treats `"é"` (precomposed) and `"e\u{301}"` as two different children, and so do we.
/// Their ``Comparable`` order is Firebase's key order: keys that parse as 32-bit integers first, in
/// numeric order, then the rest by UTF-16 code units.
///
/// For example:
/// ```swift
/// let key = try Key(validating: "users")
/// #expect(Key("2") < Key("10"))
/// ```
public struct Key: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The key as received.
    public let string: String
    /// The integer value when the key is integer-like (JS SDK rule `^-?0*\d{1,10}$` within Int32).
    public let integerValue: Int32?

    /// The longest key Firebase accepts, in UTF-8 bytes.
    public static let maximumByteCount = 768

    /// Makes a key without validating it; use for keys that are already known to be valid.
    public init(_ string: String) {
        self.string = string
        self.integerValue = Key.parseInteger(string)
    }

    /// Makes a key, checking Firebase's rules: non-empty, at most 768 UTF-8 bytes, none of `. $ # [ ] /`
    /// and no ASCII control characters.
    public init(validating string: String) throws(PathError) {
        try Key.validate(string)
        self.init(string)
    }

    public var description: String { string }

    /// `.priority`: not a child but a node's priority. No valid key can be it (keys have no `.`), so
    /// only the paths of a multi-location update carry it, as their last key (``DatabasePath/init(updateKey:)``),
    /// and ``Node/setting(_:at:)`` sets the priority of the node above it.
    public static let priority = Key(".priority")

    /// Whether this is ``priority``.
    public var isPriority: Bool { string == ".priority" }

    /// Checks a key against Firebase's rules.
    public static func validate(_ string: String) throws(PathError) {
        // Every key of every path and JSON object comes here: a valid key is checked on its contiguous
        // bytes; the walk below only finds which rule an invalid one breaks.
        if string.utf8.withContiguousStorageIfAvailable({ isValid(UnsafeRawBufferPointer($0)) }) == true { return }
        let utf8 = string.utf8
        if utf8.isEmpty { throw PathError(.emptyKey, "Invalid key: keys must not be empty") }
        if utf8.count > maximumByteCount {
            throw PathError(.keyTooLong, "Invalid key: keys must be at most \(maximumByteCount) bytes of UTF-8")
        }
        for byte in utf8 where isForbidden(byte) {
            throw PathError(
                .invalidCharacter,
                "Invalid key \"\(string)\": keys must not contain \".\", \"#\", \"$\", \"/\", \"[\", \"]\" or control characters"
            )
        }
    }

    /// Whether a key's UTF-8 bytes pass ``validate(_:)``, without making a string (the bulk import checks
    /// millions of keys; it calls ``validate(_:)`` only for the error of one that fails).
    ///
    /// For example:
    /// ```swift
    /// "users".utf8.withContiguousStorageIfAvailable { Key.isValid(UnsafeRawBufferPointer($0)) }  // true
    /// ```
    public static func isValid(_ utf8: UnsafeRawBufferPointer) -> Bool {
        guard !utf8.isEmpty, utf8.count <= maximumByteCount else { return false }
        for byte in utf8 where isForbidden(byte) { return false }
        return true
    }

    @inline(__always)
    static func isForbidden(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x00...0x1F, 0x7F, UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"), UInt8(ascii: "["),
            UInt8(ascii: "]"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    /// The JS SDK's `tryParseInt`: optional minus, any leading zeros, then 1-10 digits, within Int32.
    static func parseInteger(_ string: String) -> Int32? {
        if let parsed = string.utf8.withContiguousStorageIfAvailable({ parseInteger($0) }) { return parsed }
        var string = string
        return string.withUTF8 { parseInteger($0) }
    }

    static func parseInteger(_ utf8: UnsafeBufferPointer<UInt8>) -> Int32? {
        var start = 0
        guard let first = utf8.first else { return nil }
        // Most keys are names: they fail at their first byte.
        guard first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return nil }
        let negative = first == UInt8(ascii: "-")
        if negative { start = 1 }
        while utf8.count - start > 1, utf8[start] == UInt8(ascii: "0") { start += 1 }
        let digits = utf8.count - start
        guard digits > 0, digits <= 10 else { return nil }
        var value: Int64 = 0
        for byte in utf8[start...] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        if negative { value = -value }
        guard value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return Int32(value)
    }

    public static func == (lhs: Key, rhs: Key) -> Bool {
        // Byte equality, not String's (which equates canonically equivalent Unicode): compared as buffers,
        // since every lookup in the tree compares keys (a generic walk over the UTF-8 views was a sixth
        // of a read's lookup).
        guard lhs.string.utf8.count == rhs.string.utf8.count else { return false }
        return UTF16Order.withUTF8(lhs.string, rhs.string) { $0.elementsEqual($1) }
    }

    public func hash(into hasher: inout Hasher) {
        var string = self.string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Firebase's key order (the JS SDK's `nameCompare`).
    public static func < (lhs: Key, rhs: Key) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Three-way comparison in Firebase key order.
    @inline(__always)
    public static func compare(_ lhs: Key, _ rhs: Key) -> Int {
        switch (lhs.integerValue, rhs.integerValue) {
        case let (a?, b?):
            if a != b { return a < b ? -1 : 1 }
            let (la, lb) = (lhs.string.utf8.count, rhs.string.utf8.count)
            if la != lb { return la < lb ? -1 : 1 }
            return UTF16Order.compare(lhs.string, rhs.string)
        case (_?, nil): return -1
        case (nil, _?): return 1
        case (nil, nil): return UTF16Order.compare(lhs.string, rhs.string)
        }
    }
}

/// Comparison of strings by UTF-16 code units, as JavaScript's `<` does.
public enum UTF16Order {
    /// Three-way comparison by UTF-16 code units.
    ///
    /// Works on UTF-8 bytes: byte order equals code-point order, which equals UTF-16 order except when
    /// a supplementary character (UTF-16 surrogates, `0xD800…`) meets a BMP character at or above
    /// U+E000 at the first difference. That case is detected from the lead bytes and inverted.
    public static func compare(_ a: String, _ b: String) -> Int {
        withUTF8(a, b) { compare($0, $1) }
    }

    /// Calls `body` with the UTF-8 bytes of both strings: borrowed from native and small strings, with
    /// no copy of either (key comparisons run a million times sorting 100,000 keys, and on every
    /// lookup in the tree); bridged strings are made contiguous first.
    @inline(__always)
    static func withUTF8<Result>(
        _ a: String, _ b: String, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        let borrowed = a.utf8.withContiguousStorageIfAvailable { ua in
            b.utf8.withContiguousStorageIfAvailable { ub in body(ua, ub) }
        }
        if let result = borrowed ?? nil { return result }
        var a = a
        var b = b
        return a.withUTF8 { ua in b.withUTF8 { ub in body(ua, ub) } }
    }

    /// Three-way comparison of two UTF-8 buffers by UTF-16 code units.
    public static func compare(_ ua: UnsafeBufferPointer<UInt8>, _ ub: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(ua.count, ub.count)
        var i = 0
        while i < n {
            let x = ua[i]
            let y = ub[i]
            if x != y {
                // Lead bytes of a supplementary character are 0xF0...0xF4; U+E000...U+FFFF start 0xEE or 0xEF.
                if x >= 0xF0, y == 0xEE || y == 0xEF { return -1 }
                if y >= 0xF0, x == 0xEE || x == 0xEF { return 1 }
                return x < y ? -1 : 1
            }
            i += 1
        }
        return ua.count == ub.count ? 0 : (ua.count < ub.count ? -1 : 1)
    }
}
