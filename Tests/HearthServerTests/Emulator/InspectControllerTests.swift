import Foundation
import HearthCore
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

/// The emulator's `/.inspect/…`: rules coverage counted from real requests, as JSON and as a page, new
/// with new rules; the list of databases; and outside emulator mode, no coverage and the list for the
/// admin only.
@Suite struct InspectControllerTests {
    static let rules = #"{"rules": {"notes": {".read": "auth != null", ".write": "auth != null", ".validate": "newData.isString()"}, "open": {".read": true}}}"#

    @Test func coverageCountsWhatRequestsEvaluated() async throws {
        try await TestServer(emulator: true).run { client, _ async throws in
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", Self.rules).status == .ok)
            #expect(try await client.call(.get, "/notes.json?ns=demo", headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/notes.json?ns=demo", headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/open.json?ns=demo", headers: [:]).status == .ok)
            // The admin is not judged by the rules: nothing counted.
            #expect(try await client.call(.put, "/notes.json?ns=demo", #""hi""#).status == .ok)

            // Anyone may read it, as the emulator's.
            let reply = try await client.call(.get, "/.inspect/coverage.json?ns=demo", headers: [:])
            #expect(reply.status == .ok)
            let json = try #require(reply.json)
            #expect(json["namespace"] == .string("demo"))
            guard case .array(let rules)? = json["rules"] else { Issue.record("no rules in \(reply.body)"); return }
            #expect(rules.compactMap { $0["rule"]?.stringValue } == ["rules/notes/.read", "rules/notes/.write", "rules/notes/.validate", "rules/open/.read"])
            #expect(rules.map { $0["evaluations"] } == [.number(2), .number(0), .number(0), .number(1)])
            #expect(rules.map { $0["denied"] } == [.number(2), .number(0), .number(0), .number(0)])
            #expect(rules[0]["expression"] == .string("auth != null") && rules[0]["line"] == .number(1))

            // The page: the source with each rule marked, its counts on hover, and a table.
            let page = try await client.call(.get, "/.inspect/coverage?ns=demo", headers: [:])
            #expect(page.status == .ok && page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            #expect(page.body.contains(#"<span class="rule denied" title="rules/notes/.read: evaluated 2 times: 0 allowed, 2 refused">&quot;auth != null&quot;</span>"#))
            #expect(page.body.contains(#"<span class="rule never" title="rules/notes/.write: never evaluated">"#))
            #expect(page.body.contains(#"<span class="rule allowed" title="rules/open/.read: evaluated 1 time: 1 allowed, 0 refused">true</span>"#))
            #expect(page.body.contains("<td>1</td><td>2</td><td>0</td><td>2</td>"))

            // The same rules saved again (as rules-unit-testing does for every test file) count on; new
            // rules start a new count.
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", Self.rules).status == .ok)
            let kept = try #require(try await client.call(.get, "/.inspect/coverage.json?ns=demo").json)
            guard case .array(let keptRules)? = kept["rules"] else { Issue.record("no rules"); return }
            #expect(keptRules.first?["evaluations"] == .number(2))
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", Self.rules.replacingOccurrences(of: "true", with: "false")).status == .ok)
            let fresh = try #require(try await client.call(.get, "/.inspect/coverage.json?ns=demo").json)
            guard case .array(let counted)? = fresh["rules"] else { Issue.record("no rules"); return }
            #expect(counted.count == 4 && counted.allSatisfy { $0["evaluations"] == .number(0) })

            // A database nobody used has no coverage yet; the list names every database.
            let missing = try await client.call(.get, "/.inspect/coverage.json?ns=nobody")
            #expect(missing.status == .notFound && missing.error?.contains("nobody") == true)
            let databases = try await client.call(.get, "/.inspect/databases.json", headers: [:])
            let names = Self.names(databases.json)
            #expect(names.contains("demo") && !names.contains("nobody") && names == names.sorted() && Set(names).count == names.count, "\(names)")
        }
    }

    @Test func outsideEmulatorModeThereIsNoCoverageAndTheListIsTheAdmins() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/a.json?ns=demo", "1")
            let coverage = try await client.call(.get, "/.inspect/coverage.json?ns=demo")
            #expect(coverage.status == .notFound && coverage.error?.contains("--emulator") == true)
            let page = try await client.call(.get, "/.inspect/coverage?ns=demo")
            #expect(page.status == .notFound && page.error?.contains("--emulator") == true)
            #expect(try await client.call(.get, "/.inspect/databases.json", headers: [:]).status == .unauthorized)
            #expect(Self.names(try await client.call(.get, "/.inspect/databases.json").json).contains("demo"))
        }
    }

    /// Whatever a rules source holds stays text on the page: `<`, `&`, and a `"` followed by a combining
    /// mark (one `Character`) in a key, which must not end the `title` attribute it is quoted in.
    @Test func thePageEscapesTheRules() async throws {
        try await TestServer(emulator: true).run { client, _ async throws in
            let key = "x\\\"\u{301} style=color:red <b>&amp;"
            let rules = #"{"rules": {"\#(key)": {".read": "auth != null"}}}"#
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", rules).status == .ok)
            let page = try await client.call(.get, "/.inspect/coverage?ns=demo")
            #expect(page.status == .ok)
            #expect(!page.body.contains("<b>") && !page.body.contains("\"\u{301} style"))
            #expect(page.body.contains("&quot;\u{301} style=color:red &lt;b&gt;&amp;amp;"))
            #expect(page.headers[.contentSecurityPolicy]?.contains("'unsafe-inline'") == false)
        }
    }

    /// The names in a `databases.json` answer; empty when it is not a list of `{"name": …}`.
    static func names(_ json: JSONValue?) -> [String] {
        guard case .array(let items)? = json else { return [] }
        return items.compactMap { $0["name"]?.stringValue }
    }
}
