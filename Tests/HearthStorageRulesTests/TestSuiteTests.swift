import HearthCore
import HearthRules
import HearthStorageRules
import Testing

/// The scenario runner behind `hearth storage rules test`.
@Suite struct TestSuiteTests {
    /// Create and update are told apart, so `write` can be checked to pick the right one.
    let rules = try! StorageRules(source: """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o/{name=**} {
            allow create: if request.resource.metadata.get('kind', '') == 'new';
            allow update: if resource.metadata.kind == 'old' && request.resource.metadata.kind == 'old';
            allow get: if request.auth.token.sub == request.auth.uid;
            allow list: if bucket == 'other';
            allow delete: if request.time > timestamp.date(2030, 1, 1);
          }
        }
        """)

    func suite(_ json: String) throws -> StorageRulesTestSuite {
        try StorageRulesTestSuite(json: try JSONValue(parsing: json))
    }

    @Test func aWrongExpectationIsReportedAsFailed() throws {
        let outcomes = try suite("""
            {"objects": {"a.txt": {"metadata": {"kind": "old"}}},
             "tests": [
               {"name": "right", "method": "create", "path": "b.txt", "resource": {"metadata": {"kind": "new"}}, "expect": "allowed"},
               {"name": "wrong", "method": "create", "path": "b.txt", "resource": {"metadata": {"kind": "other"}}, "expect": "allowed"},
               {"name": "also wrong", "method": "update", "path": "a.txt", "expect": "denied"}]}
            """).run(rules)
        #expect(outcomes.map(\.name) == ["right", "wrong", "also wrong"])
        #expect(outcomes.map(\.passed) == [true, false, false])
        #expect(outcomes[0].detail == "allowed by 4:5")
        #expect(outcomes[1].detail == "expected allowed, got denied: 4:5: condition is false")
        #expect(outcomes[2].detail == "expected denied, got allowed by 5:5")
    }

    @Test func readAndWriteMapToMethods() throws {
        let outcomes = try suite("""
            {"objects": {"a.txt": {"metadata": {"kind": "old"}}},
             "tests": [
               {"name": "write on an existing object updates", "method": "write", "path": "a.txt", "expect": "allowed"},
               {"name": "write on a new object creates", "method": "write", "path": "b.txt", "resource": {"metadata": {"kind": "new"}}, "expect": "allowed"},
               {"name": "create on a new object without kind", "method": "create", "path": "b.txt", "expect": "denied"},
               {"name": "read is get (token.sub comes from uid)", "auth": {"uid": "ada"}, "method": "read", "path": "a.txt", "expect": "allowed"},
               {"name": "an explicit sub is kept", "auth": {"uid": "ada", "token": {"sub": "bob"}}, "method": "get", "path": "a.txt", "expect": "denied"},
               {"name": "list in another bucket", "bucket": "other", "method": "list", "path": "", "expect": "allowed"},
               {"name": "delete later", "now": "2031-01-01T00:00:00Z", "method": "delete", "path": "a.txt", "expect": "allowed"},
               {"name": "delete now", "method": "delete", "path": "a.txt", "expect": "denied"}]}
            """).run(rules)
        for outcome in outcomes { #expect(outcome.passed, "\(outcome.name): \(outcome.detail)") }
    }

    @Test func brokenScenariosFailWithAReason() throws {
        let outcomes = try suite("""
            {"tests": [
               {"method": "get", "path": "a", "expect": "maybe"},
               {"name": "no path", "method": "get", "expect": "allowed"},
               {"name": "bad method", "method": "fetch", "path": "a", "expect": "allowed"},
               {"name": "bad field", "method": "create", "path": "a", "resource": {"colour": "red"}, "expect": "allowed"},
               {"name": "bad size", "method": "create", "path": "a", "resource": {"size": "big"}, "expect": "allowed"},
               {"name": "bad time", "now": "yesterday", "method": "get", "path": "a", "expect": "allowed"}]}
            """).run(rules)
        #expect(outcomes.allSatisfy { !$0.passed })
        #expect(outcomes.map(\.name) == ["test 1", "no path", "bad method", "bad field", "bad size", "bad time"])
        #expect(outcomes.map(\.detail) == [
            "\"expect\" must be \"allowed\" or \"denied\"",
            "a test needs a \"path\" (the object name, or the prefix for list)",
            "unknown method \"fetch\": use get, list, create, update, delete, read or write",
            "\"resource\": unknown field \"colour\"",
            "\"resource\": \"size\" must be a whole number",
            "\"now\" must be an RFC 3339 time or seconds",
        ])
    }

    @Test func malformedFilesAreRefused() {
        for (json, message) in [
            (#"[]"#, "a storage rules test file is an object with a \"tests\" array"),
            (#"{"tests": {}}"#, "a storage rules test file is an object with a \"tests\" array"),
            (#"{"tests": [], "bucket": 3}"#, "\"bucket\" must be a string"),
            (#"{"tests": [], "now": "soon"}"#, "\"now\" must be an RFC 3339 time such as \"2026-01-01T00:00:00Z\", or seconds"),
            (#"{"tests": [], "objects": []}"#, "\"objects\" must map object names to their fields"),
            (#"{"tests": [], "objects": {"a": 1}}"#, "\"objects\": \"a\" must be an object of fields"),
        ] {
            do {
                _ = try suite(json)
                Issue.record("accepted \(json)")
            } catch let error as RulesError {
                #expect(error.diagnostics.map(\.message) == [message])
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func timesAcceptOffsetsAndSeconds() throws {
        let outcomes = try suite("""
            {"now": "2030-01-01T02:00:00+01:00",
             "tests": [
               {"name": "an offset is applied", "method": "delete", "path": "a", "expect": "allowed"},
               {"name": "seconds work too", "now": 1893456000, "method": "delete", "path": "a", "expect": "denied"}]}
            """).run(rules)
        for outcome in outcomes { #expect(outcome.passed, "\(outcome.name): \(outcome.detail)") }
    }
}
