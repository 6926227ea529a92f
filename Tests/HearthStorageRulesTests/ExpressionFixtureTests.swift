import Foundation
import HearthCore
import HearthRules
@testable import HearthStorageRules
import Testing

/// Replays `Fixtures/expressions.json`: one expression, the request it sees, and what it gives.
///
/// Each case has `name` and `expr`, optionally `vars` (names bound like wildcards), `auth`, `method`
/// (default get), `path` (default images/ada/a.png), `time` (default 2026-01-01T00:00:00Z), `resource`
/// and `requestResource` (object fields as in the test-suite format); and one expectation:
/// - `value`: JSON the result must equal under the rules' `==` (whole JSON numbers are ints, so `type`
///   tells int from float when it matters);
/// - `text`: what `string()` of the result gives (timestamps, durations, paths);
/// - `error`: part of the evaluation error's message;
/// - `invalid`: part of the diagnostic that refuses the expression before it runs.
/// An optional `type` is the result's type name as `is` knows it.
@Suite struct ExpressionFixtureTests {
    static let cases: [JSONValue] = {
        guard let url = Bundle.module.url(forResource: "expressions", withExtension: "json", subdirectory: "Fixtures"),
            let data = try? Data(contentsOf: url),
            case .array(let items)? = try? JSONValue(parsing: Array(data))
        else { return [] }
        return items
    }()

    @Test func fixturesArePresent() {
        #expect(Self.cases.count >= 300)
    }

    @Test(arguments: cases)
    func expression(_ fixture: JSONValue) throws {
        guard case .string(let name)? = fixture["name"], case .string(let expression)? = fixture["expr"] else {
            Issue.record("malformed case \(fixture.jsonText)")
            return
        }
        let request = try Self.request(fixture)
        var variables: [String: RuleValue] = [:]
        if case .object(let members)? = fixture["vars"] {
            for (key, value) in members { variables[key] = RuleValue(json: value) }
        }
        let result: Result<RuleValue, EvaluationError>
        do {
            result = try StorageRules.evaluate(expression: expression, variables: variables, request: request)
        } catch {
            if case .string(let expected)? = fixture["invalid"] {
                #expect(error.message.contains(expected), "\(name): refused with \(error.message)")
            } else {
                Issue.record("\(name): refused: \(error.message)")
            }
            return
        }
        if case .string(let expected)? = fixture["invalid"] {
            Issue.record("\(name): expected to be refused (\(expected)), got \(result)")
            return
        }
        switch result {
        case .failure(let error):
            if case .string(let expected)? = fixture["error"] {
                #expect(error.message.contains(expected), "\(name): error \(error.message)")
            } else {
                Issue.record("\(name): unexpected error: \(error.message)")
            }
        case .success(let value):
            if let expected = fixture["value"] {
                #expect(RuleValue.equal(value, RuleValue(json: expected)), "\(name): got \(value.literal)")
            } else if case .string(let expected)? = fixture["text"] {
                #expect(value.text == expected, "\(name): got \(value.text)")
            } else {
                Issue.record("\(name): expected an error, got \(value.literal)")
            }
            if case .string(let type)? = fixture["type"] {
                #expect(value.typeName == type, "\(name): type \(value.typeName)")
            }
        }
    }

    static func request(_ fixture: JSONValue) throws -> StorageRuleRequest {
        let path: String = { if case .string(let s)? = fixture["path"] { return s } else { return "images/ada/a.png" } }()
        let method: StorageRuleMethod = {
            if case .string(let s)? = fixture["method"], let m = StorageRuleMethod(rawValue: s) { return m } else { return .get }
        }()
        let time = StorageRulesTestSuite.time(fixture["time"] ?? .string("2026-01-01T00:00:00Z"))!
        func object(_ key: String) throws -> StorageObjectFields? {
            guard let fields = fixture[key] else { return nil }
            return try StorageRulesTestSuite.fields(fields, name: path, bucket: "demo", base: nil)
        }
        return StorageRuleRequest(
            method: method, bucket: "demo", path: path, auth: fixture["auth"] ?? .null, time: time,
            resource: try object("resource"), requestResource: try object("requestResource"))
    }
}

extension JSONValue: CustomTestStringConvertible {
    public var testDescription: String {
        if case .string(let name)? = self["name"] { return name }
        return jsonText
    }
}
