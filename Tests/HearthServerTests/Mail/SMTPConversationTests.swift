import Foundation
@testable import HearthIdentity
@testable import HearthServer
import Testing

@Suite struct SMTPConversationTests {
    static func reply(_ code: Int, _ text: String = "ok") -> SMTPReply { SMTPReply(code: code, lines: [text]) }

    func conversation(_ message: String = "Subject: hi\r\n\r\nbody\r\n") -> SMTPConversation {
        SMTPConversation(clientName: "hearth.test", from: "noreply@example.com", to: "ada@example.com", message: message)
    }

    @Test func aWholeTransaction() {
        var smtp = conversation()
        #expect(smtp.receive(Self.reply(220, "mail.example.com ESMTP")) == .send("EHLO hearth.test\r\n"))
        #expect(smtp.receive(SMTPReply(code: 250, lines: ["mail.example.com", "8BITMIME", "SIZE 1000"])) == .send("MAIL FROM:<noreply@example.com>\r\n"))
        #expect(smtp.receive(Self.reply(250)) == .send("RCPT TO:<ada@example.com>\r\n"))
        #expect(smtp.receive(Self.reply(250)) == .send("DATA\r\n"))
        #expect(smtp.receive(Self.reply(354, "go ahead")) == .send("Subject: hi\r\n\r\nbody\r\n.\r\n"))
        #expect(!smtp.accepted)
        #expect(smtp.receive(Self.reply(250, "queued")) == .send("QUIT\r\n"))
        #expect(smtp.accepted)
        #expect(smtp.receive(Self.reply(221)) == .finished)
    }

