import Foundation
import HearthAccess
import HearthCore
@testable import HearthIdentity
@testable import HearthServer
import HTTPTypes
import Testing

@Suite struct SignUpTests {
    @Test func emailSignUpReturnsTokensWithFirebaseClaims() async throws {
        let server = IdentityTestServer()
        try await server.run { auth async throws in
            let reply = try await auth.signUp("Ada@Example.com")
            #expect(reply["kind"] == .string("identitytoolkit#SignupNewUserResponse"))
            #expect(reply["email"] == .string("ada@example.com"))
            #expect(reply["expiresIn"] == .string("3600"))
            let uid = try #require(reply["localId"]?.stringValue)
            #expect(uid.count == 28)
            #expect(reply["refreshToken"]?.stringValue?.isEmpty == false)
            let (header, claims) = try jwtParts(try #require(reply["idToken"]?.stringValue))
            #expect(header["alg"] == .string("ES256"))
            #expect(header["kid"] == .string(server.tokens.keyID))
            #expect(claims["iss"] == .string("https://securetoken.google.com/\(IdentityTestServer.project)"))
            #expect(claims["aud"] == .string(IdentityTestServer.project))
            #expect(claims["sub"] == .string(uid))
            #expect(claims["user_id"] == .string(uid))
            #expect(claims["email"] == .string("ada@example.com"))
            #expect(claims["email_verified"] == .bool(false))
            #expect(claims["firebase"]?["sign_in_provider"] == .string("password"))
            #expect(claims["firebase"]?["identities"]?["email"] == .array([.string("ada@example.com")]))
            guard case .number(let iat)? = claims["iat"], case .number(let exp)? = claims["exp"], case .number(let authTime)? = claims["auth_time"]
            else { Issue.record("missing times"); return }
            #expect(exp - iat == 3600)
            #expect(authTime == iat)
        }
    }

    @Test func anonymousSignUpHasNoEmailAndTheAnonymousProvider() async throws {
        try await IdentityTestServer().run { auth async throws in
            let reply = try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#)
            #expect(reply.status == .ok)
            #expect(reply.json?["email"] == nil)
            let claims = try jwtParts(try #require(reply.string("idToken"))).payload
            #expect(claims["firebase"]?["sign_in_provider"] == .string("anonymous"))
            #expect(claims["provider_id"] == .string("anonymous"))
            #expect(claims["firebase"]?["identities"] == .object([]))
            let lookup = try await auth.post("accounts:lookup", #"{"idToken":"\#(reply.string("idToken")!)"}"#)
            let user = try #require(lookup.json?["users"]?.arrayValue?.first)
            #expect(user["passwordHash"] == nil)
            #expect(user["email"] == nil)
        }
    }

    @Test func anAnonymousUserLinksAnEmailAndPassword() async throws {
        try await IdentityTestServer().run { auth async throws in
            let anonymous = try await auth.post("accounts:signUp", "{}")
            let uid = try #require(anonymous.string("localId"))
            let linked = try await auth.post("accounts:signUp", #"{"idToken":"\#(anonymous.string("idToken")!)","email":"lin@example.com","password":"secret123"}"#)
            #expect(linked.status == .ok, "\(linked.body)")
            #expect(linked.string("localId") == uid)
            let signIn = try await auth.post("accounts:signInWithPassword", #"{"email":"lin@example.com","password":"secret123"}"#)
            #expect(signIn.string("localId") == uid)
            // The same call on an account that already has an email and a password changes the password
            // as `accounts:update` does: the account's other sessions end. (Another address: refused while
            // enumeration protection is on, `withEnumerationProtectionAnAddressChangesOnlyOnceVerified`.)
            let other = try #require(signIn.string("refreshToken"))
            let relinked = try await auth.post("accounts:signUp", #"{"idToken":"\#(linked.string("idToken")!)","email":"lin@example.com","password":"another123"}"#)
            #expect(relinked.status == .ok, "\(relinked.body)")
            let refresh = try await auth.send(
                .post, "/securetoken.googleapis.com/v1/token?key=\(IdentityClient.key)", "grant_type=refresh_token&refresh_token=\(other)",
                headers: [.contentType: "application/x-www-form-urlencoded"]
            )
            #expect(refresh.authError == "TOKEN_EXPIRED")
            let kept = try await auth.send(
                .post, "/securetoken.googleapis.com/v1/token?key=\(IdentityClient.key)",
                "grant_type=refresh_token&refresh_token=\(try #require(relinked.string("refreshToken")))",
                headers: [.contentType: "application/x-www-form-urlencoded"]
            )
            #expect(kept.status == .ok, "\(kept.body)")
        }
    }

    @Test func errorsUseFirebasesEnvelopeAndCodes() async throws {
        try await IdentityTestServer().run { auth async throws in
            _ = try await auth.signUp("taken@example.com")
            let duplicate = try await auth.post("accounts:signUp", #"{"email":"TAKEN@example.com","password":"secret123"}"#)
            #expect(duplicate.status == .badRequest)
            #expect(duplicate.json == (try JSONValue(parsing: #"{"error":{"code":400,"message":"EMAIL_EXISTS","errors":[{"message":"EMAIL_EXISTS","reason":"invalid","domain":"global"}]}}"#)))
            let weak = try await auth.post("accounts:signUp", #"{"email":"weak@example.com","password":"12345"}"#)
            #expect(weak.authError == "WEAK_PASSWORD : Password should be at least 6 characters")
            #expect(try await auth.post("accounts:signUp", #"{"email":"nope","password":"secret123"}"#).authError == "INVALID_EMAIL")
            // A line break (or a space, or angle brackets) in an address would reach SMTP commands.
            #expect(try await auth.post("accounts:signUp", #"{"email":"x>\r\nRCPT TO:<v@evil.example","password":"secret123"}"#).authError == "INVALID_EMAIL")
            #expect(try await auth.post("accounts:signUp", #"{"email":"a b@example.com","password":"secret123"}"#).authError == "INVALID_EMAIL")
            #expect(try await auth.post("accounts:signUp", #"{"email":"a@b.c"}"#).authError == "MISSING_PASSWORD")
            #expect(try await auth.post("accounts:signUp", #"{"password":"secret123"}"#).authError == "MISSING_EMAIL")
            #expect(try await auth.post("accounts:signUp", #"{"localId":"x","email":"a@b.c","password":"secret123"}"#).authError == "UNEXPECTED_PARAMETER : User ID")
            let malformed = try await auth.post("accounts:signUp", "{nope")
            #expect(malformed.status == .badRequest)
            #expect(malformed.json?["error"]?["status"] == .string("INVALID_ARGUMENT"))
        }
    }

    @Test func requestsNeedAnAPIKey() async throws {
        try await IdentityTestServer().run { auth async throws in
            let missing = try await auth.post("accounts:signUp", "{}", key: nil)
            #expect(missing.status == .forbidden)
            #expect(missing.json?["error"]?["status"] == .string("PERMISSION_DENIED"))
            #expect(missing.authError == "The request is missing a valid API key.")
            let header = try await auth.post("accounts:signUp", "{}", headers: [HTTPField.Name("x-goog-api-key")!: "k"], key: nil)
            #expect(header.status == .ok)
        }
        try await IdentityTestServer { $0.identity.apiKeys = ["good-key"] }.run { auth async throws in
            let bad = try await auth.post("accounts:signUp", "{}", key: "bad-key")
            #expect(bad.status == .badRequest)
            #expect(bad.json?["error"]?["errors"]?.arrayValue?.first?["reason"] == .string("keyInvalid"))
            #expect(try await auth.post("accounts:signUp", "{}", key: "good-key").status == .ok)
        }
    }

    @Test func snakeCaseFieldsAreAccepted() async throws {
        try await IdentityTestServer().run { auth async throws in
            let reply = try await auth.post("accounts:signUp", #"{"email":"snake@example.com","password":"secret123","return_secure_token":true,"display_name":"Sn Ake"}"#)
            #expect(reply.string("displayName") == "Sn Ake")
        }
    }
}

@Suite struct SignInTests {
    @Test func passwordSignInSucceedsAndFailsWithFirebasesCodes() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let created = try await auth.signUp("bob@example.com")
            let ok = try await auth.post("accounts:signInWithPassword", #"{"email":"BOB@example.com","password":"secret123","returnSecureToken":true}"#)
            #expect(ok.status == .ok)
            #expect(ok.string("kind") == "identitytoolkit#VerifyPasswordResponse")
            #expect(ok.json?["registered"] == .bool(true))
            #expect(ok.json?["localId"] == created["localId"])
            #expect(ok.string("expiresIn") == "3600")
            #expect(try jwtParts(ok.string("idToken")!).payload["firebase"]?["sign_in_provider"] == .string("password"))
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"bob@example.com","password":"wrong-one"}"#).authError == "INVALID_PASSWORD")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"nobody@example.com","password":"secret123"}"#).authError == "EMAIL_NOT_FOUND")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"bob@example.com"}"#).authError == "MISSING_PASSWORD")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"password":"x"}"#).authError == "MISSING_EMAIL")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"bob","password":"x"}"#).authError == "INVALID_EMAIL")
        }
    }

    @Test func theDefaultModeDoesNotTellWhetherAnEmailExists() async throws {
        try await IdentityTestServer().run { auth async throws in
            _ = try await auth.signUp("eve@example.com")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"eve@example.com","password":"wrong-one"}"#).authError == "INVALID_LOGIN_CREDENTIALS")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"ghost@example.com","password":"wrong-one"}"#).authError == "INVALID_LOGIN_CREDENTIALS")
        }
    }

    @Test func disabledUsersCannotSignInOrRefresh() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("dis@example.com")
            let uid = created["localId"]!.stringValue!
            let disable = try await auth.admin("accounts:update", #"{"localId":"\#(uid)","disableUser":true}"#)
            #expect(disable.status == .ok, "\(disable.body)")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"dis@example.com","password":"secret123"}"#).authError == "USER_DISABLED")
            let refresh = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", #"{"grant_type":"refresh_token","refresh_token":"\#(created["refreshToken"]!.stringValue!)"}"#)
            #expect(refresh.authError == "USER_DISABLED")
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(created["idToken"]!.stringValue!)"}"#).authError == "USER_DISABLED")
        }
    }

    @Test func theLegacyV3NamesReachTheSameOperations() async throws {
        try await IdentityTestServer().run { auth async throws in
            _ = try await auth.signUp("ios@example.com")
            let reply = try await auth.send(.post, "/www.googleapis.com/identitytoolkit/v3/relyingparty/verifyPassword?key=k", #"{"email":"ios@example.com","password":"secret123","returnSecureToken":true}"#)
            #expect(reply.status == .ok)
            #expect(reply.string("idToken") != nil)
            let signOut = try await auth.send(.post, "/www.googleapis.com/identitytoolkit/v3/relyingparty/signOutUser?key=k", "{}")
            #expect(signOut.status == .notImplemented)
        }
    }
}

@Suite struct CustomTokenTests {
    @Test func emulatorModeAcceptsUnsignedCustomTokensAndKeepsTheirClaims() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let token = unsignedCustomToken(uid: "custom-1", claims: #"{"role":"editor"}"#)
            let first = try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(token)","returnSecureToken":true}"#)
            #expect(first.status == .ok, "\(first.body)")
            #expect(first.json?["isNewUser"] == .bool(true))
            let claims = try jwtParts(first.string("idToken")!).payload
            #expect(claims["sub"] == .string("custom-1"))
            #expect(claims["role"] == .string("editor"))
            #expect(claims["firebase"]?["sign_in_provider"] == .string("custom"))
            let second = try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(token)"}"#)
            #expect(second.json?["isNewUser"] == .bool(false))
            // Refreshed tokens keep the custom token's claims.
            let refreshed = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", "grant_type=refresh_token&refresh_token=\(first.string("refreshToken")!)", headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(try jwtParts(refreshed.string("id_token")!).payload["role"] == .string("editor"))
        }
    }

    @Test func customTokenErrors() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            #expect(try await auth.post("accounts:signInWithCustomToken", "{}").authError == "MISSING_CUSTOM_TOKEN")
            #expect(try await auth.post("accounts:signInWithCustomToken", #"{"token":"garbage"}"#).authError == "INVALID_CUSTOM_TOKEN : Invalid assertion format")
            let wrongAudience = unsignedCustomToken(uid: "u", audience: "elsewhere")
            #expect(try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(wrongAudience)"}"#).authError?.hasPrefix("INVALID_CUSTOM_TOKEN : ((Invalid aud") == true)
            let forbidden = unsignedCustomToken(uid: "u", claims: #"{"sub":"root"}"#)
            #expect(try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(forbidden)"}"#).authError == "FORBIDDEN_CLAIM : sub")
            let noUID = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"aud":"\#(IdentityService.customTokenAudience)"}"#.utf8)) + "."
            #expect(try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(noUID)"}"#).authError == "MISSING_IDENTIFIER")
            // A numeric uid past Int64's range, or not whole, is no uid (1e19 used to crash the server);
            // a whole one is taken as its text.
            for uid in ["1e19", "-1e300", "1.5"] {
                let token = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"aud":"\#(IdentityService.customTokenAudience)","uid":\#(uid)}"#.utf8)) + "."
                #expect(try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(token)"}"#).authError == "MISSING_IDENTIFIER", "uid \(uid)")
            }
            let whole = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"aud":"\#(IdentityService.customTokenAudience)","uid":42}"#.utf8)) + "."
            let signedIn = try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(whole)"}"#)
            #expect(signedIn.status == .ok, "\(signedIn.body)")
            #expect(try jwtParts(signedIn.string("idToken")!).payload["sub"] == .string("42"))
        }
    }

    @Test func theDefaultModeAcceptsOnlyTokensSignedByTheServer() async throws {
        let server = IdentityTestServer()
        try await server.run { auth async throws in
            let unsigned = unsignedCustomToken(uid: "u")
            #expect(try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(unsigned)"}"#).authError?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
            let now = Date().timeIntervalSince1970
            let signed = try server.tokens.sign(payload: [
                ("aud", .string(IdentityService.customTokenAudience)), ("uid", .string("signed-1")),
                ("iat", .number(now)), ("exp", .number(now + 3600)),
            ])
            let reply = try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(signed)"}"#)
            #expect(reply.status == .ok, "\(reply.body)")
            #expect(try jwtParts(reply.string("idToken")!).payload["sub"] == .string("signed-1"))
            let foreign = try TokenSigner.generate().sign(payload: [("aud", .string(IdentityService.customTokenAudience)), ("uid", .string("x")), ("exp", .number(now + 3600))])
            #expect(try await auth.post("accounts:signInWithCustomToken", #"{"token":"\#(foreign)"}"#).authError == "INVALID_CUSTOM_TOKEN : Invalid signature")
        }
    }
}

@Suite struct AccountTests {
    @Test func lookupReturnsTheCallersUser() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("look@example.com")
            let reply = try await auth.post("accounts:lookup", #"{"idToken":"\#(created["idToken"]!.stringValue!)"}"#)
            #expect(reply.string("kind") == "identitytoolkit#GetAccountInfoResponse")
            let user = try #require(reply.json?["users"]?.arrayValue?.first)
            #expect(user["localId"] == created["localId"])
            #expect(user["email"] == .string("look@example.com"))
            #expect(user["emailVerified"] == .bool(false))
            #expect(user["passwordHash"] == .string("UkVEQUNURUQ="))
            #expect(user["salt"] == nil)
            #expect(user["createdAt"]?.stringValue.flatMap { Int64($0) } != nil)
            #expect(user["lastLoginAt"]?.stringValue != nil)
            #expect(user["providerUserInfo"]?.arrayValue?.first?["providerId"] == .string("password"))
            #expect(user["providerUserInfo"]?.arrayValue?.first?["rawId"] == .string("look@example.com"))
            #expect(try await auth.post("accounts:lookup", "{}").authError == "MISSING_ID_TOKEN")
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"x.y.z"}"#).authError == "INVALID_ID_TOKEN")
        }
    }

