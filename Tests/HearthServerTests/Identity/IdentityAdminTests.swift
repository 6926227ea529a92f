import Foundation
import HearthAccess
import HearthCore
@testable import HearthIdentity
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import Synchronization
import Testing

@Suite struct IdentityAdminTests {
    @Test func adminCreatesUsersWithoutTokensAndFindsThem() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.admin(
                "accounts",
                #"{"localId":"ada","email":"Ada@Example.com","password":"secret123","displayName":"Ada","emailVerified":true,"phoneNumber":"+15555550100"}"#
            )
            #expect(created.status == .ok, "\(created.body)")
            #expect(created.json == (try JSONValue(parsing: #"{"kind":"identitytoolkit#SignupNewUserResponse","localId":"ada","email":"ada@example.com","displayName":"Ada"}"#)))
            #expect(try await auth.admin("accounts", #"{"localId":"ada"}"#).authError == "DUPLICATE_LOCAL_ID")
            #expect(try await auth.admin("accounts", #"{"email":"ada@example.com"}"#).authError == "EMAIL_EXISTS")
            #expect(try await auth.admin("accounts", #"{"phoneNumber":"5555"}"#).authError == "INVALID_PHONE_NUMBER : Invalid format.")
            let byId = try await auth.admin("accounts:lookup", #"{"localId":["ada"]}"#)
            let user = try #require(byId.json?["users"]?.arrayValue?.first)
            #expect(user["emailVerified"] == .bool(true))
            #expect(user["phoneNumber"] == .string("+15555550100"))
            let byEmail = try await auth.admin("accounts:lookup", #"{"email":["ADA@example.com"]}"#)
            #expect(byEmail.json?["users"]?.arrayValue?.first?["localId"] == .string("ada"))
            let none = try await auth.admin("accounts:lookup", #"{"localId":["nobody"]}"#)
            #expect(none.json == .object([("kind", .string("identitytoolkit#GetAccountInfoResponse"))]))
            // The user signs in with the password the admin set.
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"ada@example.com","password":"secret123"}"#).status == .ok)
        }
    }

    @Test func customClaimsReachTheNextIDToken() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("claims@example.com")
            let uid = created["localId"]!.stringValue!
            let set = try await auth.admin("accounts:update", #"{"localId":"\#(uid)","customAttributes":"{\"admin\":true,\"level\":3}"}"#)
            #expect(set.status == .ok, "\(set.body)")
            #expect(set.string("localId") == uid)
            let refreshed = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", #"{"grantType":"refresh_token","refreshToken":"\#(created["refreshToken"]!.stringValue!)"}"#)
            let claims = try jwtParts(try #require(refreshed.string("id_token"))).payload
            #expect(claims["admin"] == .bool(true))
            #expect(claims["level"] == .number(3))
            #expect(try await auth.admin("accounts:update", #"{"localId":"\#(uid)","customAttributes":"{\"iss\":\"me\"}"}"#).authError == "FORBIDDEN_CLAIM : iss")
            #expect(try await auth.admin("accounts:update", #"{"localId":"\#(uid)","customAttributes":"[1]"}"#).authError == "INVALID_CLAIMS")
            let large = String(repeating: "x", count: 1000)
            #expect(try await auth.admin("accounts:update", #"{"localId":"\#(uid)","customAttributes":"{\"k\":\"\#(large)\"}"}"#).authError == "CLAIMS_TOO_LARGE")
            #expect(try await auth.admin("accounts:update", #"{"localId":"nobody","displayName":"x"}"#).authError == "USER_NOT_FOUND")
            #expect(try await auth.admin("accounts:update", #"{"displayName":"x"}"#).authError == "MISSING_LOCAL_ID")
        }
    }

