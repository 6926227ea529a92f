import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HearthAccess
import HearthCore
import HearthEngine
import HearthIdentity
import HearthRealtimeClient
import HummingbirdTesting
@testable import HearthServer
import HTTPTypes
import Testing

/// The console's sessions: the admin secret buys a token that is the admin until it expires (on the
/// server's clock) or signs out; guessing the secret is throttled.
@Suite struct ConsoleTests {
    @Test func aSessionIsTheAdminUntilItExpires() async throws {
        let server = TestServer()
        try await server.run { client, _ async throws in
            let opened = try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: [:])
            #expect(opened.status == .ok)
            let token = try #require(opened.json?["token"]?.stringValue)
            let bearer: HTTPFields = [.authorization: "Bearer \(token)"]
            #expect(try await client.call(.put, "/a.json", "1", headers: bearer).status == .ok)
            #expect(try await client.call(.get, "/.console/info", headers: bearer).json?["project"] == .string("hearth"))
            await server.advance(by: .seconds(3601))
            #expect(try await client.call(.put, "/a.json", "2", headers: bearer).status == .unauthorized)
            #expect(try await client.call(.get, "/.console/info", headers: bearer).status == .unauthorized)
        }
    }

    /// A WebSocket signed in with a session's token, and an event stream opened with it, end when the
    /// session is signed out (before, they kept the admin's access for as long as they stayed open).
    @Test func signingOutEndsTheSessionsConnectionsAndStreams() async throws {
        try await TestServer().runLive { client, port, registry in
            let token = try #require(try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: [:]).json?["token"]?.stringValue)
            let bearer: HTTPFields = [.authorization: "Bearer \(token)"]
            #expect(try await client.call(.put, "/secret.json?ns=demo", #""top""#, headers: bearer).status == .ok)
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            try await connection.send(RealtimeConnectionTests.request(1, "auth", #"{"cred":"\#(token)"}"#))
            #expect(try await connection.nextMessage()?.contains(#""r":1,"b":{"s":"ok""#) == true)
            try await connection.send(RealtimeConnectionTests.request(2, "q", #"{"p":"/secret","h":""}"#))
            #expect(try await connection.nextMessage()?.contains(#""d":"top""#) == true)
            #expect(try await connection.nextMessage()?.contains(#""r":2,"b":{"s":"ok""#) == true)
            let database = try await registry.database("demo")
            let stream = try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask {
                    try await client.call(.get, "/secret.json?ns=demo&auth=\(token)", headers: [.accept: "text/event-stream"]).body
                }
                // A stream that never ends fails the test instead of hanging it.
                group.addTask {
                    try await Task.sleep(for: .seconds(60))
                    return nil
                }
                try await eventually { database.hub.listenerCount == 1 }
                // Signed out on a connection of its own: the test client's one connection carries the stream.
                var signOut = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)/.console/session")))
                signOut.httpMethod = "DELETE"
                signOut.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                let (_, response) = try await URLSession.shared.data(for: signOut)
                #expect((response as? HTTPURLResponse)?.statusCode == 204)
                let first = try await group.next()!
                group.cancelAll()
                return first
            }
            let events = try #require(stream, "the stream did not end")
            #expect(events.hasSuffix("event: auth_revoked\ndata: credential is no longer valid\n\n"), "\(events)")
            // The connection is told, and its listen of a location only the admin may read is revoked.
            #expect(try await connection.nextMessage()?.contains(#""a":"ac""#) == true)
            #expect(try await connection.nextMessage()?.contains(#""a":"c","b":{"p":"secret""#) == true)
            try await connection.send(RealtimeConnectionTests.request(3, "p", #"{"p":"/secret","d":"changed"}"#))
            #expect(try await connection.nextMessage()?.contains("permission_denied") == true)
            await connection.close()
        }
    }

    @Test func wrongSecretsAreRefusedThenThrottledPerAddress() async throws {
        let server = TestServer { $0.identity.trustForwardedFor = true }
        try await server.run { client, _ async throws in
            let guesser: HTTPFields = [HTTPField.Name("x-forwarded-for")!: "203.0.113.66"]
            let admin: HTTPFields = [HTTPField.Name("x-forwarded-for")!: "198.51.100.7"]
            #expect(try await client.call(.post, "/.console/session", "{}", headers: guesser).status == .badRequest)
            for _ in 0..<AdminSecretGuard.defaultLimit {
                #expect(try await client.call(.post, "/.console/session", #"{"secret":"guess"}"#, headers: guesser).status == .unauthorized)
            }
            // Even the right secret waits for the minute to pass...
            let throttled = try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: guesser)
            #expect(throttled.status == .tooManyRequests)
            // ...from that address only: the real admin elsewhere signs in.
            #expect(try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: admin).status == .ok)
            await server.advance(by: .seconds(60))
            #expect(try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: guesser).status == .ok)
        }
    }

    @Test func theSimulatorRunsAScenarioAgainstLiveDataWithoutWriting() async throws {
        try await TestServer().run { client, _ async throws in
            let token = try #require(try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: [:]).json?["token"]?.stringValue)
            let bearer: HTTPFields = [.authorization: "Bearer \(token)"]
            let rules = #"{"rules": {"posts": {"$uid": {".read": true, ".write": "auth != null && auth.uid == $uid && (!data.exists() || data.child('locked').val() != true)"}}}}"#
            #expect(try await client.call(.put, "/.settings/rules.json", rules).status == .ok)
            #expect(try await client.call(.put, "/posts/ada.json", #"{"locked": true}"#).status == .ok)
            func simulate(_ scenario: String) async throws -> JSONValue? {
                try await client.call(.post, "/.console/simulate", scenario, headers: bearer).json
            }
            // The live data decides: ada's node is locked, bob's does not exist.
            #expect(try await simulate(#"{"auth": {"uid": "ada"}, "write": "/posts/ada", "value": {"t": 1}}"#)?["allowed"] == .bool(false))
            #expect(try await simulate(#"{"auth": {"uid": "bob"}, "write": "/posts/bob", "value": {"t": 1}}"#)?["allowed"] == .bool(true))
            #expect(try await simulate(#"{"auth": null, "update": "/posts", "value": {"bob/t": 1}}"#)?["allowed"] == .bool(false))
            #expect(try await simulate(#"{"read": "/posts/ada"}"#)?["allowed"] == .bool(true))
            #expect(try await simulate(#"{"nothing": 1}"#)?["error"] != nil)
            // Nothing was written.
            #expect(try await client.call(.get, "/posts/bob.json").body == "null")
            #expect(try await client.call(.post, "/.console/simulate", #"{"read": "/"}"#, headers: [:]).status == .unauthorized)
        }
    }

    /// Signs in to the console and returns the session's headers.
    func session(_ client: any TestClientProtocol) async throws -> HTTPFields {
        let token = try #require(try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: [:]).json?["token"]?.stringValue)
        return [.authorization: "Bearer \(token)"]
    }

    @Test func theSimulatorExplainsWhichRuleDecided() async throws {
        try await TestServer().run { client, _ async throws in
            let bearer = try await session(client)
            let rules = "{\n  \"rules\": {\n    \"posts\": {\n      \"$uid\": {\n        \".write\": \"auth.uid === $uid\"\n      }\n    }\n  }\n}"
            #expect(try await client.call(.put, "/.settings/rules.json", rules).status == .ok)
            let denied = try #require(try await client.call(
                .post, "/.console/simulate", #"{"auth": {"uid": "bob"}, "write": "/posts/ada", "value": 1}"#, headers: bearer
            ).json)
            #expect(denied["allowed"] == .bool(false))
            #expect(denied["summary"] == .string("Denied: no .write rule allowed writing /posts/ada."))
            guard case .array(let steps)? = denied["steps"] else { Issue.record("no steps"); return }
            #expect(steps.count == 1)
            #expect(steps.first?["rule"] == .string("rules/posts/$uid/.write"))
            #expect(steps.first?["line"] == .number(5))
            #expect(steps.first?["column"] == .number(19))
            #expect(steps.first?["result"] == .bool(false))
            let allowed = try #require(try await client.call(
                .post, "/.console/simulate", #"{"auth": {"uid": "ada"}, "write": "/posts/ada", "value": 1}"#, headers: bearer
            ).json)
            #expect(allowed["summary"] == .string("Allowed: rules/posts/$uid/.write (line 5) grants writing /posts/ada, and every .validate passed."))
        }
    }

    @Test func draftRulesAreCheckedWithoutBeingSaved() async throws {
        try await TestServer().run { client, _ async throws in
            let bearer = try await session(client)
            let good = try await client.call(.post, "/.console/rules/check", #"{"rules": {".read": "auth != null"}}"#, headers: bearer)
            #expect(good.json?["diagnostics"] == .array([]))
            let draft = "{\n  \"rules\": {\n    \".read\": \"auth != nul\"\n  }\n}"
            let bad = try #require(try await client.call(.post, "/.console/rules/check", draft, headers: bearer).json)
            guard case .array(let diagnostics)? = bad["diagnostics"], let first = diagnostics.first else { Issue.record("no diagnostics"); return }
            #expect(first["line"] == .number(3))
            #expect(first["message"] != nil)
            let storage = try #require(try await client.call(.post, "/.console/rules/check?kind=storage", "rules_version = '2';\nservice x {", headers: bearer).json)
            guard case .array(let storageDiagnostics)? = storage["diagnostics"] else { Issue.record("no storage diagnostics"); return }
            #expect(!storageDiagnostics.isEmpty)
            // Nothing was saved, and the check needs the session.
            #expect(try await client.call(.get, "/.settings/rules.json").body.contains("auth != nul") == false)
            #expect(try await client.call(.post, "/.console/rules/check", draft, headers: [:]).status == .unauthorized)
            #expect(try await client.call(.post, "/.console/rules/check", draft, headers: TestServer.admin).status == .unauthorized)
        }
    }

    @Test func everySavedVersionIsInTheHistoryNewestFirst() async throws {
        try await TestServer().run { client, _ async throws in
            let bearer = try await session(client)
            #expect(try await client.call(.put, "/x.json?ns=demo", "1").status == .ok)
            #expect(try await client.call(.get, "/.console/rules/history?ns=demo", headers: bearer).json?["versions"] == .array([]))
            let first = #"{"rules": {".read": true}}"#
            let second = #"{"rules": {".read": false}}"#
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", first).status == .ok)
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", second).status == .ok)
            // A refused document is not a version.
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", #"{"rules": {".read": "nope("}}"#).status == .badRequest)
            // Restoring is saving an old version again.
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", first).status == .ok)
            let history = try #require(try await client.call(.get, "/.console/rules/history?ns=demo", headers: bearer).json)
            guard case .array(let versions)? = history["versions"] else { Issue.record("no versions"); return }
            #expect(versions.map { $0["source"] } == [.string(first), .string(second), .string(first)])
            #expect(versions.map { $0["version"] } == [.number(3), .number(2), .number(1)])
            // Another database has its own history.
            #expect(try await client.call(.put, "/x.json?ns=other", "1").status == .ok)
            #expect(try await client.call(.get, "/.console/rules/history?ns=other", headers: bearer).json?["versions"] == .array([]))
            #expect(try await client.call(.get, "/.console/rules/history?ns=demo", headers: [:]).status == .unauthorized)
            // Reading about a database that does not exist makes none; an impossible name is a 400.
            for read in ["/.console/rules/history?ns=nowhere", "/.console/children?ns=nowhere&path=/"] {
                #expect(try await client.call(.get, read, headers: bearer).status == .notFound, "\(read)")
            }
            #expect(try await client.call(.post, "/.console/simulate?ns=nowhere", #"{"read": "/"}"#, headers: bearer).status == .notFound)
            #expect(try await client.call(.get, "/.console/rules/history?ns=no%20such", headers: bearer).status == .badRequest)
            let namespaces = try await client.call(.get, "/.console/info", headers: bearer).json?["namespaces"]?.arrayValue ?? []
            #expect(namespaces.contains(.string("other")) && !namespaces.contains(.string("nowhere")), "\(namespaces)")
        }
    }

    @Test func activityCountsReadsWritesAndDenialsAndLogsRequestsWithoutSecrets() async throws {
        try await TestServer().runLive { client, port, _ async throws in
            let bearer = try await session(client)
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", #"{"rules": {"open": {".read": true, ".write": true}}}"#).status == .ok)
            for index in 0..<3 {
                #expect(try await client.call(.put, "/open/\(index).json?ns=demo&auth=not-a-secret-but-a-token", "\(index)", headers: [:]).status == .unauthorized)
                #expect(try await client.call(.put, "/open/\(index).json?ns=demo", "\(index)", headers: [:]).status == .ok)
            }
            #expect(try await client.call(.get, "/open.json?ns=demo", headers: [:]).status == .ok)
            #expect(try await client.call(.get, "/closed.json?ns=demo", headers: [:]).status == .unauthorized)
            // Over the WebSocket: a listen (a read), a write and a refused write.
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
            _ = try await connection.nextMessage()
            try await connection.send(#"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/open","h":""}}}"#)
            try await connection.send(#"{"t":"d","d":{"r":2,"a":"p","b":{"p":"/open/ws","d":true}}}"#)
            try await connection.send(#"{"t":"d","d":{"r":3,"a":"p","b":{"p":"/closed/ws","d":true}}}"#)
            var replies = 0
            while replies < 3, let message = try await connection.nextMessage() {
                if message.contains(#""r":"#) { replies += 1 }
            }
            let report = try #require(try await client.call(.get, "/.console/activity", headers: bearer).json)
            guard case .array(let databases)? = report["databases"], let demo = databases.first(where: { $0["namespace"] == .string("demo") }) else {
                Issue.record("no demo database in \(report)"); return
            }
            #expect(demo["writes"] == .number(4))
            #expect(demo["reads"] == .number(2))
            // Three bad tokens are not denials by the rules; the closed read and the closed WebSocket write are.
            #expect(demo["denied"] == .number(2))
            #expect(demo["listens"] == .number(1))
            #expect(report["websocketConnections"] == .number(1))
            guard case .array(let requests)? = report["requests"] else { Issue.record("no requests"); return }
            let text = report.jsonText
            #expect(!text.contains("not-a-secret-but-a-token"))
            #expect(!text.contains(TestServer.secret))
            #expect(requests.contains { $0["method"] == .string("listen") && $0["path"] == .string("/open") && $0["transport"] == .string("websocket") })
            #expect(requests.contains { $0["path"] == .string("/closed/ws") && $0["denied"] == .bool(true) && $0["status"] == .string("permission_denied") })
            #expect(requests.contains { $0["path"] == .string("/closed.json") && $0["denied"] == .bool(true) && $0["status"] == .string("401") })
            // Polling after the newest sequence returns only what came since; the poll itself is not logged.
            let newest = requests.compactMap { if case .number(let n)? = $0["sequence"] { Int(n) } else { nil } }.max() ?? 0
            #expect(try await client.call(.get, "/.console/activity?after=\(newest)", headers: bearer).json?["requests"] == .array([]))
            // A namespace that cannot exist gets no counters (nor metrics series); a silly `after=` is harmless.
            #expect(try await client.call(.get, "/x.json?ns=no%20such%20name").status == .badRequest)
            #expect(try await client.call(.get, "/x.json?ns=no%20such%20name", headers: [:]).status == .unauthorized)
            let again = try #require(try await client.call(.get, "/.console/activity?after=\(Int.min)", headers: bearer).json)
            guard case .array(let named)? = again["databases"] else { Issue.record("no databases"); return }
            #expect(named.compactMap { $0["namespace"]?.stringValue }.allSatisfy { !$0.contains(" ") })
            #expect(try await client.call(.get, "/metrics").body.contains("no such name") == false)
            await connection.close()
        }
    }

    @Test func headsAreLoggedAsHeadsAndCountedAsReadsWhetherTheRouterOrTheShortcutTakesThem() async throws {
        try await TestServer().runLive { client, _, _ async throws in
            let bearer = try await session(client)
            try await client.call(.put, "/.settings/rules.json?ns=demo", #"{"rules":{".read":true}}"#)
            // The first goes through the router (which teaches the shortcut `seen`); the others take the shortcut.
            for _ in 0..<3 { #expect(try await client.call(.head, "/seen/a.json?ns=demo", headers: [:]).status == .ok) }
            let report = try #require(try await client.call(.get, "/.console/activity", headers: bearer).json)
            guard case .array(let requests)? = report["requests"], case .array(let databases)? = report["databases"] else {
                Issue.record("no activity in \(report)"); return
            }
            let heads = requests.filter { $0["path"] == .string("/seen/a.json") }
            #expect(heads.count == 3)
            #expect(heads.allSatisfy { $0["method"] == .string("HEAD") && $0["namespace"] == .string("demo") }, "\(heads)")
            #expect(databases.first { $0["namespace"] == .string("demo") }?["reads"] == .number(3))
        }
    }

    /// A POST that asks to be a GET (`X-HTTP-Method-Override`, or its query parameter) reads: it is
    /// counted as a read, through the router and the shortcut alike.
    @Test func aPostOverriddenToGetIsCountedAsARead() async throws {
        try await TestServer().runLive { client, _, _ async throws in
            let bearer = try await session(client)
            try await client.call(.put, "/.settings/rules.json?ns=demo", #"{"rules":{".read":true}}"#)
            for _ in 0..<2 {
                #expect(try await client.call(.post, "/over/a.json?ns=demo", "", headers: [RESTController.methodOverride: "GET"]).status == .ok)
            }
            #expect(try await client.call(.post, "/over/a.json?ns=demo&x-http-method-override=GET", "", headers: [:]).status == .ok)
            let report = try #require(try await client.call(.get, "/.console/activity", headers: bearer).json)
            guard case .array(let databases)? = report["databases"] else { Issue.record("no activity in \(report)"); return }
            let demo = databases.first { $0["namespace"] == .string("demo") }
            #expect(demo?["reads"] == .number(3), "\(String(describing: demo))")
            #expect(demo?["writes"] == .number(0) || demo?["writes"] == nil, "\(String(describing: demo))")
        }
    }

    @Test func preflightsAreLoggedWhetherTheRouterOrTheShortcutTakesThem() async throws {
        try await TestServer().runLive { client, _, _ async throws in
            let bearer = try await session(client)
            // The first goes through the router (which teaches the shortcut `open`); the others take the shortcut.
            for _ in 0..<3 { #expect(try await client.call(.options, "/open/a.json?ns=demo", headers: [:]).status == .ok) }
            let report = try #require(try await client.call(.get, "/.console/activity", headers: bearer).json)
            guard case .array(let requests)? = report["requests"] else { Issue.record("no requests"); return }
            let preflights = requests.filter { $0["method"] == .string("OPTIONS") }
            #expect(preflights.count == 3)
            #expect(preflights.allSatisfy { $0["path"] == .string("/open/a.json") && $0["namespace"] == .null })
        }
    }

    @Test func metricsNeedTheAdminAndCarryTheCounters() async throws {
        try await TestServer().run { client, _ async throws in
            #expect(try await client.call(.put, "/a.json?ns=demo", "1").status == .ok)
            #expect(try await client.call(.get, "/metrics", headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/metrics", headers: [.authorization: "Bearer guess"]).status == .unauthorized)
            let metrics = try await client.call(.get, "/metrics")
            #expect(metrics.status == .ok)
            #expect(metrics.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect(metrics.body.contains(#"hearth_writes_total{namespace="demo"} 1"#))
            #expect(metrics.body.contains("# TYPE hearth_request_duration_seconds histogram"))
            #expect(metrics.body.contains(#"hearth_requests_total{transport="http",status="200"}"#))
            #expect(metrics.body.contains("hearth_websocket_connections 0.0"))
            // A console session is the admin too.
            #expect(try await client.call(.get, "/metrics", headers: try await session(client)).status == .ok)
        }
    }
}
