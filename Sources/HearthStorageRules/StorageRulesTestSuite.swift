import Foundation
public import HearthCore
public import HearthRules

/// Scenarios that app authors write to unit-test their Storage rules: who does what to which object,
/// and whether it is allowed. `hearth storage rules test FILE` runs them.
///
/// The file is JSON:
/// ```json
/// {"bucket": "demo.appspot.com",
///  "now": "2026-01-01T00:00:00Z",
///  "objects": {"images/ada/a.png": {"size": 10, "contentType": "image/png", "metadata": {"owner": "ada"}}},
///  "tests": [
///    {"name": "owners upload", "auth": {"uid": "ada"}, "method": "create", "path": "images/ada/b.png",
///     "resource": {"size": 1024, "contentType": "image/png"}, "expect": "allowed"},
///    {"name": "strangers cannot delete", "auth": null, "method": "delete", "path": "images/ada/a.png", "expect": "denied"}]}
/// ```
///
/// - `bucket` (default `demo.appspot.com`) and `now` (RFC 3339 or seconds since 1970; default the
///   current time) apply to every test; a test may override either with its own `bucket` or `now`.
/// - `objects` are the existing objects: the one at a test's path is its `resource`. Fields: `size`,
///   `contentType`, `contentDisposition`, `contentEncoding`, `contentLanguage`, `cacheControl`,
///   `metadata` (strings), `md5Hash`, `crc32c`, `etag`, `generation`, `metageneration`, `timeCreated` and
///   `updated` (RFC 3339 or seconds).
/// - `method` is get, list, create, update or delete; `read` means get, and `write` means update when
///   the object exists, else create. For list, `path` is the prefix without its trailing slash.
/// - `resource` (create and update) gives fields of `request.resource`: for update they change the
///   existing object's fields, for create they describe the new object (size 0 and no content type
///   unless given). Without it, an update's `request.resource` is the existing object unchanged.
/// - `auth` is null (or absent) for unauthenticated requests, else `{"uid": …, "token": {…}}`; a
///   `token` without `sub` or `user_id` claims gets them from `uid`, as ID tokens have them.
///
/// Running it:
/// ```swift
/// let suite = try StorageRulesTestSuite(json: try JSONValue(parsing: testFile))
/// for outcome in suite.run(rules) where !outcome.passed { print("\(outcome.name): \(outcome.detail)") }
/// ```
public struct StorageRulesTestSuite: Sendable {
    public struct Outcome: Sendable {
        public var name: String
        public var passed: Bool
        /// What happened: "allowed by 5:7", "denied: 7:7: condition is false", or why the test is broken.
        public var detail: String
    }

    let bucket: String
    let now: Double
    let objects: [String: JSONValue]
    let tests: [JSONValue]

    public init(json: JSONValue) throws(RulesError) {
        guard case .object = json, case .array(let tests)? = json["tests"] else {
            throw RulesError([Diagnostic(column: 1, message: "a storage rules test file is an object with a \"tests\" array")])
        }
        switch json["bucket"] {
        case nil: bucket = "demo.appspot.com"
        case .string(let name)?: bucket = name
        default: throw RulesError([Diagnostic(column: 1, message: "\"bucket\" must be a string")])
        }
        if let value = json["now"] {
            guard let seconds = StorageRulesTestSuite.time(value) else {
                throw RulesError([Diagnostic(column: 1, message: "\"now\" must be an RFC 3339 time such as \"2026-01-01T00:00:00Z\", or seconds")])
            }
            now = seconds
        } else {
            now = Date().timeIntervalSince1970
        }
        var objects: [String: JSONValue] = [:]
        switch json["objects"] {
        case nil: break
        case .object(let members)?:
            for (name, fields) in members {
                guard case .object = fields else {
                    throw RulesError([Diagnostic(column: 1, message: "\"objects\": \"\(name)\" must be an object of fields")])
                }
                objects[name] = fields
            }
        default: throw RulesError([Diagnostic(column: 1, message: "\"objects\" must map object names to their fields")])
        }
        self.objects = objects
        self.tests = tests
    }

    public func run(_ rules: StorageRules) -> [Outcome] {
        tests.enumerated().map { index, test in run(test, number: index + 1, rules) }
    }

