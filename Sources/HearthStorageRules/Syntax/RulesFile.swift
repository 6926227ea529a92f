/// A whole rules file: `rules_version`, `service firebase.storage { … }`.
struct RulesFile: Sendable {
    var version: String
    /// The service's top-level statements (functions and matches; `allow` is refused there).
    var body: Block
    /// Every function in the file, in source order; `userCall` refers to them by index.
    var functions: [FunctionDeclaration]
}

/// The statements of a service or `match` body.
struct Block: Sendable {
    var matches: [MatchBlock] = []
    var allows: [AllowStatement] = []
    /// Indexes into ``RulesFile/functions`` of the functions declared directly in this block.
    var functionIndexes: [Int] = []
}

/// `match /images/{uid}/{file=**} { … }`
struct MatchBlock: Sendable {
    var pattern: [PathPatternSegment]
    var body: Block
    /// Offset of the `match` keyword.
    var offset: Int
}

enum PathPatternSegment: Sendable, Equatable {
    case literal(String)
    /// `{name}`: exactly one segment.
    case single(String)
    /// `{name=**}`: zero or more segments in rules version 2 (one or more in version 1).
    case recursive(String)

    var variable: String? {
        switch self {
        case .literal: nil
        case .single(let name), .recursive(let name): name
        }
    }
}

/// `allow read, write: if condition;`
struct AllowStatement: Sendable {
    var methods: Set<StorageRuleMethod>
    /// nil for `allow read;`, which always grants.
    var condition: RuleExpression?
    var line: Int
    var column: Int
    /// The statement's source, whitespace collapsed, for ``StorageRuleDecision/grantedBy``.
    var text: String
}

/// `function name(a, b) { let x = …; return …; }`
struct FunctionDeclaration: Sendable {
    var name: String
    var parameters: [String]
    var lets: [(name: String, value: RuleExpression)]
    var result: RuleExpression
    var offset: Int
    /// How many `match` blocks enclose the declaration: it sees the wildcards of that many levels.
    var depth: Int
}
