public import HearthCore

/// How the rules decided one operation: every rule that was evaluated, in order, with its place in
/// the source and its result, and the rule that decided. What the console's simulator shows.
///
/// For example:
/// ```swift
/// let explanation = try RulesTestSuite.explain(try JSONValue(parsing: #"{"auth": null, "read": "/posts"}"#), rules, data: root, now: now)
/// print(explanation.allowed, explanation.summary)   // false, "Denied: no .read rule allowed reading /posts."
/// for step in explanation.steps { print(step.line ?? 0, step.rule, step.result) }
/// ```
public struct RulesExplanation: Sendable, Equatable {
    /// One evaluated `.read`, `.write` or `.validate`.
    public struct Step: Sendable, Equatable {
        /// The rule's place in the document: `rules/users/$uid/.write`.
        public var rule: String
        /// The database location it was evaluated at: `/users/ada`.
        public var path: String
        /// The rule's text as written (`auth.uid === $uid`, `true`).
        public var expression: String
        /// 1-based line and column of the rule's value in the source, when known.
        public var line: Int?
        public var column: Int?
        public var result: Bool

        public init(rule: String, path: String, expression: String, line: Int?, column: Int?, result: Bool) {
            (self.rule, self.path, self.expression, self.line, self.column, self.result) = (rule, path, expression, line, column, result)
        }
    }

    public var allowed: Bool
    public var steps: [Step]
    /// One sentence: what was attempted and which rule decided.
    public var summary: String
}

/// Collects the rules evaluated during one check. Local to one explanation; never shared.
final class RulesTrace {
    struct Entry {
        var node: String
        var kind: String
        var path: DatabasePath
        var result: Bool
    }

    private(set) var entries: [Entry] = []

    func record(_ node: String, _ kind: String, at path: DatabasePath, _ result: Bool) {
        entries.append(Entry(node: node, kind: kind, path: path, result: result))
    }
}

extension RulesDocument {
    /// Runs a read check and explains it.
    public func explainRead(_ path: DatabasePath, _ subject: Subject, root data: Node, now: Double) -> RulesExplanation {
        let trace = RulesTrace()
        // A simulated request is not one the coverage counts.
        let allowed = withCoverage(nil).canRead(path, subject, root: data, now: now, trace: trace)
        let steps = explanationSteps(trace)
        let summary: String
        if case .admin = subject {
            summary = "Allowed: the admin bypasses every rule."
        } else if allowed, let decider = steps.last(where: { $0.result }) {
            summary = "Allowed: \(decider.rule)\(Self.at(decider)) grants reading \(path)."
        } else {
            summary = "Denied: no .read rule allowed reading \(path)."
        }
        return RulesExplanation(allowed: allowed, steps: steps, summary: summary)
    }

    /// Runs write checks (one per target of an update, all of which must pass) and explains them.
    public func explainWrite(_ targets: [DatabasePath], _ subject: Subject, before: Node, after: Node, now: Double) -> RulesExplanation {
        let trace = RulesTrace()
        var allowed = true
        var refused: DatabasePath?
        for target in targets where !withCoverage(nil).canWrite(target, subject, before: before, after: after, now: now, trace: trace) {
            allowed = false
            refused = target
            break
        }
        let steps = explanationSteps(trace)
        let what = targets.count == 1 ? "writing \(targets[0])" : "this update"
        let summary: String
        if case .admin = subject {
            summary = "Allowed: the admin bypasses every rule."
        } else if allowed {
            let grants = steps.filter { $0.result && $0.rule.hasSuffix("/.write") }
            let names = grants.map { "\($0.rule)\(Self.at($0))" }
            summary = "Allowed: \(names.isEmpty ? "the rules" : names.joined(separator: ", ")) \(names.count > 1 ? "grant" : "grants") \(what), and every .validate passed."
        } else if let failed = steps.last, !failed.result, failed.rule.hasSuffix("/.validate") {
            summary = "Denied: \(failed.rule)\(Self.at(failed)) is false for the new data at \(failed.path)."
        } else {
            summary = "Denied: no .write rule allowed writing \(refused.map(\.description) ?? what)."
        }
        return RulesExplanation(allowed: allowed, steps: steps, summary: summary)
    }

    private static func at(_ step: RulesExplanation.Step) -> String {
        step.line.map { " (line \($0))" } ?? ""
    }

    private func explanationSteps(_ trace: RulesTrace) -> [RulesExplanation.Step] {
        guard !trace.entries.isEmpty else { return [] }
        let map = RulesSourceMap(Array(RulesDocument.stripComments(source).utf8))
        return trace.entries.map { entry in
            let rule = "\(entry.node)/\(entry.kind)"
            let position = map.valueOffsets[rule].map { RulesSourceMap.position(of: $0, in: map.bytes) }
            return RulesExplanation.Step(
                rule: rule, path: entry.path.description, expression: ruleText(rule), line: position?.line, column: position?.column,
                result: entry.result
            )
        }
    }

    /// The rule's value as written: the expression string, or `true`/`false`.
    func ruleText(_ rule: String) -> String {
        var value: JSONValue? = json
        for name in rule.split(separator: "/") { value = value?[String(name)] }
        switch value {
        case .string(let text)?: return text
        case .bool(let flag)?: return flag ? "true" : "false"
        default: return ""
        }
    }
}
