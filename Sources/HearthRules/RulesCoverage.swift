import Synchronization

/// How often each `.read`, `.write` and `.validate` of one rules document was evaluated, and what it
/// answered, since the document was put in force: the emulator's rules coverage
/// (`/.inspect/coverage?ns=…`), which shows the rules a test suite never reached and the ones that
/// only ever refused.
///
/// A document evaluates into the coverage it carries (``RulesDocument/withCoverage(_:)``); a server
/// gives each document it puts in force a new one in emulator mode, and none otherwise.
///
/// For example:
/// ```swift
/// let rules = try RulesDocument(source: #"{"rules": {".read": "auth != null"}}"#).withCoverage(RulesCoverage())
/// _ = rules.canRead(.root, .auth(.null), root: .empty, now: 0)
/// rules.coverage!.report(of: rules).rules[0].counts.denied   // 1
/// ```
public final class RulesCoverage: Sendable {
    /// Which of a location's rules.
    enum Kind: String {
        case read = ".read", write = ".write", validate = ".validate"
    }

    /// A rule by its node of the compiled tree (which lives as long as the document) and its kind: a
    /// key that hashes two words, where the rule's path would hash a string on every evaluation.
    struct RuleKey: Hashable {
        var node: ObjectIdentifier
        var kind: Kind
    }

    private struct Counted {
        /// Held, so that no other node can take its address (the key) while it is counted.
        var node: RuleNode
        /// The rule's place in the document: `rules/users/$uid/.write`.
        var rule: String
        var counts = RulesCoverageReport.Counts()
    }

    private let counts = Mutex<[RuleKey: Counted]>([:])

    public init() {}

    func record(_ node: RuleNode, _ kind: Kind, _ result: Bool) {
        counts.withLock { counts in
            let key = RuleKey(node: ObjectIdentifier(node), kind: kind)
            if counts[key] == nil { counts[key] = Counted(node: node, rule: "\(node.location)/\(kind.rawValue)") }
            if result { counts[key]!.counts.allowed += 1 } else { counts[key]!.counts.denied += 1 }
        }
    }

    /// Every rule of `document` in the order of its source, with its counts (zero for a rule never
    /// evaluated).
    public func report(of document: RulesDocument) -> RulesCoverageReport {
        let counted = counts.withLock { counts in
            Dictionary(counts.values.map { ($0.rule, $0.counts) }, uniquingKeysWith: { RulesCoverageReport.Counts(allowed: $0.allowed + $1.allowed, denied: $0.denied + $1.denied) })
        }
        let map = RulesSourceMap(Array(RulesDocument.stripComments(document.source).utf8))
        let rules = map.valueOffsets
            .filter { path, _ in [".read", ".write", ".validate"].contains { path.hasSuffix("/\($0)") } }
            .sorted { $0.value < $1.value }
            .map { path, start in
                let (line, column) = RulesSourceMap.position(of: start, in: map.bytes)
                return RulesCoverageReport.Rule(
                    rule: path, expression: document.ruleText(path), line: line, column: column,
                    start: start, end: RulesSourceMap.valueEnd(at: start, in: map.bytes), counts: counted[path] ?? .init()
                )
            }
        return RulesCoverageReport(source: document.source, rules: rules)
    }
}

/// What ``RulesCoverage`` counted for one rules document.
public struct RulesCoverageReport: Sendable, Equatable {
    public struct Counts: Sendable, Equatable {
        public var allowed = 0
        public var denied = 0
        public var evaluations: Int { allowed + denied }
    }

    /// One `.read`, `.write` or `.validate`.
    public struct Rule: Sendable, Equatable {
        /// Its place in the document: `rules/users/$uid/.write`.
        public var rule: String
        /// Its value as written (`auth.uid === $uid`, `true`).
        public var expression: String
        /// 1-based line and byte column of its value in the source.
        public var line: Int
        public var column: Int
        /// Its value's byte range in the source (quotes included), for marking it up.
        public var start: Int
        public var end: Int
        public var counts: Counts
    }

    /// The document as it was put in force (comments included).
    public var source: String
    public var rules: [Rule]
}
