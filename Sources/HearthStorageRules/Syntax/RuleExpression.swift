/// One expression of a Storage rules file, such as `request.auth.uid == uid`, with where it is in the source.
///
/// The range lets evaluation errors name the sub-expression that failed ("request.auth is null").
///
/// For example:
/// ```swift
/// var parser = RulesParser("request.auth != null")
/// let expression = try parser.parseLoneExpression()
/// ```
struct RuleExpression: Sendable {
    var kind: Kind
    /// Byte offsets in the source: where the expression starts and ends.
    var start: Int
    var end: Int

    init(_ kind: Kind, _ start: Int, _ end: Int) {
        self.kind = kind
        self.start = start
        self.end = end
    }

    indirect enum Kind: Sendable {
        case null
        case bool(Bool)
        case int(Int64)
        case float(Double)
        case string(String)
        case identifier(String)
        /// `[a, b]`
        case list([RuleExpression])
        /// `{'k': v}`: keys are expressions that must evaluate to strings.
        case map([(key: RuleExpression, value: RuleExpression)])
        /// `/a/$(b)/c`: literal segments and `$(expr)` segments.
        case path([PathLiteralSegment])
        case unary(UnaryOperator, RuleExpression)
        case binary(BinaryOperator, RuleExpression, RuleExpression)
        /// `x is string`
        case isType(RuleExpression, TypeName)
        case conditional(RuleExpression, RuleExpression, RuleExpression)
        case member(RuleExpression, String)
        case index(RuleExpression, RuleExpression)
        /// `x[i:j]`
        case range(RuleExpression, RuleExpression, RuleExpression)
        /// `f(a)`, `x.m(a)`, `math.abs(a)`: the callee is an identifier or a member.
        case call(RuleExpression, [RuleExpression])
        /// A call of a user function, as the checker resolved it (index into the file's functions).
        case userCall(function: Int, [RuleExpression])
        /// A call of a built-in function, as the checker resolved it: `int`, `math.abs`, `duration.value`…
        case builtin(String, [RuleExpression])
    }

    enum PathLiteralSegment: Sendable {
        case literal(String)
        case interpolated(RuleExpression)
    }

    enum UnaryOperator: String, Sendable {
        case not = "!", negate = "-"
    }

    enum BinaryOperator: String, Sendable {
        case or = "||", and = "&&"
        case equal = "==", notEqual = "!="
        case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case `in` = "in"
        case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%"
    }

    /// The type names `is` accepts.
    enum TypeName: String, Sendable, CaseIterable {
        case string, int, float, number, bool, null, list, map, set, timestamp, duration, path, bytes, latlng
        case mapDiff = "map_diff"
    }
}
