import HearthCore
import HearthRules
import Testing

/// The emulator's rules coverage: each rule's evaluations counted by answer, every rule listed in the
/// order of its source with its place, and only real checks counted (not the simulator's).
@Suite struct RulesCoverageTests {
    // Line numbers below refer to this text: keep it as is.
    let source = #"""
        {
          // A comment, with café — positions (bytes) must survive comment stripping.
          "rules": {
            "posts": {
              ".read": "auth != null",
              "$uid": {
                ".write": "$uid === auth.uid",
                "$post": { ".validate": "newData.hasChildren(['title'])" }
              }
            },
            "closed": { ".read": false }
          }
        }
        """#

    func path(_ text: String) throws -> DatabasePath { try DatabasePath(text) }

    @Test func eachRuleIsCountedByWhatItAnswered() throws {
        let rules = try RulesDocument(source: source).withCoverage(RulesCoverage())
        let ada = RulesDocument.Subject.auth(.object([("uid", .string("ada"))]))
        #expect(rules.canRead(try path("/posts"), ada, root: .empty, now: 0))
        #expect(!rules.canRead(try path("/posts"), .auth(.null), root: .empty, now: 0))
        #expect(!rules.canRead(try path("/posts"), .auth(.null), root: .empty, now: 0))
        let post = try Node(json: try JSONValue(parsing: #"{"posts": {"ada": {"p1": {"title": "Hi"}}}}"#))
        let untitled = try Node(json: try JSONValue(parsing: #"{"posts": {"ada": {"p1": {"body": "Hi"}}}}"#))
        #expect(rules.canWrite(try path("/posts/ada/p1"), ada, before: .empty, after: post, now: 0))
        #expect(!rules.canWrite(try path("/posts/ada/p1"), ada, before: .empty, after: untitled, now: 0))
        // The admin passes no rule: nothing is counted.
        #expect(rules.canRead(try path("/closed"), .admin, root: .empty, now: 0))

        let report = try #require(rules.coverage).report(of: rules)
        #expect(report.source == source)
        #expect(report.rules.map(\.rule) == [
            "rules/posts/.read", "rules/posts/$uid/.write", "rules/posts/$uid/$post/.validate", "rules/closed/.read",
        ])
        #expect(report.rules.map(\.counts.allowed) == [1, 2, 1, 0])
        #expect(report.rules.map(\.counts.denied) == [2, 0, 1, 0])
        #expect(report.rules.map(\.line) == [5, 7, 8, 11])
        #expect(report.rules[0].column == 16 && report.rules[0].expression == "auth != null")
        // Each rule's range is its value as written, quotes and escapes included.
        let bytes = Array(source.utf8)
        #expect(report.rules.map { String(decoding: bytes[$0.start..<$0.end], as: UTF8.self) } == [
            #""auth != null""#, #""$uid === auth.uid""#, #""newData.hasChildren(['title'])""#, "false",
        ])
    }

    @Test func theSimulatorAndDocumentsWithoutCoverageCountNothing() throws {
        let plain = try RulesDocument(source: source)
        #expect(plain.coverage == nil)
        let coverage = RulesCoverage()
        let rules = plain.withCoverage(coverage)
        let explanation = rules.explainRead(try path("/posts"), .auth(.null), root: .empty, now: 0)
        #expect(!explanation.allowed && !explanation.steps.isEmpty)
        let post = try Node(json: try JSONValue(parsing: #"{"posts": {"ada": {"p1": {"title": "Hi"}}}}"#))
        let written = rules.explainWrite([try path("/posts/ada/p1")], .auth(.object([("uid", .string("ada"))])), before: .empty, after: post, now: 0)
        #expect(written.allowed && written.steps.count == 2)
        _ = plain.canRead(try path("/posts"), .auth(.null), root: .empty, now: 0)
        #expect(coverage.report(of: rules).rules.allSatisfy { $0.counts.evaluations == 0 })
        // A copy of the document counts into the same coverage; another coverage starts from nothing.
        let copy = rules
        _ = copy.canRead(try path("/posts"), .auth(.null), root: .empty, now: 0)
        #expect(coverage.report(of: rules).rules[0].counts.denied == 1)
        #expect(RulesCoverage().report(of: rules).rules[0].counts.evaluations == 0)
    }

    /// A key written with a JSON escape is the key the rules were compiled with: its rule is found,
    /// counted and marked where it is written.
    @Test func aKeyWrittenWithAnEscapeIsCountedUnderItsName() throws {
        let source = #"{"rules": {"caf\u00e9": {".read": true}, "q\"uote": {".read": false}}}"#
        let rules = try RulesDocument(source: source).withCoverage(RulesCoverage())
        #expect(rules.canRead(try path("/café"), .auth(.null), root: .empty, now: 0))
        #expect(!rules.canRead(try path("/q\"uote"), .auth(.null), root: .empty, now: 0))
        let report = try #require(rules.coverage).report(of: rules)
        #expect(report.rules.map(\.rule) == ["rules/café/.read", "rules/q\"uote/.read"])
        #expect(report.rules.map(\.counts.allowed) == [1, 0] && report.rules.map(\.counts.denied) == [0, 1])
        #expect(report.rules.map(\.expression) == ["true", "false"])
        let bytes = Array(source.utf8)
        #expect(report.rules.map { String(decoding: bytes[$0.start..<$0.end], as: UTF8.self) } == ["true", "false"])
    }
}