    @Test func tamperedForeignAndExpiredIDTokensAreRefused() async throws {
        let server = IdentityTestServer()
        try await server.run { auth async throws in
            let created = try await auth.signUp("tamper@example.com")
            let token = created["idToken"]!.stringValue!
            let parts = token.split(separator: ".").map(String.init)
            let forgedPayload = Base64URL.encode(Array(#"{"sub":"someone-else","aud":"\#(IdentityTestServer.project)","iss":"https://securetoken.google.com/\#(IdentityTestServer.project)","exp":9999999999,"iat":1}"#.utf8))
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(parts[0]).\#(forgedPayload).\#(parts[2])"}"#).authError == "INVALID_ID_TOKEN")
            let uid = created["localId"]!.stringValue!
            let claims: [(key: String, value: JSONValue)] = [
                ("iss", .string("https://securetoken.google.com/\(IdentityTestServer.project)")), ("aud", .string(IdentityTestServer.project)),
                ("sub", .string(uid)), ("iat", .number(1_000_000)), ("exp", .number(1_003_600)),
            ]
            let expired = try server.tokens.sign(payload: claims)
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(expired)"}"#).authError == "INVALID_ID_TOKEN")
            let foreign = try TokenSigner.generate().sign(payload: claims)
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(foreign)"}"#).authError == "INVALID_ID_TOKEN")
            let now = Date().timeIntervalSince1970
            let otherProject = try server.tokens.sign(payload: [
                ("iss", .string("https://securetoken.google.com/other")), ("aud", .string("other")), ("sub", .string(uid)),
                ("iat", .number(now)), ("exp", .number(now + 600)),
            ])
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(otherProject)"}"#).authError == "INVALID_ID_TOKEN")
        }
    }

    @Test func profileUpdatesAndAttributeDeletion() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("prof@example.com")
            let idToken = created["idToken"]!.stringValue!
            let update = try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","displayName":"Prof","photoUrl":"https://example.com/p.png","returnSecureToken":true}"#)
            #expect(update.status == .ok, "\(update.body)")
            #expect(update.string("kind") == "identitytoolkit#SetAccountInfoResponse")
            #expect(update.string("displayName") == "Prof")
            #expect(update.string("photoUrl") == "https://example.com/p.png")
            #expect(update.json?["idToken"] == nil)  // profile changes do not issue tokens
            let deleted = try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","deleteAttribute":["DISPLAY_NAME"]}"#)
            #expect(deleted.json?["displayName"] == nil)
            #expect(deleted.string("photoUrl") == "https://example.com/p.png")
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","customAttributes":"{}"}"#).authError == "INSUFFICIENT_PERMISSION")
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","disableUser":true}"#).authError == "OPERATION_NOT_ALLOWED")
            #expect(try await auth.post("accounts:update", #"{"displayName":"x"}"#).authError == "INVALID_REQ_TYPE : Unsupported request parameters.")
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","password":"123"}"#).authError == "WEAK_PASSWORD : Password should be at least 6 characters")
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","email":"bad"}"#).authError == "INVALID_EMAIL")
        }
    }

