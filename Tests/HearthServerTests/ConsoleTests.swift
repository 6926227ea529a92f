import HearthCore
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

    @Test func wrongSecretsAreRefusedThenThrottled() async throws {
        try await TestServer().run { client, _ async throws in
            #expect(try await client.call(.post, "/.console/session", "{}", headers: [:]).status == .badRequest)
            for _ in 0..<ConsoleSessions.failuresPerMinute {
                #expect(try await client.call(.post, "/.console/session", #"{"secret":"guess"}"#, headers: [:]).status == .unauthorized)
            }
            // Even the right secret waits for the minute to pass.
            let throttled = try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: [:])
            #expect(throttled.status == .tooManyRequests)
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
}
