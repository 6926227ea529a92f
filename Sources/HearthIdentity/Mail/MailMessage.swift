import Foundation

/// The text of an email (RFC 5322) as Hearth sends it: plain UTF-8 text, base64-encoded so it passes
/// any server (no reliance on 8BITMIME), headers stripped of line breaks so no value can add a header.
///
/// For example:
/// ```swift
/// let text = MailMessage(from: "noreply@example.com", to: "ada@example.com", subject: "Reset your password",
///                        body: "Hello…", date: Date(), messageID: "<1@hearth>").text
/// ```
struct MailMessage: Sendable, Equatable {
    var from: String
    var to: String
    var subject: String
    var body: String
    var date: Date
    var messageID: String

    var text: String {
        let headers = [
            "From: \(Self.headerValue(from))",
            "To: \(Self.headerValue(to))",
            "Subject: \(Self.encodedWord(Self.headerValue(subject)))",
            "Date: \(Self.rfc5322Date(date))",
            "Message-ID: \(Self.headerValue(messageID))",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: base64",
            "Auto-Submitted: auto-generated",
        ]
        let normalized = body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        let encoded = Data(normalized.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + encoded + "\r\n"
    }

    /// A header value on one line: CR and LF (and other controls) become spaces.
    static func headerValue(_ value: String) -> String {
        String(value.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
    }

    /// ASCII as it is; anything else as an RFC 2047 encoded word.
    static func encodedWord(_ value: String) -> String {
        if value.unicodeScalars.allSatisfy({ $0.isASCII }) { return value }
        return "=?UTF-8?B?" + Data(value.utf8).base64EncodedString() + "?="
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