    @Test func aPasswordChangeRevokesOlderRefreshTokensAndIssuesNewOnes() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("pw@example.com", "old-password")
            let oldRefresh = created["refreshToken"]!.stringValue!
            let change = try await auth.post("accounts:update", #"{"idToken":"\#(created["idToken"]!.stringValue!)","password":"new-password","returnSecureToken":true}"#)
            #expect(change.status == .ok, "\(change.body)")
            let newRefresh = try #require(change.string("refreshToken"))
            #expect(change.string("idToken") != nil)
            func refresh(_ token: String) async throws -> Reply {
                try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", #"{"grantType":"refresh_token","refreshToken":"\#(token)"}"#)
            }
            #expect(try await refresh(oldRefresh).authError == "TOKEN_EXPIRED")
            #expect(try await refresh(newRefresh).status == .ok)
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"pw@example.com","password":"old-password"}"#).authError == "INVALID_LOGIN_CREDENTIALS")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"pw@example.com","password":"new-password"}"#).status == .ok)
        }
    }

    /// With enumeration protection on (the default outside emulator mode), an app cannot change an
    /// address directly, as Firebase's: a stolen ID token must not move the account to another inbox.
    @Test func withEnumerationProtectionAnAddressChangesOnlyOnceVerified() async throws {
        try await IdentityTestServer().run { auth async throws in
            let user = try await auth.signUp("kept@example.com")
            let token = user["idToken"]!.stringValue!
            let refused = try await auth.post("accounts:update", #"{"idToken":"\#(token)","email":"thief@example.com"}"#)
            #expect(refused.authError == "OPERATION_NOT_ALLOWED : Please verify the new email before changing email.")
            let relink = try await auth.post("accounts:signUp", #"{"idToken":"\#(token)","email":"thief@example.com","password":"another123"}"#)
            #expect(relink.authError?.hasPrefix("OPERATION_NOT_ALLOWED") == true)
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"kept@example.com","password":"secret123"}"#).status == .ok)
            // An account without an address may take one (how SDKs link an email and password to an
            // anonymous account): nothing moves.
            let anonymous = try #require(try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#).string("idToken"))
            let linked = try await auth.post("accounts:update", #"{"idToken":"\#(anonymous)","email":"fresh@example.com","password":"secret123","returnSecureToken":true}"#)
            #expect(linked.status == .ok, "\(linked.body)")
            // The verified way works, and does not tell whether an address is taken.
            _ = try await auth.signUp("taken@example.com")
            let taken = try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(token)","newEmail":"taken@example.com"}"#)
            #expect(taken.status == .ok, "\(taken.body)")
            let free = try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(token)","newEmail":"new@example.com"}"#)
            #expect(free.status == .ok, "\(free.body)")
        }
    }

    @Test func anEmailChangeChecksTheNewAddress() async throws {
        try await IdentityTestServer { $0.identity.emailEnumerationProtection = false }.run { auth async throws in
            _ = try await auth.signUp("first@example.com")
            let second = try await auth.signUp("second@example.com")
            let token = second["idToken"]!.stringValue!
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(token)","email":"FIRST@example.com"}"#).authError == "EMAIL_EXISTS")
            let moved = try await auth.post("accounts:update", #"{"idToken":"\#(token)","email":"Third@example.com","returnSecureToken":true}"#)
            #expect(moved.string("email") == "third@example.com")
            #expect(moved.json?["emailVerified"] == .bool(false))
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"third@example.com","password":"secret123"}"#).status == .ok)
            // The old address is free again.
            _ = try await auth.signUp("second@example.com")
        }
    }

    @Test func deletingAnAccountEndsItsTokens() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("gone@example.com")
            let idToken = created["idToken"]!.stringValue!
            let deleted = try await auth.post("accounts:delete", #"{"idToken":"\#(idToken)"}"#)
            #expect(deleted.json == .object([("kind", .string("identitytoolkit#DeleteAccountResponse"))]))
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(idToken)"}"#).authError == "USER_NOT_FOUND")
            let refresh = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", #"{"grantType":"refresh_token","refreshToken":"\#(created["refreshToken"]!.stringValue!)"}"#)
            #expect(refresh.authError == "INVALID_REFRESH_TOKEN")
            #expect(try await auth.post("accounts:delete", "{}").authError == "MISSING_ID_TOKEN")
        }
    }

    @Test func refreshReturnsSnakeCaseAndKeepsAuthTime() async throws {
        try await IdentityTestServer().run { auth async throws in
            let created = try await auth.signUp("fresh@example.com")
            let authTime = try jwtParts(created["idToken"]!.stringValue!).payload["auth_time"]
            let form = try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", "grant_type=refresh_token&refresh_token=\(created["refreshToken"]!.stringValue!)", headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(form.status == .ok, "\(form.body)")
            #expect(form.string("token_type") == "Bearer")
            #expect(form.string("expires_in") == "3600")
            #expect(form.string("user_id") == created["localId"]?.stringValue)
            #expect(form.string("access_token") == form.string("id_token"))
            #expect(form.string("refresh_token") == created["refreshToken"]?.stringValue)
            #expect(try jwtParts(form.string("id_token")!).payload["auth_time"] == authTime)
            func token(_ body: String) async throws -> String? {
                try await auth.send(.post, "/securetoken.googleapis.com/v1/token?key=k", body).authError
            }
            #expect(try await token("{}") == "MISSING_GRANT_TYPE")
            #expect(try await token(#"{"grantType":"password"}"#) == "INVALID_GRANT_TYPE")
            #expect(try await token(#"{"grantType":"refresh_token"}"#) == "MISSING_REFRESH_TOKEN")
            #expect(try await token(#"{"grantType":"refresh_token","refreshToken":"made-up"}"#) == "INVALID_REFRESH_TOKEN")
        }
    }

    @Test func browsersGetCORSHeaders() async throws {
        try await IdentityTestServer().run { auth async throws in
            let preflight = try await auth.send(.options, "/identitytoolkit.googleapis.com/v1/accounts:signUp?key=k", nil, headers: [
                .origin: "http://localhost:5173", .accessControlRequestHeaders: "content-type,x-client-version",
                HTTPField.Name("Access-Control-Request-Private-Network")!: "true",
            ])
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == "http://localhost:5173")
            #expect(preflight.headers[.accessControlAllowHeaders] == "content-type,x-client-version")
            #expect(preflight.headers[HTTPField.Name("Access-Control-Allow-Private-Network")!] == "true")
            let reply = try await auth.post("accounts:signUp", "{}", headers: [.origin: "http://localhost:5173"])
            #expect(reply.headers[.accessControlAllowOrigin] == "http://localhost:5173")
            #expect(reply.headers[.contentType]?.hasPrefix("application/json") == true)
        }
    }

    @Test func unknownOperationsAnswerJSON() async throws {
        try await IdentityTestServer().run { auth async throws in
            let unknown = try await auth.post("accounts:doesNotExist", "{}")
            #expect(unknown.status == .notFound)
            #expect(unknown.json?["error"]?["status"] == .string("NOT_FOUND"))
            let later = try await auth.post("accounts:signInWithIdp", #"{"requestUri":"http://localhost","postBody":"","returnSecureToken":true}"#)
            #expect(later.status == .notImplemented)
            #expect(later.json?["error"]?["status"] == .string("NOT_IMPLEMENTED"))
        }
    }
}

