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
}
