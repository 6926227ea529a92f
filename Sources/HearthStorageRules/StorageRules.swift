public import HearthRules

/// A bucket's security rules in Firebase's Cloud Storage rules language: parsed and checked once,
/// then evaluated for each request.
///
/// The language is Firebase's (`rules_version = '2'`): `service firebase.storage` holding nested
/// `match` blocks with literal segments, `{name}` and `{name=**}` wildcards, `allow` statements for
/// read (get, list) and write (create, update, delete), and functions with `let`. A request is allowed
/// when any `allow` for its method, in any `match` its path satisfies, has a condition that is true; a
/// condition that fails to evaluate counts as false. The path the rules see is
/// `/b/<bucket>/o/<object name>`.
///
/// Without `rules_version = '2'` the file is version 1, where a recursive wildcard matches one or
/// more segments and must end its path; in version 2 it matches zero or more.
///
/// For example:
/// ```swift
/// let rules = try StorageRules(source: """
///     rules_version = '2';
///     service firebase.storage {
///       match /b/{bucket}/o {
///         match /images/{uid}/{file=**} {
///           allow read;
///           allow write: if request.auth.uid == uid;
///         }
///       }
///     }
///     """)
/// let decision = rules.evaluate(StorageRuleRequest(method: .get, bucket: "demo", path: "images/ada/a.png", time: 0))
/// // decision.allowed == true, decision.grantedBy?.text == "allow read;"
/// ```
public struct StorageRules: Sendable {
    public let source: String
    let text: SourceText
    let file: RulesFile

    /// Parses and checks; throws RulesError with every diagnostic (1-based line and column) it finds.
    ///
    /// For example:
    /// ```swift
    /// do { rules = try StorageRules(source: uploaded) } catch { print(error.message) }  // "3:11: unknown method 'reed' in allow; …"
    /// ```
    public init(source: String) throws(RulesError) {
        let text = SourceText(source)
        var parser = RulesParser(text)
        let parsed = parser.parseFile()
        var checker = RulesChecker(source: text, functions: parsed.functions)
        let checked = checker.check(parsed)
        // In file order; the index keeps diagnostics at one place in the order they were found.
        let diagnostics = (parser.diagnostics + checker.diagnostics).enumerated()
            .sorted { ($0.element.line, $0.element.column, $0.offset) < ($1.element.line, $1.element.column, $1.offset) }
            .map(\.element)
        guard diagnostics.isEmpty else { throw RulesError(diagnostics) }
        self.source = source
        self.text = text
        self.file = checked
    }

    /// Open: `allow read, write: if true` for every path; closed: nothing allowed (admin only).
    ///
    /// For example:
    /// ```swift
    /// let rules = StorageRules.defaults(open: emulatorMode)
    /// ```
    public static func defaults(open: Bool) -> StorageRules {
        let source = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /{allPaths=**} {
                  allow read, write: if \(open ? "true" : "false");
                }
              }
            }

            """
        return try! StorageRules(source: source)  // A constant that compiles.
    }

    /// Whether the rules allow `request`: the first `allow` in the file (for the request's method, in a
    /// `match` the path satisfies) whose condition is true grants it. Never throws and never traps: a
    /// condition that fails to evaluate is false, and the explanation says why.
    ///
    /// For example:
    /// ```swift
    /// let decision = rules.evaluate(StorageRuleRequest(method: .delete, bucket: "demo", path: "photos/p1", time: now))
    /// // decision.allowed == false, decision.explanation == "8:7: resource is null"
    /// ```
    public func evaluate(_ request: StorageRuleRequest) -> StorageRuleDecision {
        let segments = StorageRules.segments(of: request)
        let pathText = "/" + segments.joined(separator: "/")
        let candidates = PathMatcher(version: file.version).candidates(in: file.body, for: segments)
            .filter { $0.allow.methods.contains(request.method) }
        let noRule = "no rule allows \(request.method.rawValue) on \(pathText)"
        guard !candidates.isEmpty else { return StorageRuleDecision(allowed: false, explanation: noRule) }

        var evaluator = StorageRulesEvaluator(
            functions: file.functions, source: text,
            request: StorageRules.requestValue(request, segments: segments),
            resource: request.resource?.ruleValue ?? .null)
        var lastFailure = noRule
        for candidate in candidates {
            let allow = candidate.allow
            let grant = StorageRuleGrant(line: allow.line, column: allow.column, text: allow.text)
            guard let condition = allow.condition else { return StorageRuleDecision(allowed: true, grantedBy: grant) }
            let place = "\(allow.line):\(allow.column)"
            // Each condition gets the whole call budget.
            evaluator.calls = 0
            do throws(EvaluationError) {
                let value = try evaluator.evaluate(condition, in: StorageRulesEvaluator.Scope(wildcards: candidate.frames[...]))
                switch value {
                case .bool(true): return StorageRuleDecision(allowed: true, grantedBy: grant)
                case .bool(false): lastFailure = "\(place): condition is false"
                default: lastFailure = "\(place): condition is \(value.typeName), not bool"
                }
            } catch {
                lastFailure = "\(place): \(error.message)"
            }
        }
        return StorageRuleDecision(allowed: false, explanation: lastFailure)
    }

    /// The path the rules match: `b`, the bucket, `o`, then the object name's segments (empty ones kept,
    /// so `a//b` has three).
    static func segments(of request: StorageRuleRequest) -> [String] {
        ["b", request.bucket, "o"]
            + (request.path.isEmpty ? [] : request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init))
    }

    /// The `request` variable.
    static func requestValue(_ request: StorageRuleRequest, segments: [String]) -> RuleValue {
        var map = RuleMap()
        map["auth"] = RuleValue(json: request.auth)
        map["path"] = .path(RulePath(segments: segments, absolute: true))
        map["time"] = .timestamp(RuleTimestamp(unixTime: request.time))
        map["method"] = .string(request.method.rawValue)
        map["resource"] = request.requestResource?.ruleValue ?? .null
        return .map(map)
    }

    /// Evaluates one expression on its own (tests and the expression fixtures): `variables` are visible
    /// as wildcards are.
    static func evaluate(
        expression: String, variables: [String: RuleValue] = [:], request: StorageRuleRequest
    ) throws(RulesError) -> Result<RuleValue, EvaluationError> {
        let text = SourceText(expression)
        var parser = RulesParser(text)
        let parsed: RuleExpression
        do throws(Diagnostic) {
            parsed = try parser.parseLoneExpression()
        } catch {
            throw RulesError([error])
        }
        var checker = RulesChecker(source: text, functions: [])
        let resolved = checker.resolve(parsed, RulesChecker.Scope(variables: Set(variables.keys)))
        let diagnostics = parser.diagnostics + checker.diagnostics
        guard diagnostics.isEmpty else { throw RulesError(diagnostics) }
        let segments = StorageRules.segments(of: request)
        var evaluator = StorageRulesEvaluator(
            functions: [], source: text, request: StorageRules.requestValue(request, segments: segments),
            resource: request.resource?.ruleValue ?? .null)
        do throws(EvaluationError) {
            return .success(try evaluator.evaluate(resolved, in: StorageRulesEvaluator.Scope(wildcards: [variables])))
        } catch {
            return .failure(error)
        }
    }
}
