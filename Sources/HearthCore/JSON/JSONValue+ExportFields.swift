import Foundation

/// Reading fields of files other tools wrote (the Emulator Suite's exports), which give the same
/// thing in more than one JSON form.
extension JSONValue {
    /// A whole number written as a JSON number or as decimal text (`1700000000000` or
    /// `"1700000000000"`: firebase-tools writes times both ways).
    ///
    /// For example: `try JSONValue(parsing: #""42""#).wholeNumber == 42`.
    public var wholeNumber: Int64? {
        switch self {
        case .number(let number): Int64(exactly: number.rounded())
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// Milliseconds since 1970 of an RFC 3339 time, with or without fractional seconds
    /// (`2023-11-14T22:13:20.000Z`).
    ///
    /// For example: `JSONValue.string("1970-01-01T00:00:01.500Z").rfc3339Milliseconds == 1500`.
    public var rfc3339Milliseconds: Int64? {
        guard case .string(let text) = self else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}
