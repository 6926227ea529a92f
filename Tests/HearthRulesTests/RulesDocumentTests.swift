import HearthCore
import HearthRules
import Testing

@Suite struct RulesDocumentTests {
    func tree(_ json: String) throws -> Node {
        try Node(json: try JSONValue(parsing: json))
    }

    let posts = #"""
        {
          // Anyone signed in reads; users write only their own posts, which must have a title.
          "rules": {
            ".read": "auth != null",
            "posts": {
              "$uid": {
                ".write": "$uid === auth.uid",
                "$post": {
                  ".validate": "newData.hasChildren(['title']) && newData.child('title').isString()",
                  "title": { ".validate": "newData.val().length <= 100" }
                }
              }
            }
          }
        }
        """#

    /// A literal rule applies to a key of the same bytes only: `e` + a combining accent is another key
    /// than `é` (as Firebase compares), so it gets the wildcard's rules.
    @Test func literalRulesMatchKeysByTheirBytes() throws {
        let rules = try RulesDocument(source: #"{"rules": {"\u00e9": {".read": false}, "$other": {".read": true}}}"#)
        #expect(!rules.canRead(try DatabasePath("/\u{e9}"), .auth(.null), root: .empty, now: 0))
        #expect(rules.canRead(try DatabasePath("/e\u{301}"), .auth(.null), root: .empty, now: 0))
    }

    @Test func readsCascadeAndAreNotFilters() throws {
        let rules = try RulesDocument(source: #"{"rules": {"public": {".read": true}, "users": {"$uid": {".read": "$uid === auth.uid"}}}}"#)
        let root = Node.empty
        let ada = RulesDocument.Subject.auth(.object([(key: "uid", value: .string("ada"))]))
        #expect(rules.canRead(try DatabasePath("/public/deep/child"), .auth(.null), root: root, now: 0))
        #expect(rules.canRead(try DatabasePath("/users/ada"), ada, root: root, now: 0))
        #expect(rules.canRead(try DatabasePath("/users/ada/profile"), ada, root: root, now: 0))
        #expect(!rules.canRead(try DatabasePath("/users/bob"), ada, root: root, now: 0))
        // Reading /users is denied even though /users/ada alone would be allowed.
        #expect(!rules.canRead(try DatabasePath("/users"), ada, root: root, now: 0))
        #expect(rules.canRead(try DatabasePath("/users"), .admin, root: root, now: 0))
    }

    @Test func writesNeedPermissionAndValidation() throws {
        let rules = try RulesDocument(source: posts)
        let ada = RulesDocument.Subject.auth(.object([(key: "uid", value: .string("ada"))]))
        let path = try DatabasePath("/posts/ada/p1")
        let good = Node.empty.setting(try tree(#"{"title": "Hello"}"#), at: path)
        let untitled = Node.empty.setting(try tree(#"{"body": "x"}"#), at: path)
        let long = Node.empty.setting(try tree("{\"title\": \"\(String(repeating: "x", count: 101))\"}"), at: path)
        #expect(rules.canWrite(path, ada, before: .empty, after: good, now: 0))
        #expect(!rules.canWrite(path, ada, before: .empty, after: untitled, now: 0))
        #expect(!rules.canWrite(path, ada, before: .empty, after: long, now: 0))
        // Someone else's posts.
        let other = try DatabasePath("/posts/bob/p1")
        #expect(!rules.canWrite(other, ada, before: .empty, after: Node.empty.setting(try tree(#"{"title": "x"}"#), at: other), now: 0))
        // Deletes skip .validate.
        #expect(rules.canWrite(path, ada, before: good, after: .empty, now: 0))
        // Writing only the title still validates the post (an ancestor's .validate sees newData).
        let titlePath = try DatabasePath("/posts/ada/p1/title")
        #expect(rules.canWrite(titlePath, ada, before: good, after: good.setting(.leaf(.string("New")), at: titlePath), now: 0))
        #expect(rules.canWrite(path, .admin, before: .empty, after: untitled, now: 0))
    }

    @Test func runtimeErrorsFailTheWholeRule() throws {
        // auth.uid is null for anonymous users; null + 'x' is an error, and the error is not rescued by || true.
        let rules = try RulesDocument(source: #"{"rules": {".read": "(root.child('u/' + auth.uid).exists()) || true"}}"#)
        #expect(!rules.canRead(.root, .auth(.null), root: .empty, now: 0))
        #expect(rules.canRead(.root, .auth(.object([(key: "uid", value: .string("a"))])), root: .empty, now: 0))
    }

    @Test func allProblemsAreReportedWithTheirPlace() {
        let source = #"{"rules": {".read": "skies === 'blue'", "a": {".write": "auth.uid ===", ".read": "newData.exists()"}, "b": {".validate": "7"}}}"#
        #expect(throws: RulesError.self) { try RulesDocument(source: source) }
        do {
            _ = try RulesDocument(source: source)
        } catch {
            #expect(error.diagnostics.count == 4)
            #expect(error.diagnostics.map(\.location) == ["rules/.read", "rules/a/.write", "rules/a/.read", "rules/b/.validate"])
            #expect(error.diagnostics[0].message == "unknown variable 'skies'")
        }
    }

    @Test func diagnosticsPointAtTheFilesLineAndColumn() {
        let source = """
            {
              // Posts: signed-in users write their own.
              "rules": {
                "posts": {
                  /* block
                     comment */
                  ".read": "auth != null && skies",
                  "$post": { ".write": "newData.child(\\"author\\").val() === auth.uid &&", ".validate": 7 }
                }
              }
            }
            """
        do {
            _ = try RulesDocument(source: source)
            Issue.record("the rules compiled")
        } catch {
            let places = error.diagnostics.map { "\($0.location) \($0.line):\($0.column)" }
            // `skies` on line 7; the end of the `.write` expression (after two escaped quotes) on line 8;
            // the `.validate` value itself.
            #expect(places == ["rules/posts/.read 7:33", "rules/posts/$post/.write 8:76", "rules/posts/$post/.validate 8:92"])
        }
    }

    @Test func queryRulesSeeTheQuery() throws {
        let rules = try RulesDocument(
            source: #"{"rules": {"items": {".read": "query.orderByChild == 'owner' && query.equalTo == auth.uid"}}}"#
        )
        let ada = RulesDocument.Subject.auth(.object([(key: "uid", value: .string("ada"))]))
        let own = Query(index: .child(try DatabasePath("owner")), start: .init(value: .leaf(.string("ada"))), end: .init(value: .leaf(.string("ada"))))
        #expect(rules.canRead(try DatabasePath("/items"), ada, root: .empty, query: RuleQuery(own), now: 0))
        #expect(!rules.canRead(try DatabasePath("/items"), ada, root: .empty, query: RuleQuery(), now: 0))
    }
}

@Suite struct ExpressionSyntaxTests {
    @Test(arguments: [
        "auth != null &&", "(auth != null", "root = 5", "true; false", "2 ** 2 == 4", "+1 == 1", "'unterminated",
        "data.val().matches('/a/')", "data.val().matches(/a/g)", "data.val().matches(/(/)",
        "data.val().matches(/a^b/)", "data.val().matches(/a$b/)", "data.val().matches(/(?=a)b/)",
        "data.val().matches(/(a)\\1/)", "root.foo()", "7", "'foo'",
        "newData.exists() ? 7 : true", "root.child('x') != null", "true > false", "$missing == 'a'",
        "1 < 'a'", "'abc'.contains(7)", "root.child(1).exists()", "'a' + true == 'atrue'",
    ])
    func invalidRulesAreRefused(_ rule: String) {
        let source = "{\"rules\": {\".write\": \(JSONValue.string(rule).jsonText)}}"
        #expect(throws: RulesError.self, "\(rule)") { try RulesDocument(source: source) }
    }

    @Test(arguments: [
        "auth != null", "auth.token.admin === true", "data.val().matches(/^[a-z]+\\d*$/i)", "now > 0",
        "root.child('a/b').val() == 'x' || !data.exists()", "newData.hasChildren(['a', 'b'])", "auth['uid'] == 'a'",
        "(1 + 2) * 3 % 2 == 1", "'a' + 1 == 'a1'", "-(1) < 0", "data.child('n').val() / 0 != 1",
        "data.val().matches(/^[^$^]+\\$$/)",
        // Nesting and chains well within the limits: 60 parentheses deep, 75 child() calls long.
        String(repeating: "(", count: 60) + "true" + String(repeating: ")", count: 60),
        "root" + String(repeating: ".child('a')", count: 75) + ".exists()",
    ])
    func validRulesAreAccepted(_ rule: String) throws {
        let source = "{\"rules\": {\".write\": \(JSONValue.string(rule).jsonText)}}"
        _ = try RulesDocument(source: source)
    }

    /// A chain of operators is built as deep as it is long: a very long one is refused at upload instead
    /// of exhausting the stack (100,000 `||` crashed the server). Chains of `||` and `&&` are checked and
    /// evaluated along the chain: a whitelist of 5,000 values is taken and evaluated, on a task's thread
    /// as requests are.
    @Test(arguments: [" || ", " && ", " + ", " == ", " < "])
    func longOperatorChainsAreRefusedAndShortOnesEvaluated(_ separator: String) async throws {
        let operand = separator == " || " || separator == " && " ? "true" : "1"
        let long = Array(repeating: operand, count: 100_000).joined(separator: separator)
        #expect(throws: RulesError.self) { try RulesDocument(source: "{\"rules\": {\".write\": \(JSONValue.string(long + " == true").jsonText)}}") }
        let members = String(repeating: ".val()", count: 100_000)
        #expect(throws: RulesError.self) { try RulesDocument(source: "{\"rules\": {\".write\": \(JSONValue.string("data" + members + " == 1").jsonText)}}") }
        let whitelist = (0..<5_000).map { "root.child('v').val() == 'value\($0)'" }.joined(separator: " || ")
        let rules = try RulesDocument(source: "{\"rules\": {\".read\": \(JSONValue.string(whitelist).jsonText)}}")
        let listed = try Node(json: try JSONValue(parsing: #"{"v":"value4999"}"#))
        let unlisted = try Node(json: try JSONValue(parsing: #"{"v":"other"}"#))
        #expect(try await Task { rules.canRead(.root, .auth(.null), root: listed, now: 0) }.value)
        #expect(try await Task { !rules.canRead(.root, .auth(.null), root: unlisted, now: 0) }.value)
    }
}

@Suite struct RulesTestSuiteTests {
    @Test func scenariosReportAllowedDeniedAndMistakes() throws {
        let rules = try RulesDocument(
            source: #"{"rules": {"posts": {".read": "auth != null", "$uid": {".write": "$uid === auth.uid", "$p": {".validate": "newData.hasChildren(['title'])"}}}}}"#
        )
        let file = try JSONValue(
            parsing: #"""
                {"data": {"posts": {"ada": {"p1": {"title": "Hi"}}}},
                 "tests": [
                   {"name": "owner writes", "auth": {"uid": "ada"}, "write": "/posts/ada/p2", "value": {"title": "x"}, "expect": "allowed"},
                   {"name": "untitled", "auth": {"uid": "ada"}, "write": "/posts/ada/p2", "value": {"body": "x"}, "expect": "denied"},
                   {"name": "anonymous read", "auth": null, "read": "/posts", "expect": "denied"},
                   {"name": "mixed update", "auth": {"uid": "ada"}, "update": "/posts", "value": {"ada/p3": {"title": "a"}, "bob/p3": {"title": "b"}}, "expect": "denied"},
                   {"name": "wrong expectation", "auth": {"uid": "ada"}, "read": "/posts", "expect": "denied"},
                   {"name": "no operation", "expect": "allowed"}
                 ]}
                """#
        )
        let outcomes = try RulesTestSuite(json: file).run(rules, now: 0)
        #expect(outcomes.map(\.passed) == [true, true, true, true, false, false])
        #expect(outcomes[4].detail == "expected denied, got allowed")
    }
}