    func run(_ test: JSONValue, number: Int, _ rules: StorageRules) -> Outcome {
        let name: String = { if case .string(let s)? = test["name"] { return s } else { return "test \(number)" } }()
        func broken(_ message: String) -> Outcome { Outcome(name: name, passed: false, detail: message) }
        guard case .string(let expect)? = test["expect"], expect == "allowed" || expect == "denied" else {
            return broken("\"expect\" must be \"allowed\" or \"denied\"")
        }
        guard case .string(let path)? = test["path"] else { return broken("a test needs a \"path\" (the object name, or the prefix for list)") }
        guard case .string(let methodName)? = test["method"] else {
            return broken("a test needs a \"method\": get, list, create, update, delete, read or write")
        }
        var bucket = self.bucket
        if case .string(let override)? = test["bucket"] { bucket = override }
        var now = self.now
        if let value = test["now"] {
            guard let seconds = StorageRulesTestSuite.time(value) else { return broken("\"now\" must be an RFC 3339 time or seconds") }
            now = seconds
        }
        let existing: StorageObjectFields?
        do throws(FieldError) {
            if let fields = objects[path] {
                existing = try StorageRulesTestSuite.fields(fields, name: path, bucket: bucket, base: nil)
            } else {
                existing = nil
            }
        } catch {
            return broken("\"objects\": \"\(path)\": \(error.message)")
        }
        let method: StorageRuleMethod
        switch methodName {
        case "read": method = .get
        case "write": method = existing == nil ? .create : .update
        default:
            guard let named = StorageRuleMethod(rawValue: methodName) else {
                return broken("unknown method \"\(methodName)\": use get, list, create, update, delete, read or write")
            }
            method = named
        }
        var auth = test["auth"] ?? .null
        if case .object(var members) = auth, case .string(let uid)? = auth["uid"] {
            // ID tokens carry the uid as `sub` and `user_id`; rules reading token.sub expect it.
            if case .object(var claims)? = auth["token"] {
                if !claims.contains(where: { $0.key == "sub" }) { claims.append(("sub", .string(uid))) }
                if !claims.contains(where: { $0.key == "user_id" }) { claims.append(("user_id", .string(uid))) }
                members.removeAll { $0.key == "token" }
                members.append(("token", .object(claims)))
            } else if auth["token"] == nil {
                members.append(("token", .object([("sub", .string(uid)), ("user_id", .string(uid))])))
            }
            auth = .object(members)
        }
        var requestResource: StorageObjectFields?
        if method == .create || method == .update {
            do throws(FieldError) {
                let base = method == .update ? existing : nil
                if let fields = test["resource"] {
                    requestResource = try StorageRulesTestSuite.fields(fields, name: path, bucket: bucket, base: base)
                } else {
                    requestResource = base ?? StorageObjectFields(name: path, bucket: bucket)
                }
                if method == .create {
                    requestResource?.timeCreated = now
                    requestResource?.updated = now
                    requestResource?.generation = (existing?.generation ?? 0) + 1
                } else if test["resource"] != nil {
                    requestResource?.updated = now
                    requestResource?.metageneration += 1
                }
            } catch {
                return broken("\"resource\": \(error.message)")
            }
        }
        let request = StorageRuleRequest(
            method: method, bucket: bucket, path: path, auth: auth, time: now,
            resource: method == .list ? nil : existing, requestResource: requestResource)
        let decision = rules.evaluate(request)
        let got = decision.allowed ? "allowed" : "denied"
        let why = decision.grantedBy.map { "allowed by \($0.line):\($0.column)" } ?? "denied: \(decision.explanation)"
        return Outcome(name: name, passed: got == expect, detail: got == expect ? why : "expected \(expect), got \(why)")
    }

    struct FieldError: Error {
        var message: String
    }

    /// Object fields from JSON, over `base` when given (an update changes some fields of the object).
    static func fields(_ json: JSONValue, name: String, bucket: String, base: StorageObjectFields?) throws(FieldError) -> StorageObjectFields {
        guard case .object(let members) = json else { throw FieldError(message: "fields must be an object") }
        var object = base ?? StorageObjectFields(name: name, bucket: bucket)
        func string(_ key: String, _ value: JSONValue) throws(FieldError) -> String? {
            switch value {
            case .string(let s): return s
            case .null: return nil
            default: throw FieldError(message: "\"\(key)\" must be a string")
            }
        }
        func integer(_ key: String, _ value: JSONValue) throws(FieldError) -> Int64 {
            guard case .number(let n) = value, let i = Int64(exactly: n) else { throw FieldError(message: "\"\(key)\" must be a whole number") }
            return i
        }
        for (key, value) in members {
            switch key {
            case "size": object.size = try integer(key, value)
            case "contentType": object.contentType = try string(key, value)
            case "contentDisposition": object.contentDisposition = try string(key, value)
            case "contentEncoding": object.contentEncoding = try string(key, value)
            case "contentLanguage": object.contentLanguage = try string(key, value)
            case "cacheControl": object.cacheControl = try string(key, value)
            case "md5Hash": object.md5Hash = try string(key, value)
            case "crc32c": object.crc32c = try string(key, value)
            case "etag": object.etag = try string(key, value)
            case "generation": object.generation = try integer(key, value)
            case "metageneration": object.metageneration = try integer(key, value)
            case "timeCreated", "updated":
                guard let seconds = time(value) else { throw FieldError(message: "\"\(key)\" must be an RFC 3339 time or seconds") }
                if key == "timeCreated" { object.timeCreated = seconds } else { object.updated = seconds }
            case "metadata":
                guard case .object(let entries) = value else { throw FieldError(message: "\"metadata\" must be an object of strings") }
                var metadata: [String: String] = [:]
                for (entryKey, entryValue) in entries {
                    guard case .string(let s) = entryValue else { throw FieldError(message: "metadata \"\(entryKey)\" must be a string") }
                    metadata[entryKey] = s
                }
                object.metadata = metadata
            default: throw FieldError(message: "unknown field \"\(key)\"")
            }
        }
        return object
    }

    /// Seconds since 1970 from an RFC 3339 string or a number.
    static func time(_ value: JSONValue) -> Double? {
        switch value {
        case .number(let n): return n
        case .string(let s): return RuleTimestamp.parse(s)?.unixTime
        default: return nil
        }
    }
}
