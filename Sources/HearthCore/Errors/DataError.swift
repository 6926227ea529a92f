/// Data that cannot be stored: an invalid key, too deep, a bad priority or server value, too large.
public typealias DataError = CodedError<DataErrorCode>

/// What went wrong, for matching in code.
public enum DataErrorCode: Sendable, Equatable {
    case invalidKey, tooDeep, invalidPriority, invalidServerValue, invalidValue, tooLarge
}
