/// The token scanning both rules languages share: operators that must not be cut out of longer ones,
/// identifiers, string literals with their escapes, and the character classes. The database rules'
/// ``Parser`` and the storage rules' parser each adopt it, and add only their language's grammar (and
/// storage rules' comments).
///
/// A parser states the differences between the languages (``longerOperators``, ``stringSyntax``,
/// ``identifiersMayStartWithDollar``); everything else is one implementation.
///
/// For example:
/// ```swift
/// struct Tokens: RulesScanner {
///     let bytes: [UInt8]
///     var offset = 0
///     static let longerOperators: [StaticString] = ["<="]
///     static let stringSyntax = RulesStringSyntax.databaseRules
///     static let identifiersMayStartWithDollar = false
///     func error(_ message: String) -> Diagnostic { Diagnostic(line: 1, column: offset + 1, message: message) }
/// }
/// var tokens = Tokens(bytes: Array("<= 'a\\n'".utf8))
/// tokens.scanOperator("<")  // false: '<' is not taken out of '<='
/// ```
package protocol RulesScanner {
    var bytes: [UInt8] { get }
    var offset: Int { get set }
    /// Operators of the language that start with a shorter one: `<` is not taken out of `<=`.
    static var longerOperators: [StaticString] { get }
    static var stringSyntax: RulesStringSyntax { get }
    /// Database rules name `$location` variables; storage rules have no `$`.
    static var identifiersMayStartWithDollar: Bool { get }
    /// A diagnostic at the current offset.
    func error(_ message: String) -> Diagnostic
}

/// How a language's string literals read, where the two rules languages differ.
package struct RulesStringSyntax: Sendable {
    /// Storage rules strings end on their line; database rules strings (inside JSON) may span lines.
    package var endsAtLineBreak: Bool
    /// `\b \f \v \0 \xHH` as well as `\n \t \r \uXXXX`.
    package var extendedEscapes: Bool
    /// An unknown escape such as `\d` keeps its backslash (storage rules, so regular expressions read as
    /// written); otherwise it stands for the escaped character.
    package var unknownEscapesKeepBackslash: Bool

    package static let databaseRules = RulesStringSyntax(endsAtLineBreak: false, extendedEscapes: false, unknownEscapesKeepBackslash: false)
    package static let storageRules = RulesStringSyntax(endsAtLineBreak: true, extendedEscapes: true, unknownEscapesKeepBackslash: true)
}

extension RulesScanner {
    package func peek(_ token: StaticString) -> Bool {
        let count = token.utf8CodeUnitCount
        guard offset + count <= bytes.count else { return false }
        let base = token.utf8Start
        for i in 0..<count where bytes[offset + i] != base[i] { return false }
        return true
    }

    /// Consumes an operator or punctuation token at the offset, unless it is the start of one of the
    /// language's ``longerOperators``. Skips nothing.
    package mutating func scanOperator(_ token: StaticString) -> Bool {
        guard peek(token) else { return false }
        let count = token.utf8CodeUnitCount
        for longer in Self.longerOperators where longer.utf8CodeUnitCount > count && peek(longer) {
            let prefix = UnsafeBufferPointer(start: longer.utf8Start, count: count)
            if prefix.elementsEqual(UnsafeBufferPointer(start: token.utf8Start, count: count)) { return false }
        }
        offset += count
        return true
    }

    /// An identifier at the offset, consumed; nil when none starts there. Skips nothing.
    package mutating func scanIdentifier() -> String? {
        guard offset < bytes.count, isIdentifierStart(bytes[offset]) else { return nil }
        let start = offset
        while offset < bytes.count, isIdentifierPart(bytes[offset]) { offset += 1 }
        return String(decoding: bytes[start..<offset], as: UTF8.self)
    }

    package mutating func skipWhitespace() {
        while offset < bytes.count, isWhitespace(bytes[offset]) { offset += 1 }
    }

    /// A string in '…' or "…" at the offset (on its opening quote), consumed up to its closing quote.
    package mutating func scanString() throws(Diagnostic) -> String {
        let syntax = Self.stringSyntax
        let quote = bytes[offset]
        let start = offset
        offset += 1
        var out: [UInt8] = []
        while offset < bytes.count, bytes[offset] != quote {
            let c = bytes[offset]
            if c == 0x0A, syntax.endsAtLineBreak {
                offset = start
                throw error("unterminated string (strings end on the same line)")
            }
            guard c == UInt8(ascii: "\\"), offset + 1 < bytes.count else {
                out.append(c)
                offset += 1
                continue
            }
            let escape = bytes[offset + 1]
            offset += 2
            switch escape {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "b") where syntax.extendedEscapes: out.append(0x08)
            case UInt8(ascii: "f") where syntax.extendedEscapes: out.append(0x0C)
            case UInt8(ascii: "v") where syntax.extendedEscapes: out.append(0x0B)
            case UInt8(ascii: "0") where syntax.extendedEscapes: out.append(0x00)
            case UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\""): out.append(escape)
            case UInt8(ascii: "u"), UInt8(ascii: "x") where escape == UInt8(ascii: "u") || syntax.extendedEscapes:
                let count = escape == UInt8(ascii: "u") ? 4 : 2
                guard offset + count <= bytes.count,
                    let value = UInt32(String(decoding: bytes[offset..<(offset + count)], as: UTF8.self), radix: 16),
                    let scalar = Unicode.Scalar(value)
                else { throw error("invalid \\\(Character(Unicode.Scalar(escape))) escape") }
                out.append(contentsOf: String(Character(scalar)).utf8)
                offset += count
            default:
                if syntax.unknownEscapesKeepBackslash { out.append(c) }
                out.append(escape)
            }
        }
        guard offset < bytes.count else {
            offset = start
            throw error("unterminated string")
        }
        offset += 1
        return String(decoding: out, as: UTF8.self)
    }

    package func isWhitespace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
    package func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    package func isHexDigit(_ c: UInt8) -> Bool { isDigit(c) || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "f")) }
    package func isIdentifierStart(_ c: UInt8) -> Bool {
        (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "z")) || c == UInt8(ascii: "_")
            || (Self.identifiersMayStartWithDollar && c == UInt8(ascii: "$"))
    }
    package func isIdentifierPart(_ c: UInt8) -> Bool { isIdentifierStart(c) || isDigit(c) }
}
