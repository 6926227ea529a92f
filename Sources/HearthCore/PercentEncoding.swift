/// Percent-encoding of one URL component: everything but RFC 3986's unreserved characters
/// (`A–Z a–z 0–9 - . _ ~`) becomes `%XX` of its UTF-8 bytes, so `/` is `%2F`, `+` is `%2B` and a
/// space is `%20` — how object names travel as one path segment, and query values safely.
///
/// For example:
/// ```swift
/// PercentEncoding.component("photos/a b+c.jpg")  // "photos%2Fa%20b%2Bc.jpg"
/// PercentEncoding.component("it's (1)!", keeping: "!*'()")  // "it's%20(1)!", as encodeURIComponent
/// ```
public enum PercentEncoding {
    /// `keeping` names more ASCII characters to leave as they are.
    public static func component(_ text: String, keeping: String = "") -> String {
        // Most names need no escape (every file download names its file): then the text is the answer.
        if text.utf8.allSatisfy(isUnreserved) { return text }
        let kept = keeping.utf8
        var result = [UInt8]()
        result.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if isUnreserved(byte) || kept.contains(byte) {
                result.append(byte)
            } else {
                result.append(UInt8(ascii: "%"))
                result.append(hexDigits[Int(byte >> 4)])
                result.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// RFC 3986's unreserved characters.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)
}

/// Percent-decoding that leaves `+` alone.
public enum PercentDecoding {
    /// Decodes `%XX` escapes as UTF-8; nil when an escape is malformed or the result is not UTF-8.
    public static func decode(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard bytes.count >= 2, let high = hex(bytes[bytes.startIndex]), let low = hex(bytes[bytes.startIndex + 1])
                else { return nil }
                out.append(high << 4 | low)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// One component of a query string or an `application/x-www-form-urlencoded` body: `+` is a
    /// space, then `%XX` escapes are decoded; nil when an escape is malformed.
    ///
    /// For example: `PercentDecoding.decodeFormComponent("a+b%2Bc")` is `"a b+c"`.
    public static func decodeFormComponent(_ text: Substring) -> String? {
        decode(plusAsSpace(text))
    }

    /// `text` with each `+` as the space it stands for in a form. On the bytes (both are ASCII):
    /// Foundation's `replacingOccurrences` showed in every file download's profile.
    public static func plusAsSpace(_ text: Substring) -> String {
        guard text.utf8.contains(UInt8(ascii: "+")) else { return String(text) }
        return String(decoding: text.utf8.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