    @Test func validSinceRevokesEarlierTokens() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("rev@example.com")
            let uid = created["localId"]!.stringValue!
            let future = Int(Date().timeIntervalSince1970) + 5
            // firebase-admin sends validSince as a number.
            let revoke = try await auth.admin("accounts:update", #"{"localId":"\#(uid)","validSince":\#(future)}"#)
            #expect(revoke.status == .ok, "\(revoke.body)")
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(created["idToken"]!.stringValue!)"}"#).authError == "TOKEN_EXPIRED")
            let refresh = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", #"{"grantType":"refresh_token","refreshToken":"\#(created["refreshToken"]!.stringValue!)"}"#)
            #expect(refresh.authError == "TOKEN_EXPIRED")
            let user = try await auth.admin("accounts:lookup", #"{"localId":["\#(uid)"]}"#)
            #expect(user.json?["users"]?.arrayValue?.first?["validSince"] == .string(String(future)))
        }
    }

    /// A deleted uid created again (by the admin without a password, or imported) starts a new account:
    /// the old account's ID tokens stay refused.
    @Test func aDeletedUIDCreatedAgainRefusesTheOldAccountsTokens() async throws {
        try await IdentityTestServer().run { auth async throws in
            for (uid, recreate) in [("made", "accounts"), ("imported", "accounts:batchCreate")] {
                #expect(try await auth.admin("accounts", #"{"localId":"\#(uid)","email":"\#(uid)@example.com","password":"secret123"}"#).status == .ok)
                let signedIn = try await auth.post("accounts:signInWithPassword", #"{"email":"\#(uid)@example.com","password":"secret123"}"#)
                let oldToken = try #require(signedIn.string("idToken"))
                // A second apart: tokens count from whole seconds.
                try await Task.sleep(for: .milliseconds(1100))
                #expect(try await auth.admin("accounts:delete", #"{"localId":"\#(uid)"}"#).status == .ok)
                let body = recreate == "accounts" ? #"{"localId":"\#(uid)"}"# : #"{"users":[{"localId":"\#(uid)"}]}"#
                let again = try await auth.admin(recreate, body)
                #expect(again.status == .ok, "\(again.body)")
                #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(oldToken)"}"#).authError == "TOKEN_EXPIRED", "\(recreate)")
            }
        }
    }

    /// A uid the server never saw before gets no `validSince` when the admin creates or imports it: the
    /// emulator's mock tokens (firebase-admin's, rules-unit-testing's), issued at 0, stay accepted.
    @Test func aNewUIDsMockTokensIssuedAtZeroStayAccepted() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            #expect(try await auth.admin("accounts", #"{"localId":"fresh"}"#).status == .ok)
            #expect(try await auth.admin("accounts:batchCreate", #"{"users":[{"localId":"imported"}]}"#).status == .ok)
            for uid in ["fresh", "imported"] {
                let payload = #"{"aud":"\#(IdentityTestServer.project)","iss":"\#(TokenSigner.firebaseIssuerPrefix)\#(IdentityTestServer.project)","sub":"\#(uid)","iat":0,"exp":9999999999}"#
                let token = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + "."
                let lookup = try await auth.post("accounts:lookup", #"{"idToken":"\#(token)"}"#)
                #expect(lookup.status == .ok, "\(uid): \(lookup.body)")
            }
        }
    }

