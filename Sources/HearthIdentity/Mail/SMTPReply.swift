/// One reply of an SMTP server (RFC 5321 §4.2): a three-digit code and its text lines.
///
/// For example:
/// ```swift
/// var parser = SMTPReplyParser()
/// let replies = parser.feed(Array("250-mail.example.com\r\n250 STARTTLS\r\n".utf8))
/// // replies == [SMTPReply(code: 250, lines: ["mail.example.com", "STARTTLS"])]
/// ```
struct SMTPReply: Sendable, Equatable {
    var code: Int
    var lines: [String]

    /// 2xx: the command was accepted.
    var isPositive: Bool { (200..<300).contains(code) }
    /// 4xx: refused for now; worth trying the message again later.
    var isTransient: Bool { (400..<500).contains(code) }
}

/// Splits the bytes an SMTP server sends into replies: lines end with CRLF, and a reply's lines all
/// but the last have a `-` after the code (`250-…`, then `250 …`).
struct SMTPReplyParser: Sendable {
    private var pending: [UInt8] = []
    private var lines: [String] = []
    /// Guards against a server that never ends a line.
    static let maximumLineBytes = 4096

    enum Failure: Error, Equatable {
        case malformed(String)
        case lineTooLong
    }

    /// Whether bytes of an unfinished reply are waiting.
    var hasBufferedBytes: Bool { !pending.isEmpty || !lines.isEmpty }

    /// The replies completed by these bytes, in order.
    mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [SMTPReply] {
        pending.append(contentsOf: bytes)
        var replies: [SMTPReply] = []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            var line = Array(pending[..<newline])
            pending.removeSubrange(...newline)
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            let text = String(decoding: line, as: UTF8.self)
            guard line.count >= 3, let code = Int(String(decoding: line[0..<3], as: UTF8.self)), (200..<600).contains(code) else {
                throw Failure.malformed(text)
            }
            let separator = line.count > 3 ? line[3] : UInt8(ascii: " ")
            guard separator == UInt8(ascii: " ") || separator == UInt8(ascii: "-") else { throw Failure.malformed(text) }
            lines.append(line.count > 4 ? String(decoding: line[4...], as: UTF8.self) : "")
            if separator == UInt8(ascii: " ") {
                replies.append(SMTPReply(code: code, lines: lines))
                lines = []
            }
        }
        if pending.count > Self.maximumLineBytes { throw Failure.lineTooLong }
        return replies
    }
}
