/// A path or key that breaks Firebase's rules.
public typealias PathError = CodedError<PathErrorCode>

/// What went wrong, for matching in code.
public enum PathErrorCode: Sendable, Equatable {
    case emptyKey, keyTooLong, invalidCharacter, tooDeep, invalidEncoding
}
