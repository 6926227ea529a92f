import Foundation

/// The client's side of one SMTP mail transaction (RFC 5321), as a state machine without I/O: it is
/// given each server reply and answers with what to send next, so every path (greeting, EHLO or HELO,
/// MAIL, RCPT, DATA, QUIT, and each refusal) is tested without a network.
///
/// For example:
/// ```swift
/// var conversation = SMTPConversation(clientName: "hearth.local", from: "noreply@example.com",
///                                     to: "ada@example.com", message: text)
/// var next = conversation.receive(SMTPReply(code: 220, lines: ["mail.example.com ESMTP"]))
/// // next == .send("EHLO hearth.local\r\n")
/// ```
struct SMTPConversation: Sendable {
    /// What the client does after a reply.
    enum Step: Sendable, Equatable {
        /// Write these bytes (a command, or the message with its end marker).
        case send(String)
        /// The message was accepted and QUIT answered: close the connection.
        case finished
        /// The server refused; close the connection. `transient` (4xx, or no greeting) is worth a retry.
        case failed(SMTPDeliveryError)
    }

    enum State: Sendable, Equatable {
        case greeting, ehlo, helo, mailFrom, rcptTo, data, message, quit, done
    }

    let clientName: String
    let from: String
    let to: String
    let message: String
    private(set) var state = State.greeting
    /// Whether the server accepted the message (a `250` after its end): from then on it is delivered,
    /// whatever QUIT brings.
    private(set) var accepted = false

    init(clientName: String, from: String, to: String, message: String) {
        self.clientName = clientName
        self.from = from
        self.to = to
        self.message = message
    }

    mutating func receive(_ reply: SMTPReply) -> Step {
        switch state {
        case .greeting:
            guard reply.code == 220 else { return fail(reply, during: "greeting") }
            state = .ehlo
            return .send("EHLO \(clientName)\r\n")
        case .ehlo:
            if reply.isPositive {
                state = .mailFrom
                return .send("MAIL FROM:<\(from)>\r\n")
            }
            // A server from before ESMTP: say HELO instead.
            guard reply.code == 500 || reply.code == 502 else { return fail(reply, during: "EHLO") }
            state = .helo
            return .send("HELO \(clientName)\r\n")
        case .helo:
            guard reply.isPositive else { return fail(reply, during: "HELO") }
            state = .mailFrom
            return .send("MAIL FROM:<\(from)>\r\n")
        case .mailFrom:
            guard reply.isPositive else { return fail(reply, during: "MAIL FROM") }
            state = .rcptTo
            return .send("RCPT TO:<\(to)>\r\n")
        case .rcptTo:
            guard reply.isPositive else { return fail(reply, during: "RCPT TO") }
            state = .data
            return .send("DATA\r\n")
        case .data:
            guard reply.code == 354 else { return fail(reply, during: "DATA") }
            state = .message
            return .send(Self.dotStuffed(message) + ".\r\n")
        case .message:
            guard reply.isPositive else { return fail(reply, during: "the message") }
            accepted = true
            state = .quit
            return .send("QUIT\r\n")
        case .quit:
            state = .done
            return .finished
        case .done:
            return .finished
        }
    }

    private mutating func fail(_ reply: SMTPReply, during phase: String) -> Step {
        state = .done
        return .failed(SMTPDeliveryError(phase: phase, code: reply.code, transient: reply.isTransient, text: reply.lines.joined(separator: " ")))
    }

    /// The message with CRLF line ends and every line that starts with `.` given another one
    /// (RFC 5321 §4.5.2), ending in CRLF, so the end marker cannot occur inside it.
    static func dotStuffed(_ message: String) -> String {
        var lines = message.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines.map { $0.hasPrefix(".") ? "." + $0 : $0 }.map { $0 + "\r\n" }.joined()
    }
}

/// Why a message was not delivered.
struct SMTPDeliveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The step that failed: `connect`, `greeting`, `RCPT TO`, ….
    var phase: String
    /// The server's reply code (0 when there was none).
    var code: Int
    /// Worth trying again later (4xx, or the server could not be reached).
    var transient: Bool
    /// The server's words (may echo the recipient's address: logged at trace level only).
    var text: String

    /// Without the server's text, which may name the recipient.
    var description: String { code == 0 ? "\(phase) failed" : "\(phase) refused with \(code)" }
}
