import Foundation
import HearthCore
import HearthRules
import Testing

/// Replays `Fixtures/expressions.json`: one rule expression, its context, and whether it allows, denies
/// (false or a runtime error) or is refused at upload.
@Suite struct ExpressionFixtureTests {
    static let scenarios: [JSONValue] = {
        guard let url = Bundle.module.url(forResource: "expressions", withExtension: "json", subdirectory: "Fixtures"),
            let data = try? Data(contentsOf: url),
            case .array(let items)? = try? JSONValue(parsing: Array(data))
        else { return [] }
        return items
    }()

    @Test func fixturesArePresent() {
        #expect(Self.scenarios.count >= 150)
    }

    @Test(arguments: scenarios)
    func expression(_ scenario: JSONValue) throws {
        guard case .string(let name)? = scenario["name"], case .string(let rule)? = scenario["rule"],
            case .string(let kind)? = scenario["kind"], case .string(let expect)? = scenario["expect"],
            case .string(let pathText)? = scenario["path"]
        else {
            Issue.record("malformed scenario \(scenario.jsonText)")
            return
        }
        let path = try DatabasePath(pathText)
        // Place the rule at its path in a rules document, with a wildcard for each bound variable.
        var variables: [String: String] = [:]
        if case .object(let members)? = scenario["vars"] {
            for (key, value) in members { if case .string(let s) = value { variables[key] = s } }
        }
        let ruleKey = kind == "read" ? ".read" : (kind == "write" ? ".write" : ".validate")
        var body: JSONValue = .object([(key: ruleKey, value: .string(rule))])
        for key in path.keys.reversed() {
            let segment = variables.first { $0.value == key.string }?.key ?? key.string
            body = .object([(key: segment, value: body)])
        }
        let source = JSONValue.object([(key: "rules", value: body)]).jsonText
        let document: RulesDocument
        do {
            document = try RulesDocument(source: source)
        } catch {
            #expect(expect == "invalid", "\(name): refused at upload: \(error)")
            return
        }
        guard expect != "invalid" else {
            Issue.record("\(name): expected to be refused at upload")
            return
        }
        let auth = scenario["auth"] ?? .null
        let now: Double = { if case .number(let n)? = scenario["now"] { return n } else { return 0 } }()
        let root = try Node(json: scenario["root"] ?? .null)
        let allowed: Bool
        switch kind {
        case "read":
            var query = RuleQuery()
            if case .object(let members)? = scenario["query"] {
                // A scenario that gives a query states it fully: missing fields are false or null.
                query.orderByKey = false
                for (key, value) in members {
                    switch (key, value) {
                    case ("orderByKey", .bool(let b)): query.orderByKey = b
                    case ("orderByPriority", .bool(let b)): query.orderByPriority = b
                    case ("orderByValue", .bool(let b)): query.orderByValue = b
                    case ("orderByChild", .string(let s)): query.orderByChild = s
                    case ("startAt", _): query.startAt = value
                    case ("endAt", _): query.endAt = value
                    case ("equalTo", _): query.equalTo = value
                    case ("limitToFirst", .number(let n)): query.limitToFirst = n
                    case ("limitToLast", .number(let n)): query.limitToLast = n
                    default: break
                    }
                }
            }
            allowed = document.canRead(path, .auth(auth), root: root, query: query, now: now)
        default:
            let newRoot = try Node(json: scenario["newRoot"] ?? .null)
            if kind == "validate" {
                // A .validate alone never grants: grant the write at the root, keep the rule under test.
                let granted = source.replacingOccurrences(of: #"{"rules":{"#, with: #"{"rules":{".write":true,"#)
                let withWrite = try RulesDocument(source: granted)
                allowed = withWrite.canWrite(path, .auth(auth), before: root, after: newRoot, now: now)
            } else {
                allowed = document.canWrite(path, .auth(auth), before: root, after: newRoot, now: now)
            }
        }
        #expect(allowed == (expect == "allow"), "\(name): \(rule)")
    }
}

extension JSONValue: CustomTestStringConvertible {
    public var testDescription: String {
        if case .string(let name)? = self["name"] { return name }
        return jsonText
    }
}
