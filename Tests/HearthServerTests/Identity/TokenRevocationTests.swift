import Foundation
import HearthAccess
import HearthCore
import HearthEngine
import HearthRealtimeClient
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import HummingbirdTesting
import Synchronization
import Testing

/// Disabling, deleting or revoking a user ends its ID tokens in the database too, not only in the
/// identity service: REST requests are refused and open WebSocket sessions are told with `ac`.
@Suite struct TokenRevocationTests {
    /// A token's `iat` is any JSON number (an unsigned token's, in emulator mode): one past Int64's range
    /// is compared, not converted (that trapped), and one that is no number at all counts as revoked.
    @Test func anIssuedAtOfAnySizeIsComparedWithoutATrap() throws {
        let revocations = TokenRevocations()
        revocations.update(project: "p", uid: "u", validSince: 1_000, ended: false)
        func claims(iat: String) throws -> JSONValue {
            try JSONValue(parsing: #"{"aud":"p","iss":"\#(TokenSigner.firebaseIssuerPrefix)p","sub":"u","iat":\#(iat)}"#)
        }
        #expect(!revocations.isRevoked(try claims(iat: "1e19")))
        #expect(revocations.isRevoked(try claims(iat: "-1e19")))
        #expect(revocations.isRevoked(try claims(iat: "999.5")))
        #expect(!revocations.isRevoked(try claims(iat: "1000")))
        #expect(revocations.isRevoked(try claims(iat: #""soon""#)))
    }
    /// A WebSocket session on `demo`, past its handshake, signed in with `token` (request 1).
    static func signedIn(port: Int, token: String) async throws -> WireConnection {
        let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
        _ = try await connection.nextMessage()
        try await connection.send(RealtimeConnectionTests.request(1, "auth", #"{"cred":"\#(token)"}"#))
        #expect(try await connection.nextMessage()?.contains(#""s":"ok""#) == true)
        return connection
    }

    static let rules = #"{"rules": {"notes": {"$uid": {".read": "auth.uid === $uid", ".write": "auth.uid === $uid"}}}}"#

    @Test func disabledAndRevokedUsersTokensAreRefusedByTheDatabase() async throws {
        try await IdentityTestServer().run { auth async throws in
            try await auth.send(.put, "/.settings/rules.json", Self.rules, headers: TestServer.admin)
            let created = try await auth.signUp("db@example.com")
            let uid = created["localId"]!.stringValue!
            let token = created["idToken"]!.stringValue!
            #expect(try await auth.send(.put, "/notes/\(uid).json?auth=\(token)", "1").status == .ok)
            try await auth.admin("accounts:update", #"{"localId":"\#(uid)","disableUser":true}"#)
            let refused = try await auth.send(.get, "/notes/\(uid).json?auth=\(token)", nil)
            #expect(refused.status == .unauthorized)
            #expect(refused.error == "Auth token is expired")
            try await auth.admin("accounts:update", #"{"localId":"\#(uid)","disableUser":false}"#)
            #expect(try await auth.send(.get, "/notes/\(uid).json?auth=\(token)", nil).status == .ok)
            let future = Int(Date().timeIntervalSince1970) + 5
            try await auth.admin("accounts:update", #"{"localId":"\#(uid)","validSince":\#(future)}"#)
            #expect(try await auth.send(.get, "/notes/\(uid).json?auth=\(token)", nil).status == .unauthorized)
        }
    }

    @Test func deletedUsersTokensAreRefused() async throws {
        try await IdentityTestServer().run { auth async throws in
            try await auth.send(.put, "/.settings/rules.json", Self.rules, headers: TestServer.admin)
            let created = try await auth.signUp("del@example.com")
            let uid = created["localId"]!.stringValue!
            let token = created["idToken"]!.stringValue!
            #expect(try await auth.send(.get, "/notes/\(uid).json?auth=\(token)", nil).status == .ok)
            try await auth.post("accounts:delete", #"{"idToken":"\#(token)"}"#)
            #expect(try await auth.send(.get, "/notes/\(uid).json?auth=\(token)", nil).status == .unauthorized)
        }
    }

    /// The user signs up anonymously: an email sign-up would wait for its password hash on the
    /// process-wide background threads, which run at a lower priority and behind every full-cost hash
    /// the other suites queue; with both cores busy that wait passed the live test client's fixed 20 s
    /// (`readTimeout`). Revocation is the same for every kind of user. Every WebSocket wait has a
    /// deadline, so a revocation that never reaches the session fails the test instead of hanging it.
    @Test func disablingAUserEndsItsWebSocketAuthAndListens() async throws {
        try await IdentityTestServer().runLive { auth, port async throws in
            try await auth.send(.put, "/.settings/rules.json?ns=demo", Self.rules, headers: TestServer.admin)
            let created = try #require(try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#).json)
            let uid = try #require(created["localId"]?.stringValue)
            let token = try #require(created["idToken"]?.stringValue)
            let connection = try await Self.signedIn(port: port, token: token)
            try await connection.send(RealtimeConnectionTests.request(2, "q", #"{"p":"/notes/\#(uid)","h":""}"#))
            #expect(try await connection.nextMessage()?.contains(#""r":2,"b":{"s":"ok""#) == true)
            try await auth.admin("accounts:update", #"{"localId":"\#(uid)","disableUser":true}"#)
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"Auth token is expired."}}}"#)
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"a":"c","b":{"p":"notes/\#(uid)"}}}"#)
            // The same token cannot sign the connection in again.
            try await connection.send(RealtimeConnectionTests.request(3, "auth", #"{"cred":"\#(token)"}"#))
            #expect(try await connection.nextMessage()?.contains(#""s":"expired_token""#) == true)
            await connection.close()
        }
    }

    /// An event stream opened with a user's token ends with `auth_revoked` when the user is disabled (at
    /// once: a stream cannot sign in again), as WebSocket sessions are told.
    @Test func disablingAUserEndsItsEventStreams() async throws {
        let server = IdentityTestServer()
        let (app, registry, _, _, _) = try await makeApplication(
            configuration: server.configuration, storage: InMemoryStorage(), adminSecret: AdminSecret(hashing: TestServer.secret),
            tokens: server.tokens, users: InMemoryUserStore()
        )
        try await app.test(.router) { client in
            let auth = IdentityClient(client: client)
            try await auth.send(.put, "/.settings/rules.json", Self.rules, headers: TestServer.admin)
            let created = try #require(try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#).json)
            let uid = try #require(created["localId"]?.stringValue)
            let token = try #require(created["idToken"]?.stringValue)
            let body = try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask {
                    try await auth.send(.get, "/notes/\(uid).json?auth=\(token)", nil, headers: [.accept: "text/event-stream"]).body
                }
                // A stream that never ends fails the test instead of hanging it.
                group.addTask {
                    try await Task.sleep(for: .seconds(60))
                    return nil
                }
                let database = try await registry.database(server.configuration.defaultNamespace)
                try await eventually { database.hub.listenerCount == 1 }
                try await auth.admin("accounts:update", #"{"localId":"\#(uid)","disableUser":true}"#)
                let first = try await group.next()!
                group.cancelAll()
                return first
            }
            let events = try #require(body, "the stream did not end")
            #expect(events.hasSuffix("event: auth_revoked\ndata: credential is no longer valid\n\n"), "\(events)")
        }
    }

    /// A password change revokes the user's earlier tokens, but the session of the SDK that made it
    /// signs in again with its new token at once: it is not told its old one expired (told at once,
    /// the official web SDK refreshed with the just-revoked refresh token and signed its user out).
    ///
    /// The grace is 4 s, not the shortest that shows it: between the revocation and the new `auth`
    /// are an HTTP answer and a WebSocket frame, and a full test run on two cores has stretched those
    /// past 500 ms.
    @Test func aSessionThatSignsInAgainAfterAPasswordChangeIsNotToldItsTokenExpired() async throws {
        let server = IdentityTestServer { $0.reauthenticationGrace = .seconds(4) }
        try await server.runLive { auth, port async throws in
            try await auth.send(.put, "/.settings/rules.json?ns=demo", Self.rules, headers: TestServer.admin)
            let created = try await auth.signUp("change@example.com")
            let uid = try #require(created["localId"]?.stringValue)
            let token = try #require(created["idToken"]?.stringValue)
            let connection = try await Self.signedIn(port: port, token: token)
            // A second apart: the new token's iat is past the revocation's validSince, in whole seconds.
            try await Task.sleep(for: .milliseconds(1100))
            let changed = try #require(
                try await auth.post("accounts:update", #"{"idToken":"\#(token)","password":"another-password","returnSecureToken":true}"#).json
            )
            let newToken = try #require(changed["idToken"]?.stringValue)
            try await connection.send(RealtimeConnectionTests.request(2, "auth", #"{"cred":"\#(newToken)"}"#))
            #expect(try await connection.nextMessage()?.contains(#""r":2,"b":{"s":"ok""#) == true)
            // Past the grace: the next message is the answer to a write, not an expiry.
            try await Task.sleep(for: .milliseconds(4500))
            try await connection.send(RealtimeConnectionTests.request(3, "p", #"{"p":"/notes/\#(uid)","d":1}"#))
            #expect(try await connection.nextMessage()?.contains(#""r":3,"b":{"s":"ok""#) == true)
            await connection.close()
        }
    }

    /// A session that keeps a revoked token is told after the grace, and loses its listens.
    @Test func aSessionThatKeepsARevokedTokenIsToldAfterTheGrace() async throws {
        let server = IdentityTestServer { $0.reauthenticationGrace = .milliseconds(300) }
        try await server.runLive { auth, port async throws in
            try await auth.send(.put, "/.settings/rules.json?ns=demo", Self.rules, headers: TestServer.admin)
            let created = try #require(try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#).json)
            let uid = try #require(created["localId"]?.stringValue)
            let token = try #require(created["idToken"]?.stringValue)
            let connection = try await Self.signedIn(port: port, token: token)
            try await connection.send(RealtimeConnectionTests.request(2, "q", #"{"p":"/notes/\#(uid)","h":""}"#))
            #expect(try await connection.nextMessage()?.contains(#""r":2,"b":{"s":"ok""#) == true)
            let future = Int(Date().timeIntervalSince1970) + 5
            try await auth.admin("accounts:update", #"{"localId":"\#(uid)","validSince":\#(future)}"#)
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"Auth token is expired."}}}"#)
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"a":"c","b":{"p":"notes/\#(uid)"}}}"#)
            await connection.close()
        }
    }

    /// Reports of one user's changes may arrive out of order (a reset that committed just before an
    /// email-change undo, reported just after it): the later `validSince` holds.
    @Test func aLaterReportOfAnEarlierValidSinceDoesNotReopenTokens() {
        let revocations = TokenRevocations()
        func token(issuedAt: Int) -> JSONValue {
            .object([
                ("aud", .string("demo")), ("iss", .string(TokenSigner.firebaseIssuerPrefix + "demo")), ("sub", .string("ada")),
                ("iat", .number(Double(issuedAt))),
            ])
        }
        revocations.update(project: "demo", uid: "ada", validSince: 1_000, ended: false)
        revocations.update(project: "demo", uid: "ada", validSince: 999, ended: false)
        #expect(revocations.isRevoked(token(issuedAt: 999)))
        #expect(!revocations.isRevoked(token(issuedAt: 1_000)))
        // Disabling and enabling again still work.
        revocations.update(project: "demo", uid: "ada", validSince: nil, ended: true)
        #expect(revocations.isRevoked(token(issuedAt: 2_000)))
        revocations.update(project: "demo", uid: "ada", validSince: 1_000, ended: false)
        #expect(!revocations.isRevoked(token(issuedAt: 2_000)))
    }

    @Test func disabledUsersAreStillRefusedAfterARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-revocations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = IdentityTestServer()
        let token = Mutex<(String, String)?>(nil)
        let first = try SQLiteUserStore(directory: directory)
        try await server.run(users: first) { auth async throws in
            let created = try await auth.signUp("restart@example.com")
            let uid = created["localId"]!.stringValue!
            token.withLock { $0 = (uid, created["idToken"]!.stringValue!) }
            try await auth.admin("accounts:update", #"{"localId":"\#(uid)","disableUser":true}"#)
        }
        let second = try SQLiteUserStore(directory: directory)
        try await server.run(users: second) { auth async throws in
            let (uid, idToken) = try #require(token.withLock { $0 })
            #expect(try await auth.send(.get, "/notes/\(uid).json?auth=\(idToken)", nil).status == .unauthorized)
        }
    }

    /// Each revocation drops the tokens an earlier one revoked: a user's dead refresh tokens do not
    /// accumulate, and those of the latest revocation still answer TOKEN_EXPIRED.
    @Test func revokedRefreshTokensDoNotPileUp() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-refresh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteUserStore(directory: directory)
        func token(_ name: String) -> RefreshTokenRecord {
            RefreshTokenRecord(tokenHash: name, project: "p", localId: "u", provider: "password", extraClaims: nil, createdAt: 0, authTime: 0)
        }
        try await store.create(UserRecord(localId: "u", createdAt: 0), project: "p", issuing: token("first"))
        _ = try await store.update(project: "p", localId: "u", issuing: token("second")) { _ in }
        // Revoked once: both are kept (they answer TOKEN_EXPIRED); the new sign-in's token is current.
        _ = try await store.update(project: "p", localId: "u", issuing: token("third")) { $0.tokenGeneration += 1 }
        for name in ["first", "second", "third"] { #expect(try await store.refreshToken(hash: name) != nil, "\(name)") }
        #expect(try await store.refreshToken(hash: "third")?.generation == 1)
        // Revoked again: the first revocation's tokens go, the second's stay.
        _ = try await store.update(project: "p", localId: "u", issuing: nil) { $0.tokenGeneration += 1 }
        #expect(try await store.refreshToken(hash: "first") == nil)
        #expect(try await store.refreshToken(hash: "second") == nil)
        #expect(try await store.refreshToken(hash: "third") != nil)
    }
}
