import Clocks
import Foundation
import HearthAccess
import HearthCore
@testable import HearthFiles
import HearthIdentity
import HearthRealtimeClient
@testable import HearthServer
import HTTPTypes
import Testing

/// Guessing the admin secret is throttled per client address on every HTTP surface that accepts it
/// (issue 25, "also seen"): 10 wrong secrets a minute, then the address is refused (429) for a
/// minute, even with the right secret; ID tokens and other addresses are unaffected.
@Suite struct AdminSecretGuardTests {
    static func from(_ address: String, _ fields: HTTPFields = [:]) -> HTTPFields {
        var headers = AddressRateLimitTests.from(address)
        headers.append(contentsOf: fields)
        return headers
    }

    static func bearer(_ token: String, from address: String) -> HTTPFields {
        from(address, [.authorization: "Bearer \(token)"])
    }

    @Test func theRememberedRightSecretIsStillRefusedWhileItsAddressIsLocked() async throws {
        let clock = TestClock<Duration>()
        try await AddressRateLimitTests.server(clock: clock) { _ in }.run { auth async throws in
            let address = "203.0.113.9"
            // The right secret first: the guard remembers it and answers later uses without hashing.
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: address)).status == .ok)
            for index in 0..<AdminSecretGuard.defaultLimit {
                _ = try await auth.send(.get, "/a.json?auth=guess-\(index)", nil, headers: Self.from(address))
            }
            // Locked: the remembered secret does not get past the lock.
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: address)).status == .tooManyRequests)
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: "203.0.113.10")).status == .ok)
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret + "x", from: "203.0.113.10")).status == .unauthorized)
        }
    }

    @Test func wrongSecretsOnRESTLockTheAddressOnEverySurfaceForAMinute() async throws {
        let clock = TestClock<Duration>()
        try await AddressRateLimitTests.server(clock: clock) { _ in }.run { auth async throws in
            let guesser = "203.0.113.1"
            for index in 0..<AdminSecretGuard.defaultLimit {
                let reply = try await auth.send(.get, "/a.json?auth=guess-\(index)", nil, headers: Self.from(guesser))
                #expect(reply.status == .unauthorized, "\(reply.body)")
            }
            let locked = try await auth.send(.get, "/a.json?auth=\(TestServer.secret)", nil, headers: Self.from(guesser))
            #expect(locked.status == .tooManyRequests)
            #expect(locked.json?["error"] == .string(Authenticator.tooManyGuessesMessage))
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: guesser)).status == .tooManyRequests)
            // The identity admin calls and the console's sign-in refuse it too.
            let identity = try await auth.send(
                .post, "/identitytoolkit.googleapis.com/v1/projects/\(IdentityTestServer.project)/accounts:query", "{}",
                headers: Self.bearer(TestServer.secret, from: guesser)
            )
            #expect(identity.status == .tooManyRequests)
            #expect(identity.authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
            let console = try await auth.send(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: Self.from(guesser))
            #expect(console.status == .tooManyRequests)
            #expect(try await auth.send(.get, "/metrics", nil, headers: Self.bearer(TestServer.secret, from: guesser)).status == .tooManyRequests)

            // Another address (the real admin's) is unaffected.
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: "203.0.113.2")).status == .ok)
            #expect(try await auth.send(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: Self.from("203.0.113.2")).status == .ok)
            // A user's ID token from the locked address still works: it is not a guess of the secret.
            let idToken = try #require(try await auth.signUp("user@example.com")["idToken"]?.stringValue)
            #expect(try await auth.send(.get, "/a.json?auth=\(idToken)", nil, headers: Self.from(guesser)).status != .tooManyRequests)

            await clock.advance(by: .seconds(59))
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: guesser)).status == .tooManyRequests)
            await clock.advance(by: .seconds(1))
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: guesser)).status == .ok)
        }
    }

    @Test func tokensThatAreNotSecretGuessesNeverCount() async throws {
        try await AddressRateLimitTests.server(clock: TestClock<Duration>()) { _ in }.run { auth async throws in
            let address = "203.0.113.3"
            // Bad ID tokens (JWT-shaped, signed or not) and stale console sessions: 401, never counted.
            for index in 0..<(AdminSecretGuard.defaultLimit * 2) {
                for token in ["eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.sig\(index)", "a.b.", "hcs_expired\(index)"] {
                    #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(token, from: address)).status == .unauthorized)
                }
            }
            #expect(try await auth.send(.get, "/a.json", nil, headers: Self.bearer(TestServer.secret, from: address)).status == .ok)
            // Successes do not count either.
            for _ in 0..<(AdminSecretGuard.defaultLimit * 2) {
                #expect(try await auth.send(.get, "/a.json?auth=\(TestServer.secret)", nil, headers: Self.from(address)).status == .ok)
            }
        }
    }

    /// A secret shaped like a token would never be counted as guessed: `hearth serve` refuses it.
    @Test func secretsShapedLikeTokensAreRefused() {
        #expect(AdminSecretGuard.problem(withSecret: "prod.admin.key2026") != nil)
        #expect(AdminSecretGuard.problem(withSecret: "hcs_mysecret") != nil)
        #expect(AdminSecretGuard.problem(withSecret: "prod.admin.key.2026") == nil)
        #expect(AdminSecretGuard.problem(withSecret: TestServer.secret) == nil)
    }

    @Test func guessesSentAtOnceGetOnlyTheLimitsWorthOfChecks() async throws {
        try await AddressRateLimitTests.server(clock: TestClock<Duration>()) { _ in }.run { auth async throws in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<30 {
                    group.addTask { try await auth.send(.get, "/a.json?auth=guess-\(index)", nil, headers: Self.from("203.0.113.4")).status }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .unauthorized }.count == AdminSecretGuard.defaultLimit)
            #expect(statuses.filter { $0 == .tooManyRequests }.count == 30 - AdminSecretGuard.defaultLimit)
        }
    }

    @Test func identityAdminGuessesCountAndAnswerInFirebasesShape() async throws {
        try await AddressRateLimitTests.server(clock: TestClock<Duration>()) { _ in }.run { auth async throws in
            let path = "/identitytoolkit.googleapis.com/v1/projects/\(IdentityTestServer.project)/accounts:query"
            for index in 0..<AdminSecretGuard.defaultLimit {
                #expect(try await auth.send(.post, path, "{}", headers: Self.bearer("guess-\(index)", from: "203.0.113.5")).status == .unauthorized)
            }
            let locked = try await auth.send(.post, path, "{}", headers: Self.bearer(TestServer.secret, from: "203.0.113.5"))
            #expect(locked.status == .tooManyRequests)
            #expect(locked.authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(locked.json?["error"]?["status"] == .string("RESOURCE_EXHAUSTED"))
            // And they lock REST for that address too: one guard for all surfaces.
            #expect(try await auth.send(.get, "/a.json?auth=\(TestServer.secret)", nil, headers: Self.from("203.0.113.5")).status == .tooManyRequests)
        }
    }

    @Test func theGuardLocksAfterTheLimitAndAMatchIsRefunded() {
        let clock = TestClock<Duration>()
        let serverClock = ServerClock(clock, wallMillisecondsAtStart: 0)
        let guard_ = AdminSecretGuard(clock: serverClock, limit: 3, window: .seconds(60))
        let secret = AdminSecret(hashing: "the-secret")
        #expect(guard_.check("wrong", against: secret, from: "192.0.2.1") == .notAdmin)
        #expect(guard_.check("the-secret", against: secret, from: "192.0.2.1") == .admin)
        #expect(guard_.check("wrong", against: secret, from: "192.0.2.1") == .notAdmin)
        #expect(!guard_.isLocked("192.0.2.1"))
        #expect(guard_.check("wrong", against: secret, from: "192.0.2.1") == .notAdmin)
        #expect(guard_.isLocked("192.0.2.1"))
        #expect(guard_.check("the-secret", against: secret, from: "192.0.2.1") == .locked)
        #expect(guard_.check("the-secret", against: secret, from: "192.0.2.2") == .admin)
        // An ID token is compared without counting, locked or not.
        #expect(guard_.check("x.y.z", against: secret, from: "192.0.2.1") == .notAdmin)
        #expect(AdminSecretGuard.isSecretGuess("guess"))
        #expect(!AdminSecretGuard.isSecretGuess("header.payload.signature"))
        #expect(!AdminSecretGuard.isSecretGuess("hcs_session"))
    }

    /// A secret stored before token-shaped secrets were refused (its hash file is loaded unchecked)
    /// would otherwise be guessable without limit: a token-shaped candidate is never the admin.
    @Test func aTokenShapedCandidateIsNeverTheAdminSecret() {
        let guard_ = AdminSecretGuard(clock: ServerClock(TestClock<Duration>(), wallMillisecondsAtStart: 0), limit: 3, window: .seconds(60))
        for legacy in ["prod.admin.key2026", "hcs_legacy"] {
            let secret = AdminSecret(hashing: legacy)
            #expect(guard_.check(legacy, against: secret, from: "192.0.2.9") == .notAdmin)
            #expect(RequestClient.checkAdminSecret(legacy, against: secret) == .notAdmin)
        }
        #expect(RequestClient.checkAdminSecret("the-secret", against: AdminSecret(hashing: "the-secret")) == .admin)
    }

    /// The realtime protocol's `auth` message counts against the connection's address like REST does,
    /// and a locked address is refused there too.
    @Test func wrongSecretsInWebSocketAuthMessagesCountAndAreRefusedWhenLocked() async throws {
        try await TestServer().runLive { client, port, _ async throws in
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=default")
            _ = try await connection.nextMessage()  // the handshake
            for number in 1...AdminSecretGuard.defaultLimit {
                try await connection.send(#"{"t":"d","d":{"r":\#(number),"a":"auth","b":{"cred":"guess-\#(number)"}}}"#)
                let reply = try JSONValue(parsing: try #require(try await connection.nextMessage()))
                #expect(reply["d"]?["b"]?["s"] == .string("invalid_token"))
            }
            // Locked: the right secret is refused over the wire and over REST from the same address.
            try await connection.send(#"{"t":"d","d":{"r":99,"a":"auth","b":{"cred":"\#(TestServer.secret)"}}}"#)
            let locked = try JSONValue(parsing: try #require(try await connection.nextMessage()))
            #expect(locked["d"]?["b"]?["s"] == .string("invalid_token"))
            #expect(locked["d"]?["b"]?["d"] == .string(Authenticator.tooManyGuessesMessage))
            #expect(try await client.call(.get, "/a.json").status == .tooManyRequests)
            await connection.close()
        }
    }

    /// The Storage APIs answer a locked address 429 in their own error shape.
    @Test func filesAnswerALockedAddressWith429() async throws {
        let server = TestServer()
        let authenticator = Authenticator(
            adminSecret: AdminSecret(hashing: TestServer.secret), emulatorMode: false, tokens: server.tokens, clock: server.configuration.clock
        )
        let guard_ = AdminSecretGuard(clock: server.configuration.clock, limit: 1, window: .seconds(60))
        let client = RequestClient(address: "192.0.2.9", adminSecretGuard: guard_)
        RequestClient.$current.withValue(client) {
            #expect(throws: FilesError.self) { try FilesHTTP.identity("guess", authenticator) }
            do {
                _ = try FilesHTTP.identity(TestServer.secret, authenticator)
                Issue.record("a locked address was let in")
            } catch {
                #expect((error as? FilesError)?.code == 429)
            }
        }
    }
}
