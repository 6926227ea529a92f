/// The syntax tree of one rule expression, such as `auth != null && data.child('owner').val() == auth.uid`.
public indirect enum Expression: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case identifier(String, offset: Int)
    /// `/body/` or `/body/i`: only as the argument of `matches()`.
    case regex(pattern: String, caseInsensitive: Bool)
    /// `[a, b]`: only as the argument of `hasChildren()`.
    case array([Expression])
    case not(Expression)
    case negate(Expression)
    case binary(BinaryOperator, Expression, Expression)
    case conditional(Expression, Expression, Expression)
    case member(Expression, String)
    case index(Expression, Expression)
    case call(Expression, [Expression])
}

/// The binary operators of the rules language.
public enum BinaryOperator: String, Sendable {
    case or = "||", and = "&&"
    case equal = "==", notEqual = "!="
    case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%"
}

/// A problem found in a rules document, with its place.
///
/// For example: `rules/users/$uid/.write: 1:12: unknown variable 'uid'`.
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    /// Where in the rules tree (`rules/users/$uid/.write`), if known.
    public var location: String
    /// 1-based line and byte column in the rules document (within the expression for a lone expression).
    public var line: Int
    public var column: Int
    public var message: String

    public init(location: String = "", line: Int = 1, column: Int, message: String) {
        self.location = location
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String {
        (location.isEmpty ? "" : "\(location): ") + "\(line):\(column): \(message)"
    }
}
