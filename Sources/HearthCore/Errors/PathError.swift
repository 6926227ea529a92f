/// A path or key that breaks Firebase's rules.
public struct PathError: CodedError, Equatable {
    /// What went wrong, for matching in code.
    public enum Code: Sendable, Equatable {
        case emptyKey
        case keyTooLong
        case invalidCharacter
        case tooDeep
        case invalidEncoding
    }

    public var code: Code
    /// A message for the client, in the style of Firebase's error bodies.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
