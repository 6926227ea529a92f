/// The shape Hearth's errors share: a message that says what went wrong, safe to send a client and
/// to log (it never holds a token, a password or a stored value), and that message as the
/// description.
///
/// An error that callers branch on is a ``CodedError``. Errors with more to carry (a byte
/// offset, a list of diagnostics, an HTTP status) add it beside the message.
///
/// For example:
/// ```swift
/// struct QuotaError: HearthError {
///     var message: String
/// }
/// print(QuotaError(message: "Too many listens"))  // Too many listens
/// ```
public protocol HearthError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in the style of Firebase's error bodies.
    var message: String { get }
}

extension HearthError {
    public var description: String { message }
}

/// A ``HearthError`` with a code to branch on, so no caller matches on message text. Each kind of
/// error is an alias with its own codes: ``PathError``, ``DataError``, `WriteError`,
/// `DatabaseStorageError`.
///
/// For example:
/// ```swift
/// do { _ = try DatabasePath("a/.b") } catch let error as PathError where error.code == .invalidCharacter {
///     print(error.message)
/// }
/// ```
public struct CodedError<Code: Sendable & Equatable>: HearthError, Equatable {
    public var code: Code
    /// What went wrong, in the style of Firebase's error bodies.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
