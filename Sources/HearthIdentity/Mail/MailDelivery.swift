import Foundation
import HearthAccess
public import HearthCore
import HearthStorage
import Logging

/// Where and how the identity service's emails (password reset, email verification) are delivered.
///
/// For example:
/// ```swift
/// configuration.identity.smtp = try SMTPConfiguration(url: "smtp://127.0.0.1:2525", from: "noreply@example.com")
/// ```
public struct SMTPConfiguration: Sendable, Equatable {
    /// The mail server's host name or address, from the URL.
    public var host: String
    /// Its port (25 unless the URL names one).
    public var port: Int
    /// The envelope sender and `From:` address.
    public var from: String
    /// Waits before each retry of a message the server could not take; one attempt more than there
    /// are waits. A permanent refusal (5xx) is not retried.
    public var retryDelays: [Duration] = [.seconds(1), .seconds(5), .seconds(30), .seconds(120), .seconds(600)]
    /// Upgrade every connection with STARTTLS and verify the server's certificate; a server that does
    /// not offer STARTTLS gets nothing. On whenever there is a login.
    public var startTLS = false
    /// PEM certificates to trust for STARTTLS instead of the system's.
    public var trustRootsFile: String?
    /// A login for `AUTH PLAIN`, sent only inside TLS.
    public var username: String?
    public var password: String?

    /// `url` is `smtp://host[:port]` (port 25 by default).
    public init(url: String, from: String) throws {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "smtp",
              let host = components.host, !host.isEmpty else {
            throw SMTPConfigurationError("the SMTP URL must look like smtp://host:port (got \(url))")
        }
        guard components.user == nil, components.password == nil else {
            throw SMTPConfigurationError("put no login in the SMTP URL (it would show in the process list): use HEARTH_SMTP_USERNAME and HEARTH_SMTP_PASSWORD")
        }
        guard from.contains("@"), MailMessage.headerValue(from) == from, !from.contains("<"), !from.contains(">") else {
            throw SMTPConfigurationError("the from address must be a plain address like noreply@example.com (got \(from))")
        }
        self.host = host
        self.port = components.port ?? 25
        self.from = from
    }
}

public struct SMTPConfigurationError: HearthError {
    public var message: String
    init(_ message: String) { self.message = message }
}

/// Sends the outbox's emails to an SMTP server in the background: ``enqueue(_:)`` returns at once, so
/// a request never waits for the mail server; a message the server cannot take now is retried later
/// (``SMTPConfiguration/retryDelays``, on the server's clock). The outbox keeps every message whether
/// or not it was delivered. Messages waiting for a retry live in memory: a restart drops them (their
/// codes, which also live in memory, would no longer work anyway).
///
/// Logs say which message failed and why (the reply code) but never its recipient, link or code
/// above trace level.
///
/// For example:
/// ```swift
/// let delivery = MailDelivery(configuration: smtp, clock: .system, logger: logger)
/// delivery.enqueue(message)
/// ```
final class MailDelivery: Sendable {
    let configuration: SMTPConfiguration
    let clock: ServerClock
    let logger: Logger
    let client: SMTPClient

    init(configuration: SMTPConfiguration, clock: ServerClock, logger: Logger) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        var client = SMTPClient(host: configuration.host, port: configuration.port)
        client.requireTLS = configuration.startTLS
        client.trustRootsFile = configuration.trustRootsFile
        if let username = configuration.username, let password = configuration.password {
            client.credentials = SMTPConversation.Credentials(username: username, password: password)
        }
        self.client = client
    }

    /// Starts delivering `message`; returns at once.
    func enqueue(_ message: EmailMessage) {
        let mail = MailMessage(
            from: configuration.from, to: message.to, subject: message.subject, body: message.body,
            date: Date(timeIntervalSince1970: Double(message.sentAt) / 1000), messageID: "<\(UUID().uuidString.lowercased())@hearth>"
        )
        Task.detached { [self] in await deliver(mail, kind: message.requestType) }
    }

    /// Tries `mail` until it is accepted, permanently refused, or out of retries. Returns whether it
    /// was delivered.
    @discardableResult
    func deliver(_ mail: MailMessage, kind: String) async -> Bool {
        let attempts = configuration.retryDelays.count + 1
        for attempt in 1...attempts {
            do {
                try await client.send(from: configuration.from, to: mail.to, message: mail.text)
                logger.debug("Email delivered", metadata: ["hearth.email.kind": "\(kind)", "hearth.email.attempt": "\(attempt)"])
                return true
            } catch {
                let failure = error as? SMTPDeliveryError
                    ?? SMTPDeliveryError(phase: "sending", code: 0, transient: true, text: "\(error)")
                logger.trace("SMTP failure", metadata: ["hearth.smtp.reply": "\(failure.text)"])
                guard failure.transient, attempt < attempts else {
                    logger.warning("Email not delivered", metadata: [
                        "hearth.email.kind": "\(kind)", "hearth.error": "\(failure)", "hearth.email.attempts": "\(attempt)",
                    ])
                    return false
                }
                logger.info("Email delivery failed, will retry", metadata: [
                    "hearth.email.kind": "\(kind)", "hearth.error": "\(failure)", "hearth.email.attempt": "\(attempt)",
                ])
                do {
                    try await clock.sleep(for: configuration.retryDelays[attempt - 1])
                } catch {
                    return false
                }
            }
        }
        return false
    }
}
