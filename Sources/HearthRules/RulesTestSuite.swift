public import HearthCore

/// Scenarios that app authors write to unit-test their rules: who does what, where, and whether it is
/// allowed. `hearth rules test FILE` runs them.
///
/// The file is JSON:
/// ```json
/// {"data": {"posts": {"ada": {"p1": {"title": "Hi"}}}},
///  "tests": [
///    {"name": "owners write", "auth": {"uid": "ada"}, "write": "/posts/ada/p2", "value": {"title": "x"}, "expect": "allowed"},
///    {"name": "strangers read nothing", "auth": null, "read": "/posts", "expect": "denied"},
///    {"name": "updates are checked whole", "auth": {"uid": "ada"}, "update": "/posts",
///     "value": {"ada/p3": {"title": "a"}, "bob/p3": {"title": "b"}}, "expect": "denied"}]}
/// ```
public struct RulesTestSuite: Sendable {
    public struct Outcome: Sendable {
        public var name: String
        public var passed: Bool
        public var detail: String
    }

    public let data: Node
    public let tests: [JSONValue]

    public init(json: JSONValue) throws(RulesError) {
        guard case .object = json, case .array(let tests)? = json["tests"] else {
            throw RulesError([Diagnostic(column: 1, message: "a rules test file is an object with a \"tests\" array")])
        }
        do {
            data = try Node(json: json["data"] ?? .null, context: ServerValueContext(now: 0, existing: .empty))
        } catch {
            throw RulesError([Diagnostic(column: 1, message: "\"data\": \(error.message)")])
        }
        self.tests = tests
    }

    /// Runs every scenario against `rules` at time `now`.
    public func run(_ rules: RulesDocument, now: Double) -> [Outcome] {
        tests.enumerated().map { index, test in run(test, number: index + 1, rules, now: now) }
    }

    func run(_ test: JSONValue, number: Int, _ rules: RulesDocument, now: Double) -> Outcome {
        let name: String = { if case .string(let s)? = test["name"] { return s } else { return "test \(number)" } }()
        func broken(_ message: String) -> Outcome { Outcome(name: name, passed: false, detail: message) }
        guard case .string(let expect)? = test["expect"], expect == "allowed" || expect == "denied" else {
            return broken("\"expect\" must be \"allowed\" or \"denied\"")
        }
        let allowed: Bool
        do {
            allowed = try Self.allows(test, rules, data: data, now: now)
        } catch {
            return broken(error.message)
        }
        let got = allowed ? "allowed" : "denied"
        return Outcome(name: name, passed: got == expect, detail: got == expect ? got : "expected \(expect), got \(got)")
    }

    /// Whether `rules` allow one scenario on `data`: `{"auth": …, "read": "/path"}`, `{"write": "/path",
    /// "value": …}` or `{"update": "/path", "value": {"a/b": …}}`.
    ///
    /// For example:
    /// ```swift
    /// let allowed = try RulesTestSuite.allows(try JSONValue(parsing: #"{"auth": null, "read": "/posts"}"#), rules, data: root, now: now)
    /// ```
    public static func allows(_ test: JSONValue, _ rules: RulesDocument, data: Node, now: Double) throws(RulesError) -> Bool {
        try explain(test, rules, data: data, now: now).allowed
    }

    /// Runs one scenario like ``allows(_:_:data:now:)`` and says why: every rule evaluated, with its
    /// line, and the one that decided — what the console's simulator runs against a live database.
    public static func explain(_ test: JSONValue, _ rules: RulesDocument, data: Node, now: Double) throws(RulesError) -> RulesExplanation {
        let subject = RulesDocument.Subject.auth(test["auth"] ?? .null)
        func fail(_ message: String) -> RulesError { RulesError([Diagnostic(column: 1, message: message)]) }
        do {
            if case .string(let path)? = test["read"] {
                return rules.explainRead(try DatabasePath(path), subject, root: data, now: now)
            } else if case .string(let path)? = test["write"] {
                let location = try DatabasePath(path)
                let value = try Node(json: test["value"] ?? .null, depth: location.count, context: ServerValueContext(now: now, existing: data.child(at: location)))
                return rules.explainWrite([location], subject, before: data, after: data.setting(value, at: location), now: now)
            } else if case .string(let path)? = test["update"], case .object(let members)? = test["value"] {
                let location = try DatabasePath(path)
                var after = data
                var targets: [DatabasePath] = []
                // As the engine applies an update: values, then priorities (`a/.priority`), each checked at its node.
                let items = try members.map { (key, value) throws(PathError) in (path: location.appending(try DatabasePath(updateKey: key)), value: value) }
                for item in items.filter({ !$0.path.isPriority }) + items.filter(\.path.isPriority) {
                    let context = ServerValueContext(now: now, existing: data.child(at: item.path))
                    let node: Node = item.path.isPriority
                        ? try Node.convertPriority(item.value, context: context).map { .leaf($0.primitive) } ?? .empty
                        : try Node(json: item.value, depth: item.path.count, context: context)
                    after = after.setting(node, at: item.path)
                    targets.append(item.path.node)
                }
                return rules.explainWrite(targets, subject, before: data, after: after, now: now)
            }
            throw fail("a scenario needs \"read\", \"write\" (with \"value\") or \"update\" (with an object \"value\")")
        } catch let error as PathError {
            throw fail(error.message)
        } catch let error as DataError {
            throw fail(error.message)
        } catch let error as RulesError {
            throw error
        } catch {
            throw fail("\(error)")
        }
    }
}
