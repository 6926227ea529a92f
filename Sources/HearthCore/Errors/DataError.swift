/// Data that cannot be stored: an invalid key, too deep, a bad priority or server value, too large.
public struct DataError: CodedError, Equatable {
    public enum Code: Sendable, Equatable {
        case invalidKey
        case tooDeep
        case invalidPriority
        case invalidServerValue
        case invalidValue
        case tooLarge
    }

    public var code: Code
    /// A message for the client, in the style of Firebase's `Invalid data; …` errors.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