    @Test func listingPagesByLocalID() async throws {
        try await IdentityTestServer().run { auth async throws in
            for id in ["c", "a", "b"] { try await auth.admin("accounts", #"{"localId":"\#(id)"}"#) }
            let first = try await auth.admin("accounts:batchGet?maxResults=2", method: .get)
            #expect(first.string("kind") == "identitytoolkit#DownloadAccountResponse")
            #expect(first.json?["users"]?.arrayValue?.map { $0["localId"] } == [.string("a"), .string("b")])
            #expect(first.string("nextPageToken") == "b")
            let second = try await auth.admin("accounts:batchGet?maxResults=2&nextPageToken=b", method: .get)
            #expect(second.json?["users"]?.arrayValue?.map { $0["localId"] } == [.string("c")])
            #expect(second.json?["nextPageToken"] == nil)
            #expect(try await auth.admin("accounts:batchGet?maxResults=1001", method: .get).status == .badRequest)
            let query = try await auth.admin("accounts:query", #"{"returnUserInfo":true}"#)
            #expect(query.string("recordsCount") == "3")
            #expect(query.json?["userInfo"]?.arrayValue?.count == 3)
        }
    }

    @Test func theAdminsDownloadHasEachPasswordsHashAndSalt() async throws {
        try await IdentityTestServer().run { auth async throws in
            try await auth.admin("accounts", #"{"localId":"pw","email":"pw@example.com","password":"download-pw"}"#)
            try await auth.admin("accounts", #"{"localId":"nopw"}"#)
            let users = try #require(try await auth.admin("accounts:batchGet", method: .get).json?["users"]?.arrayValue)
            let withPassword = try #require(users.first { $0["localId"] == .string("pw") })
            let hashText = try #require(withPassword["passwordHash"]?.stringValue)
            let saltText = try #require(withPassword["salt"]?.stringValue)
            let hash = try #require(Data(base64Encoded: hashText))
            let salt = try #require(Data(base64Encoded: saltText))
            // Standard scrypt with the stored cost: what another system needs to import it.
            #expect(Array(hash) == (try PasswordHasher.fastForTests.derive("download-pw", salt: Array(salt))))
            #expect(users.first { $0["localId"] == .string("nopw") }?["salt"] == nil)
            // Lookup still redacts it.
            let looked = try await auth.admin("accounts:lookup", #"{"localId":["pw"]}"#)
            #expect(looked.json?["users"]?.arrayValue?.first?["passwordHash"] == .string(IdentityService.redactedPasswordHash))
            #expect(looked.json?["users"]?.arrayValue?.first?["salt"] == nil)
        }
    }

    @Test func lookupFindsUsersByPhoneNumberInEitherStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-phone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for store in [InMemoryUserStore() as any UserStore, try SQLiteUserStore(directory: directory)] {
            try await IdentityTestServer().run(users: store) { auth async throws in
                try await auth.admin("accounts", #"{"localId":"phoned","phoneNumber":"+15555550100"}"#)
                try await auth.admin("accounts", #"{"localId":"other","phoneNumber":"+15555550199"}"#)
                let found = try await auth.admin("accounts:lookup", #"{"phoneNumber":["+15555550100"]}"#)
                #expect(found.json?["users"]?.arrayValue?.map { $0["localId"] } == [.string("phoned")])
                #expect(try await auth.admin("accounts:lookup", #"{"phoneNumber":["+15555550111"]}"#).json?["users"] == nil)
            }
        }
    }

    @Test func batchDeleteNeedsDisabledUsersUnlessForced() async throws {
        try await IdentityTestServer().run { auth async throws in
            for id in ["x", "y"] { try await auth.admin("accounts", #"{"localId":"\#(id)"}"#) }
            let refused = try await auth.admin("accounts:batchDelete", #"{"localIds":["x"]}"#)
            #expect(refused.json?["errors"]?.arrayValue?.first?["message"] == .string("NOT_DISABLED : Disable the account before batch deletion."))
            let forced = try await auth.admin("accounts:batchDelete", #"{"localIds":["x","y","never"],"force":true}"#)
            #expect(forced.status == .ok)
            #expect(forced.json?["errors"] == nil)
            #expect(try await auth.admin("accounts:query", "{}").string("recordsCount") == "0")
            #expect(try await auth.admin("accounts:delete", #"{"localId":"x"}"#).authError == "USER_NOT_FOUND")
        }
    }

    @Test func adminCallsNeedTheAdminCredential() async throws {
        try await IdentityTestServer().run { auth async throws in
            let owner = try await auth.send(.post, "/identitytoolkit.googleapis.com/v1/projects/\(IdentityTestServer.project)/accounts:lookup", "{}", headers: [.authorization: "Bearer owner"])
            #expect(owner.status == .unauthorized)
            #expect(owner.json?["error"]?["status"] == .string("UNAUTHENTICATED"))
            let keyOnly = try await auth.send(.get, "/identitytoolkit.googleapis.com/v1/accounts:batchGet?key=k", nil)
            #expect(keyOnly.status == .forbidden)
            #expect(keyOnly.json?["error"]?["status"] == .string("PERMISSION_DENIED"))
            let projectWithKey = try await auth.send(.get, "/identitytoolkit.googleapis.com/v1/projects/\(IdentityTestServer.project)/accounts:batchGet?key=k", nil)
            #expect(projectWithKey.authError == "INSUFFICIENT_PERMISSION : Only authenticated requests can specify target_project_id.")
            #expect(try await auth.admin("accounts:batchGet", method: .get, project: "another-project").authError == "CONFIGURATION_NOT_FOUND")
        }
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let owner = try await auth.send(.post, "/identitytoolkit.googleapis.com/v1/projects/any-project/accounts", #"{"localId":"o"}"#, headers: [.authorization: "Bearer owner"])
            #expect(owner.status == .ok)
            // Each project has its own users.
            let elsewhere = try await auth.admin("accounts:lookup", #"{"localId":["o"]}"#)
            #expect(elsewhere.json?["users"] == nil)
        }
    }

    @Test func theEmulatorHooksResetAProject() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            _ = try await auth.signUp("hook@example.com")
            let config = try await auth.send(.get, "/emulator/v1/projects/\(IdentityTestServer.project)/config", nil)
            #expect(config.json?["signIn"]?["allowDuplicateEmails"] == .bool(false))
            let reset = try await auth.send(.delete, "/emulator/v1/projects/\(IdentityTestServer.project)/accounts", nil)
            #expect(reset.status == .ok)
            #expect(try await auth.admin("accounts:query", "{}").string("recordsCount") == "0")
        }
        try await IdentityTestServer().run { auth async throws in
            let hidden = try await auth.send(.delete, "/emulator/v1/projects/\(IdentityTestServer.project)/accounts", nil)
            #expect(hidden.status != .ok)
        }
    }

    /// `PATCH …/config` as the Auth emulator takes it: only the fields sent change, an empty body resets,
    /// and email privacy decides what a wrong email's sign-in answers.
    @Test func theEmulatorConfigChangesEmailPrivacy() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let path = "/emulator/v1/projects/\(IdentityTestServer.project)/config"
            let wrongEmail = #"{"email":"nobody@example.com","password":"guess-123"}"#
            #expect(try await auth.post("accounts:signInWithPassword", wrongEmail).authError == "EMAIL_NOT_FOUND")
            let on = try await auth.send(.patch, path, #"{"emailPrivacyConfig":{"enableImprovedEmailPrivacy":true}}"#)
            #expect(on.status == .ok)
            #expect(on.json?["emailPrivacyConfig"]?["enableImprovedEmailPrivacy"] == .bool(true))
            #expect(try await auth.send(.get, path, nil).json?["emailPrivacyConfig"]?["enableImprovedEmailPrivacy"] == .bool(true))
            #expect(try await auth.post("accounts:signInWithPassword", wrongEmail).authError == "INVALID_LOGIN_CREDENTIALS")
            // A field of the other setting alone leaves this one.
            #expect(try await auth.send(.patch, path, #"{"signIn":{"allowDuplicateEmails":false}}"#).status == .ok)
            #expect(try await auth.send(.get, path, nil).json?["emailPrivacyConfig"]?["enableImprovedEmailPrivacy"] == .bool(true))
            // Duplicate emails are refused in Firebase's error shape.
            let duplicates = try await auth.send(.patch, path, #"{"signIn":{"allowDuplicateEmails":true}}"#)
            #expect(duplicates.status == .badRequest)
            #expect(duplicates.authError?.hasPrefix("INVALID_ARGUMENT") == true)
            // An empty body resets both.
            let reset = try await auth.send(.patch, path, "{}")
            #expect(reset.json?["emailPrivacyConfig"]?["enableImprovedEmailPrivacy"] == .bool(false))
            #expect(try await auth.post("accounts:signInWithPassword", wrongEmail).authError == "EMAIL_NOT_FOUND")
        }
    }
}

@Suite struct IdentityRulesTests {
    static let rules = #"""
        {"rules": {"users": {"$uid": {
            ".read": "auth.uid === $uid",
            ".write": "auth.uid === $uid && auth.token.email === 'rules@example.com' && auth.token.firebase.sign_in_provider === 'password'"
        }}, "admins": {".read": "auth.token.admin === true"}}}
        """#

    @Test func aSignedUpUsersTokenPassesTheDatabaseRules() async throws {
        try await IdentityTestServer().run { auth async throws in
            let rules = try await auth.send(.put, "/.settings/rules.json", Self.rules, headers: TestServer.admin)
            #expect(rules.status == .ok, "\(rules.body)")
            let created = try await auth.signUp("rules@example.com")
            let uid = created["localId"]!.stringValue!
            let token = created["idToken"]!.stringValue!
            let own = try await auth.send(.put, "/users/\(uid).json?auth=\(token)", #"{"name":"me"}"#)
            #expect(own.status == .ok, "\(own.body)")
            let bearer = try await auth.send(.get, "/users/\(uid).json", nil, headers: [.authorization: "Bearer \(token)"])
            #expect(bearer.json == (try JSONValue(parsing: #"{"name":"me"}"#)))
            #expect(try await auth.send(.put, "/users/someone-else.json?auth=\(token)", "1").status == .unauthorized)
            #expect(try await auth.send(.get, "/admins.json?auth=\(token)", nil).status == .unauthorized)
            // Custom claims set by the admin reach the rules with the next token.
            try await auth.admin("accounts:update", #"{"localId":"\#(uid)","customAttributes":"{\"admin\":true}"}"#)
            let refreshed = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", #"{"grantType":"refresh_token","refreshToken":"\#(created["refreshToken"]!.stringValue!)"}"#)
            let adminToken = try #require(refreshed.string("id_token"))
            #expect(try await auth.send(.get, "/admins.json?auth=\(adminToken)", nil).status == .ok)
        }
    }
}

@Suite struct IdentityDurabilityTests {
    @Test func usersSurviveARestartOnTheSameDataDirectory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-identity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = IdentityTestServer()
        let first = try SQLiteUserStore(directory: directory)
        let refreshToken = Mutex<String?>(nil)
        try await server.run(users: first) { auth async throws in
            let created = try await auth.signUp("durable@example.com", "durable-pw")
            refreshToken.withLock { $0 = created["refreshToken"]?.stringValue }
            try await auth.admin("accounts:update", #"{"localId":"\#(created["localId"]!.stringValue!)","customAttributes":"{\"plan\":\"pro\"}"}"#)
        }
        try first.close()
        let second = try SQLiteUserStore(directory: directory)
        try await server.run(users: second) { auth async throws in
            let signIn = try await auth.post("accounts:signInWithPassword", #"{"email":"durable@example.com","password":"durable-pw"}"#)
            #expect(signIn.status == .ok, "\(signIn.body)")
            #expect(try jwtParts(signIn.string("idToken")!).payload["plan"] == .string("pro"))
            let token = try #require(refreshToken.withLock { $0 })
            let refreshed = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", #"{"grantType":"refresh_token","refreshToken":"\#(token)"}"#)
            #expect(refreshed.status == .ok)
            #expect(try await auth.signUp("other@example.com")["localId"] != nil)
            #expect(try await auth.post("accounts:signUp", #"{"email":"durable@example.com","password":"another1"}"#).authError == "EMAIL_EXISTS")
        }
        try second.close()
        // The file keeps hashes, never passwords or refresh tokens.
        let bytes = try Data(contentsOf: directory.appendingPathComponent("users.sqlite"))
            + ((try? Data(contentsOf: directory.appendingPathComponent("users.sqlite-wal"))) ?? Data())
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("durable-pw"))
        #expect(text.contains("scrypt$"))
        #expect(!text.contains(refreshToken.withLock { $0 } ?? "-"))
    }
}

@Suite struct PasswordHasherTests {
    @Test func hashesVerifyOnlyTheirPassword() async throws {
        let hasher = PasswordHasher.fastForTests
        let first = try await hasher.hash("correct horse")
        let second = try await hasher.hash("correct horse")
        #expect(first != second)  // per-hash salt
        #expect(first.hasPrefix("scrypt$4$8$1$"))
        #expect(await hasher.verify("correct horse", against: first))
        #expect(await !hasher.verify("correct horsf", against: first))
        #expect(await !hasher.verify("correct horse", against: "garbage"))
        #expect(!hasher.needsRehash(first))
        #expect(PasswordHasher().needsRehash(first))
        // A hash verifies with whatever parameters it was made with.
        #expect(await PasswordHasher().verify("correct horse", against: first))
    }

    /// RFC 7914 §12: scrypt("password", "NaCl", N=1024, r=8, p=16, dkLen=64) — checks the primitive.
    @Test func scryptMatchesTheRFCTestVector() throws {
        let key = try KDFCheck.scrypt("password", salt: "NaCl", log2N: 10, r: 8, p: 16, length: 64)
        #expect(key.prefix(8) == [0xfd, 0xba, 0xbe, 0x1c, 0x9d, 0x34, 0x72, 0x00])
    }
}

@Suite struct SessionCookieTests {
    @Test func sessionCookiesCarryTheIDTokensClaimsAndAreNotDatabaseCredentials() async throws {
        try await IdentityTestServer().run { auth async throws in
            try await auth.send(.put, "/.settings/rules.json", #"{"rules": {".read": "auth != null"}}"#, headers: TestServer.admin)
            let created = try await auth.signUp("cookie@example.com")
            let idToken = created["idToken"]!.stringValue!
            let path = "/identitytoolkit.googleapis.com/v1/projects/\(IdentityTestServer.project):createSessionCookie"
            let reply = try await auth.send(.post, path, #"{"idToken":"\#(idToken)","validDuration":86400}"#, headers: TestServer.admin)
            #expect(reply.status == .ok, "\(reply.body)")
            let cookie = try #require(reply.string("sessionCookie"))
            let claims = try jwtParts(cookie).payload
            #expect(claims["iss"] == .string("https://session.firebase.google.com/\(IdentityTestServer.project)"))
            #expect(claims["sub"] == created["localId"])
            #expect(claims["email"] == .string("cookie@example.com"))
            if case .number(let iat)? = claims["iat"], case .number(let exp)? = claims["exp"] { #expect(exp - iat == 86400) }
            #expect(try await auth.send(.get, "/.json?auth=\(idToken)", nil).status == .ok)
            #expect(try await auth.send(.get, "/.json?auth=\(cookie)", nil).status == .unauthorized)
            #expect(try await auth.send(.post, path, #"{"idToken":"\#(idToken)","validDuration":10}"#, headers: TestServer.admin).authError == "INVALID_DURATION")
            #expect(try await auth.send(.post, path, #"{"idToken":"not.a.token"}"#, headers: TestServer.admin).authError == "INVALID_ID_TOKEN")
            #expect(try await auth.post(":createSessionCookie", #"{"idToken":"\#(idToken)"}"#).status != .ok)
            let projects = try await auth.send(.get, "/identitytoolkit.googleapis.com/v1/projects?key=k", nil)
            #expect(projects.string("projectId") == "12345")
        }
    }
}
