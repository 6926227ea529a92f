/// An email the identity service sent (or, without a mail server, would have sent): kept in the
/// outbox so a developer can read it (`hearth users outbox`) and follow its link.
///
/// For example:
/// ```swift
/// let mail = EmailMessage(project: "demo", to: "ada@example.com", subject: "Reset your password",
///                         body: "…", link: "http://127.0.0.1:9000/__/auth/action?mode=resetPassword&oobCode=…",
///                         requestType: "PASSWORD_RESET", sentAt: 1_700_000_000_000)
/// ```
public struct EmailMessage: Sendable, Equatable, Codable {
    public var project: String
    public var to: String
    public var subject: String
    public var body: String
    /// The action link in the mail (it holds a single-use code that lasts an hour).
    public var link: String
    /// `PASSWORD_RESET`, `VERIFY_EMAIL` or `VERIFY_AND_CHANGE_EMAIL`.
    public var requestType: String
    /// Milliseconds since 1970.
    public var sentAt: Int64

    public init(project: String, to: String, subject: String, body: String, link: String, requestType: String, sentAt: Int64) {
        self.project = project
        self.to = to
        self.subject = subject
        self.body = body
        self.link = link
        self.requestType = requestType
        self.sentAt = sentAt
    }
}
