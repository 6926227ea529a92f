import Foundation
import HearthCore
import HearthRules
import HearthStorageRules
import Testing

/// Runs each `Fixtures/rules/NAME.rules` against its scenarios in `NAME.json` (the
/// ``StorageRulesTestSuite`` format); every scenario must pass.
@Suite struct RulesFixtureTests {
    static let directory: URL? = Bundle.module.url(forResource: "rules", withExtension: nil, subdirectory: "Fixtures")

    static let names: [String] = {
        guard let directory, let files = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        return files.filter { $0.hasSuffix(".rules") }.map { String($0.dropLast(".rules".count)) }.sorted()
    }()

    static func load(_ name: String) throws -> (StorageRules, StorageRulesTestSuite) {
        let directory = try #require(directory)
        let source = try String(contentsOf: directory.appendingPathComponent("\(name).rules"), encoding: .utf8)
        let json = try JSONValue(parsing: Array(try Data(contentsOf: directory.appendingPathComponent("\(name).json"))))
        return (try StorageRules(source: source), try StorageRulesTestSuite(json: json))
    }

    @Test func fixturesArePresent() {
        #expect(Self.names.count >= 7)
    }

    @Test(arguments: names)
    func scenariosPass(_ name: String) throws {
        let (rules, suite) = try Self.load(name)
        let outcomes = suite.run(rules)
        #expect(outcomes.count >= 4)
        for outcome in outcomes {
            #expect(outcome.passed, "\(name): \(outcome.name): \(outcome.detail)")
        }
    }

    /// The suite can fail: flipping every expectation of a fixture fails every scenario.
    @Test(arguments: names)
    func flippedExpectationsFail(_ name: String) throws {
        let directory = try #require(Self.directory)
        let rules = try Self.load(name).0
        let json = try JSONValue(parsing: Array(try Data(contentsOf: directory.appendingPathComponent("\(name).json"))))
        guard case .object(var members) = json, let index = members.firstIndex(where: { $0.key == "tests" }),
            case .array(let tests) = members[index].value
        else {
            Issue.record("\(name).json has no tests")
            return
        }
        members[index].value = .array(tests.map { test in
            guard case .object(var fields) = test, let at = fields.firstIndex(where: { $0.key == "expect" }) else { return test }
            fields[at].value = fields[at].value == .string("allowed") ? .string("denied") : .string("allowed")
            return .object(fields)
        })
        let outcomes = try StorageRulesTestSuite(json: .object(members)).run(rules)
        #expect(outcomes.allSatisfy { !$0.passed && $0.detail.hasPrefix("expected ") }, "\(name)")
    }
}
