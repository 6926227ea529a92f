import HearthCore
import HearthRules
import Testing

/// The simulator's explanations: which rules ran, where they are in the source, and which decided.
@Suite struct RulesExplanationTests {
    // Line numbers below refer to this text: keep it as is.
    let source = #"""
        {
          // A comment, so positions must survive comment stripping.
          "rules": {
            "posts": {
              ".read": "auth != null",
              "$uid": {
                ".write": "$uid === auth.uid",
                "$post": {
                  ".validate": "newData.hasChildren(['title'])",
                  "title": { ".validate": "newData.isString() && newData.val().length <= 10" }
                }
              }
            }
          }
        }
        """#

    func scenario(_ json: String) throws -> JSONValue { try JSONValue(parsing: json) }

    let data = try! Node(json: try! JSONValue(parsing: #"{"posts": {"ada": {"p1": {"title": "Hi"}}}}"#))

    @Test func anAllowedReadNamesTheGrantingRuleAndItsLine() throws {
        let rules = try RulesDocument(source: source)
        let explanation = try RulesTestSuite.explain(scenario(#"{"auth": {"uid": "bob"}, "read": "/posts/ada"}"#), rules, data: data, now: 0)
        #expect(explanation.allowed)
        #expect(explanation.steps == [
            .init(rule: "rules/posts/.read", path: "/posts", expression: "auth != null", line: 5, column: 16, result: true)
        ])
        #expect(explanation.summary == "Allowed: rules/posts/.read (line 5) grants reading /posts/ada.")
    }

    @Test func aDeniedReadListsEveryRuleTriedAndSaysNoneAllowed() throws {
        let rules = try RulesDocument(source: source)
        let explanation = try RulesTestSuite.explain(scenario(#"{"auth": null, "read": "/posts/ada"}"#), rules, data: data, now: 0)
        #expect(!explanation.allowed)
        #expect(explanation.steps.map(\.rule) == ["rules/posts/.read"])
        #expect(explanation.steps.map(\.result) == [false])
        #expect(explanation.summary == "Denied: no .read rule allowed reading /posts/ada.")
    }

    @Test func aRefusedValidateIsNamedWithThePathOfTheNewData() throws {
        let rules = try RulesDocument(source: source)
        let explanation = try RulesTestSuite.explain(
            scenario(#"{"auth": {"uid": "ada"}, "write": "/posts/ada/p2", "value": {"title": "far too long a title"}}"#), rules, data: data, now: 0
        )
        #expect(!explanation.allowed)
        #expect(explanation.steps.map(\.rule) == [
            "rules/posts/$uid/.write", "rules/posts/$uid/$post/.validate", "rules/posts/$uid/$post/title/.validate",
        ])
        #expect(explanation.steps.map(\.result) == [true, true, false])
        #expect(explanation.steps.map(\.line) == [7, 9, 10])
        #expect(explanation.steps[2].path == "/posts/ada/p2/title")
        #expect(explanation.steps[2].expression == "newData.isString() && newData.val().length <= 10")
        #expect(explanation.summary == "Denied: rules/posts/$uid/$post/title/.validate (line 10) is false for the new data at /posts/ada/p2/title.")
    }

    @Test func anAllowedWriteNamesItsWriteRule() throws {
        let rules = try RulesDocument(source: source)
        let explanation = try RulesTestSuite.explain(
            scenario(#"{"auth": {"uid": "ada"}, "write": "/posts/ada/p2", "value": {"title": "ok"}}"#), rules, data: data, now: 0
        )
        #expect(explanation.allowed)
        #expect(explanation.summary == "Allowed: rules/posts/$uid/.write (line 7) grants writing /posts/ada/p2, and every .validate passed.")
    }

    @Test func anUpdateStopsAtTheFirstRefusedTarget() throws {
        let rules = try RulesDocument(source: source)
        let explanation = try RulesTestSuite.explain(
            scenario(#"{"auth": {"uid": "ada"}, "update": "/posts", "value": {"ada/p3": {"title": "a"}, "bob/p3": {"title": "b"}}}"#),
            rules, data: data, now: 0
        )
        #expect(!explanation.allowed)
        #expect(explanation.summary == "Denied: no .write rule allowed writing /posts/bob/p3.")
        // The allowed target's rules ran first; bob's .write was false (his .validate ran too, and passed).
        #expect(explanation.steps.contains(.init(
            rule: "rules/posts/$uid/.write", path: "/posts/bob", expression: "$uid === auth.uid", line: 7, column: 19, result: false
        )))
        #expect(try RulesTestSuite.allows(
            scenario(#"{"auth": {"uid": "ada"}, "update": "/posts", "value": {"ada/p3": {"title": "a"}}}"#), rules, data: data, now: 0
        ))
    }

    /// An update's `p1/.priority` is checked where the node is, as the server checks it.
    @Test func anUpdatesPriorityIsCheckedAtItsNode() throws {
        let rules = try RulesDocument(source: source)
        let allowed = try RulesTestSuite.explain(
            scenario(#"{"auth": {"uid": "ada"}, "update": "/posts/ada", "value": {"p1/.priority": 3}}"#), rules, data: data, now: 0
        )
        #expect(allowed.allowed)
        #expect(allowed.summary == "Allowed: rules/posts/$uid/.write (line 7) grants writing /posts/ada/p1, and every .validate passed.")
        let denied = try RulesTestSuite.explain(
            scenario(#"{"auth": {"uid": "bob"}, "update": "/posts/ada", "value": {"p1/.priority": 3}}"#), rules, data: data, now: 0
        )
        #expect(denied.summary == "Denied: no .write rule allowed writing /posts/ada/p1.")
    }

    @Test func aScenarioWithoutAnOperationIsAnError() throws {
        let rules = try RulesDocument(source: source)
        #expect(throws: RulesError.self) { try RulesTestSuite.explain(scenario(#"{"auth": null}"#), rules, data: data, now: 0) }
    }
}
