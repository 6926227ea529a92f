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
        /// The server agreed to STARTTLS: start TLS on the connection, then call ``tlsStarted()``.
        case startTLS
        /// The message was accepted and QUIT answered: close the connection.
        case finished
        /// The server refused; close the connection. `transient` (4xx, or no greeting) is worth a retry.
        case failed(SMTPDeliveryError)
    }

    enum State: Sendable, Equatable {
        case greeting, ehlo, helo, startTLS, tlsEhlo, auth, mailFrom, rcptTo, data, message, quit, done
    }

    /// A login for `AUTH PLAIN`, only ever sent inside TLS.
    struct Credentials: Sendable, Equatable {
        var username: String
        var password: String
    }

    let clientName: String
    let from: String
    let to: String
    let message: String
    /// Upgrade with STARTTLS before anything else, and refuse to go on in the clear.
    let requireTLS: Bool
    let credentials: Credentials?
    private(set) var state = State.greeting
    /// Whether the server accepted the message (a `250` after its end): from then on it is delivered,
    /// whatever QUIT brings.
    private(set) var accepted = false

    init(clientName: String, from: String, to: String, message: String, requireTLS: Bool = false, credentials: Credentials? = nil) {
        self.clientName = clientName
        self.from = from
        self.to = to
        self.message = message
        // A login never crosses the network in the clear.
        self.requireTLS = requireTLS || credentials != nil
        self.credentials = credentials
    }

    /// TLS is up after ``Step/startTLS``: greet again, as RFC 3207 asks (the server forgets the first EHLO).
    mutating func tlsStarted() -> Step {
        guard state == .startTLS else { return fail(SMTPReply(code: 0, lines: []), during: "STARTTLS (out of order)", transient: false) }
        state = .tlsEhlo
        return .send("EHLO \(clientName)\r\n")
    }

    /// Whether an address can go between `<` and `>` in MAIL FROM or RCPT TO: one `@`, no control
    /// characters, spaces or angle brackets.
    static func isEnvelopeSafe(_ address: String) -> Bool {
        address.utf8.count <= 320 && address.split(separator: "@", omittingEmptySubsequences: false).count == 2
            && !address.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7F || $0 == "<" || $0 == ">" }
    }

    /// Whether an EHLO reply lists `keyword` (its lines after the first are `KEYWORD [params]`).
    static func advertises(_ reply: SMTPReply, _ keyword: String, parameter: String? = nil) -> Bool {
        reply.lines.dropFirst().contains { line in
            let words = line.uppercased().split(separator: " ")
            guard words.first.map(String.init) == keyword else { return false }
            return parameter.map { words.dropFirst().map(String.init).contains($0) } ?? true
        }
    }

    private mutating func afterGreeting(_ reply: SMTPReply) -> Step {
        if let credentials {
            guard Self.advertises(reply, "AUTH", parameter: "PLAIN") else {
                return fail(reply, during: "AUTH (the server offers no AUTH PLAIN)", transient: false)
            }
            state = .auth
            let token = Array("\u{0}\(credentials.username)\u{0}\(credentials.password)".utf8)
            return .send("AUTH PLAIN \(Data(token).base64EncodedString())\r\n")
        }
        state = .mailFrom
        return .send("MAIL FROM:<\(from)>\r\n")
    }

    mutating func receive(_ reply: SMTPReply) -> Step {
        switch state {
        case .greeting:
            // An address is written into the envelope commands: a line break in it would be a command
            // of its own (RCPT TO:<x>\r\nDATA…). Refused whatever the caller checked.
            guard Self.isEnvelopeSafe(from), Self.isEnvelopeSafe(to) else {
                return fail(SMTPReply(code: 0, lines: []), during: "envelope (an address SMTP cannot carry)", transient: false)
            }
            guard reply.code == 220 else { return fail(reply, during: "greeting") }
            state = .ehlo
            return .send("EHLO \(clientName)\r\n")
        case .ehlo:
            if reply.isPositive {
                guard requireTLS else { return afterGreeting(reply) }
                guard Self.advertises(reply, "STARTTLS") else {
                    return fail(reply, during: "STARTTLS (the server does not offer it)", transient: false)
                }
                state = .startTLS
                return .send("STARTTLS\r\n")
            }
            // A server from before ESMTP: say HELO instead (it cannot do STARTTLS).
            guard !requireTLS, reply.code == 500 || reply.code == 502 else { return fail(reply, during: "EHLO") }
            state = .helo
            return .send("HELO \(clientName)\r\n")
        case .helo:
            guard reply.isPositive else { return fail(reply, during: "HELO") }
            state = .mailFrom
            return .send("MAIL FROM:<\(from)>\r\n")
        case .startTLS:
            guard reply.code == 220 else { return fail(reply, during: "STARTTLS") }
            return .startTLS
        case .tlsEhlo:
            guard reply.isPositive else { return fail(reply, during: "EHLO after STARTTLS") }
            return afterGreeting(reply)
        case .auth:
            guard reply.code == 235 else { return fail(reply, during: "AUTH") }
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

    private mutating func fail(_ reply: SMTPReply, during phase: String, transient: Bool? = nil) -> Step {
        state = .done
        return .failed(SMTPDeliveryError(
            phase: phase, code: reply.code, transient: transient ?? reply.isTransient, text: reply.lines.joined(separator: " ")
        ))
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