@Suite struct SignInThrottleTests {
    @Test func repeatedFailuresLockTheAccountForAWhileWhetherOrNotItExists() async throws {
        try await IdentityTestServer { $0.identity.failedSignInLimit = 3 }.run { auth async throws in
            _ = try await auth.signUp("brute@example.com", "right-password")
            for _ in 0..<3 {
                #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"brute@example.com","password":"guess-123"}"#).authError == "INVALID_LOGIN_CREDENTIALS")
                #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"ghost@example.com","password":"guess-123"}"#).authError == "INVALID_LOGIN_CREDENTIALS")
            }
            for email in ["brute@example.com", "ghost@example.com"] {
                let locked = try await auth.post("accounts:signInWithPassword", #"{"email":"\#(email)","password":"right-password"}"#)
                #expect(locked.authError?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER : ") == true)
            }
            // Other accounts are unaffected.
            _ = try await auth.signUp("other@example.com", "right-password")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"other@example.com","password":"right-password"}"#).status == .ok)
        }
    }

    @Test func theWindowEndsAndASuccessTakesBackOnlyItsOwnAttempt() throws {
        let throttle = SignInThrottle(limit: 2, window: .seconds(60))
        _ = throttle.reserve("a", now: .zero)
        let success = try #require(throttle.reserve("a", now: .zero))
        throttle.refund("a", ticket: success)
        #expect(throttle.allows("a", now: .zero))
        _ = throttle.reserve("a", now: .zero)
        #expect(!throttle.allows("a", now: .seconds(59)))
        #expect(throttle.allows("a", now: .seconds(60)))
    }

    @Test func emulatorModeDoesNotLimit() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            _ = try await auth.signUp("emu@example.com", "right-password")
            for _ in 0..<12 {
                #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"emu@example.com","password":"guess-123"}"#).authError == "INVALID_PASSWORD")
            }
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"emu@example.com","password":"right-password"}"#).status == .ok)
        }
    }
}