    @Test func anAddressWithALineBreakNeverReachesTheServer() {
        var smtp = SMTPConversation(
            clientName: "hearth.test", from: "noreply@example.com", to: "x>\r\nRCPT TO:<victim@evil.example>\r\nDATA", message: "body"
        )
        #expect(smtp.receive(Self.reply(220)) == .failed(SMTPDeliveryError(
            phase: "envelope (an address SMTP cannot carry)", code: 0, transient: false, text: ""
        )))
        for address in ["a b@example.com", "a<b@example.com", "a@b@example.com", "a\u{7F}@example.com", "ada@example.com\n"] {
            #expect(!SMTPConversation.isEnvelopeSafe(address), "\(address)")
        }
        #expect(SMTPConversation.isEnvelopeSafe("ada.lovelace+math@example.co.uk"))
    }

    @Test func theParserTellsWhatCameAfterAReply() throws {
        // What the client checks at STARTTLS: bytes after the 220 were sent in the clear.
        var parser = SMTPReplyParser()
        #expect(try parser.feed(Array("220 go ahead\r\n".utf8)).map(\.code) == [220])
        #expect(!parser.hasBufferedBytes)
        #expect(try parser.feed(Array("220 go ahead\r\n250 inj".utf8)).map(\.code) == [220])
        #expect(parser.hasBufferedBytes)
        var multiline = SMTPReplyParser()
        #expect(try multiline.feed(Array("250-first\r\n".utf8)).isEmpty)
        #expect(multiline.hasBufferedBytes)
    }

    @Test func aServerWithoutEHLOGetsHELO() {
        var smtp = conversation()
        _ = smtp.receive(Self.reply(220))
        #expect(smtp.receive(Self.reply(502, "command not implemented")) == .send("HELO hearth.test\r\n"))
        #expect(smtp.receive(Self.reply(250)) == .send("MAIL FROM:<noreply@example.com>\r\n"))
    }

    @Test func refusalsSayWhetherARetryMakesSense() {
        var busy = conversation()
        #expect(busy.receive(Self.reply(421, "too busy")) == .failed(SMTPDeliveryError(phase: "greeting", code: 421, transient: true, text: "too busy")))
        var unknown = conversation()
        _ = unknown.receive(Self.reply(220))
        _ = unknown.receive(Self.reply(250))
        _ = unknown.receive(Self.reply(250))
        let refused = unknown.receive(Self.reply(550, "no such user <ada@example.com>"))
        #expect(refused == .failed(SMTPDeliveryError(phase: "RCPT TO", code: 550, transient: false, text: "no such user <ada@example.com>")))
        // The description, which is logged, leaves out the server's words (they may name the recipient).
        if case .failed(let error) = refused { #expect(!error.description.contains("ada")) }
        var greylisted = conversation()
        _ = greylisted.receive(Self.reply(220))
        _ = greylisted.receive(Self.reply(250))
        _ = greylisted.receive(Self.reply(250))
        _ = greylisted.receive(Self.reply(250))
        _ = greylisted.receive(Self.reply(354))
        #expect(greylisted.receive(Self.reply(451, "try later")) == .failed(SMTPDeliveryError(phase: "the message", code: 451, transient: true, text: "try later")))
        #expect(!greylisted.accepted)
    }

    @Test func startTLSThenALoginInsideIt() {
        var smtp = SMTPConversation(
            clientName: "hearth.test", from: "noreply@example.com", to: "ada@example.com", message: "x\r\n",
            credentials: .init(username: "mailer", password: "pw")
        )
        _ = smtp.receive(Self.reply(220))
        // Credentials imply TLS: no MAIL FROM, no AUTH before it.
        #expect(smtp.receive(SMTPReply(code: 250, lines: ["mail.example.com", "STARTTLS", "AUTH PLAIN LOGIN"])) == .send("STARTTLS\r\n"))
        #expect(smtp.receive(Self.reply(220, "go ahead")) == .startTLS)
        #expect(smtp.tlsStarted() == .send("EHLO hearth.test\r\n"))
        let login = "AUTH PLAIN " + Data("\u{0}mailer\u{0}pw".utf8).base64EncodedString() + "\r\n"
        #expect(smtp.receive(SMTPReply(code: 250, lines: ["mail.example.com", "AUTH LOGIN PLAIN"])) == .send(login))
        #expect(smtp.receive(Self.reply(235)) == .send("MAIL FROM:<noreply@example.com>\r\n"))
    }

    @Test func withoutSTARTTLSOnOfferNothingIsSent() {
        var smtp = SMTPConversation(clientName: "h", from: "a@b.c", to: "d@e.f", message: "x", requireTLS: true)
        _ = smtp.receive(Self.reply(220))
        guard case .failed(let error) = smtp.receive(SMTPReply(code: 250, lines: ["mail.example.com", "8BITMIME"])) else {
            Issue.record("expected a failure")
            return
        }
        #expect(!error.transient)
        var old = SMTPConversation(clientName: "h", from: "a@b.c", to: "d@e.f", message: "x", requireTLS: true)
        _ = old.receive(Self.reply(220))
        guard case .failed = old.receive(Self.reply(502)) else {
            Issue.record("a server without EHLO cannot do STARTTLS")
            return
        }
        var noPlain = SMTPConversation(clientName: "h", from: "a@b.c", to: "d@e.f", message: "x", credentials: .init(username: "u", password: "p"))
        _ = noPlain.receive(Self.reply(220))
        _ = noPlain.receive(SMTPReply(code: 250, lines: ["m", "STARTTLS"]))
        _ = noPlain.receive(Self.reply(220))
        _ = noPlain.tlsStarted()
        guard case .failed = noPlain.receive(SMTPReply(code: 250, lines: ["m", "AUTH CRAM-MD5"])) else {
            Issue.record("expected a failure without AUTH PLAIN")
            return
        }
    }

    @Test func linesStartingWithADotAreStuffedAndLineEndsAreCRLF() {
        #expect(SMTPConversation.dotStuffed("a\n.\n..b\nc") == "a\r\n..\r\n...b\r\nc\r\n")
        #expect(SMTPConversation.dotStuffed("a\r\nb\r\n") == "a\r\nb\r\n")
    }

    @Test func repliesAreSplitAcrossReadsAndLines() throws {
        var parser = SMTPReplyParser()
        #expect(try parser.feed(Array("250-first\r\n250-sec".utf8)) == [])
        #expect(try parser.feed(Array("ond\r\n250 last\r\n220 next\r\n".utf8)) == [
            SMTPReply(code: 250, lines: ["first", "second", "last"]), SMTPReply(code: 220, lines: ["next"]),
        ])
        #expect(try parser.feed(Array("354\r\n".utf8)) == [SMTPReply(code: 354, lines: [""])])
        #expect(throws: SMTPReplyParser.Failure.self) { try parser.feed(Array("hello\r\n".utf8)) }
        var flooded = SMTPReplyParser()
        #expect(throws: SMTPReplyParser.Failure.lineTooLong) { try flooded.feed([UInt8](repeating: 65, count: 5000)) }
    }

    @Test func theMessageIsBase64UTF8WithHeadersOnOneLineEach() throws {
        let message = MailMessage(
            from: "noreply@example.com", to: "ada@example.com", subject: "Réinitialiser\r\nBcc: evil@example.com",
            body: "Hello,\n\nhttp://127.0.0.1/__/auth/action?oobCode=abc\n", date: Date(timeIntervalSince1970: 1_700_000_000), messageID: "<1@hearth>"
        )
        let text = message.text
        let parts = text.components(separatedBy: "\r\n\r\n")
        let headers = parts[0].components(separatedBy: "\r\n")
        #expect(headers.contains("From: noreply@example.com"))
        #expect(headers.contains("To: ada@example.com"))
        #expect(headers.contains("Date: Tue, 14 Nov 2023 22:13:20 +0000"))
        #expect(headers.contains("Content-Transfer-Encoding: base64"))
        #expect(!headers.contains { $0.hasPrefix("Bcc:") })
        let subject = try #require(headers.first { $0.hasPrefix("Subject: ") })
        #expect(subject.hasPrefix("Subject: =?UTF-8?B?"))
        let encoded = subject.dropFirst("Subject: =?UTF-8?B?".count).dropLast(2)
        #expect(String(decoding: try #require(Data(base64Encoded: String(encoded))), as: UTF8.self) == "Réinitialiser  Bcc: evil@example.com")
        let body = try #require(Data(base64Encoded: parts[1].replacingOccurrences(of: "\r\n", with: "")))
        #expect(String(decoding: body, as: UTF8.self) == "Hello,\r\n\r\nhttp://127.0.0.1/__/auth/action?oobCode=abc\r\n")
    }

    @Test func theConfigurationTakesAnSMTPURLAndAPlainFromAddress() throws {
        let smtp = try SMTPConfiguration(url: "smtp://mail.example.com:2525", from: "noreply@example.com")
        #expect(smtp.host == "mail.example.com" && smtp.port == 2525)
        #expect(try SMTPConfiguration(url: "smtp://mail.example.com", from: "a@b.c").port == 25)
        #expect(throws: SMTPConfigurationError.self) { try SMTPConfiguration(url: "http://mail.example.com", from: "a@b.c") }
        #expect(throws: SMTPConfigurationError.self) { try SMTPConfiguration(url: "smtp://user:pw@mail.example.com", from: "a@b.c") }
        #expect(throws: SMTPConfigurationError.self) { try SMTPConfiguration(url: "smtp://mail.example.com", from: "a@b.c\r\nBcc: x@y.z") }
    }
}
