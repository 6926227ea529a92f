import Foundation
import HearthAccess
import HearthCore
import HearthEngine
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

/// `Authorization: Bearer <token>`: the scheme in any case, spaces around the token ignored.
@Test(arguments: [
    ("Bearer abc.def", "abc.def"), ("bearer abc", "abc"), ("BEARER   abc \t", "abc"), (" Bearer abc", "abc"),
    ("Bearer   ", ""), ("Bearer", nil), ("Bearer ", nil), ("Bearerabc", nil), ("Basic abc", nil), ("Bearers abc", nil),
    ("Béarer abc", nil), ("bEaReR x", "x"), ("Bearer\tabc", nil), ("Bearer  ", ""), ("Bearer  a b ", "a b"), ("", nil),
    ("Bearer\u{0}", nil), ("Bdarer abc", nil),
] as [(String, String?)])
func bearerTokensAreTakenFromTheAuthorizationHeader(header: String, token: String?) {
    #expect(Authenticator.bearerToken(header) == token)
}

@Suite struct TokenSignerTests {
    let signer = TokenSigner.generate()
    let now = Date()

    @Test func mintedTokensVerifyIntoAuth() throws {
        let token = try signer.mint(uid: "ada", claims: [(key: "admin", value: .bool(true))], expiresIn: 3600, now: now)
        let auth = try signer.verify(token, now: now, allowUnsigned: false).auth
        #expect(auth["uid"] == .string("ada"))
        #expect(auth["provider"] == .string("custom"))
        #expect(auth["token"]?["admin"] == .bool(true))
        #expect(auth["token"]?["sub"] == .string("ada"))
    }

    @Test func tamperedExpiredForeignAndUnsignedTokensAreRefused() throws {
        let token = try signer.mint(uid: "ada", claims: [], expiresIn: 3600, now: now)
        let parts = token.split(separator: ".").map(String.init)
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"sub":"root","exp":9999999999,"iss":"hearth","aud":"hearth"}"#.utf8)) + "." + parts[2]
        #expect(throws: TokenError.badSignature) { try signer.verify(forged, now: now, allowUnsigned: false) }
        let expired = try signer.mint(uid: "ada", claims: [], expiresIn: 10, now: now.addingTimeInterval(-3600))
        #expect(throws: TokenError.expired) { try signer.verify(expired, now: now, allowUnsigned: false) }
        let foreign = try TokenSigner.generate().mint(uid: "ada", claims: [], expiresIn: 3600, now: now)
        #expect(throws: TokenError.badSignature) { try signer.verify(foreign, now: now, allowUnsigned: false) }
        let unsigned = Self.unsignedToken(uid: "ada", expires: now.timeIntervalSince1970 + 3600)
        #expect(throws: TokenError.badSignature) { try signer.verify(unsigned, now: now, allowUnsigned: false) }
        #expect(try signer.verify(unsigned, now: now, allowUnsigned: true).auth["uid"] == .string("ada"))
        #expect(throws: TokenError.malformed) { try signer.verify("not.a.token", now: now, allowUnsigned: true) }
    }

    @Test func theKeyIsPublishedAsAJWKS() {
        let key = signer.jwks["keys"].flatMap { if case .array(let keys) = $0 { keys.first } else { nil } }
        #expect(key?["kty"] == .string("EC"))
        #expect(key?["crv"] == .string("P-256"))
        #expect(key?["kid"] == .string(signer.keyID))
    }

    /// What the Firebase SDKs' emulator helpers send: `alg: none` and an empty signature.
    static func unsignedToken(uid: String, expires: Double) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"none","type":"JWT"}"#.utf8))
        let payload = Base64URL.encode(Array("{\"sub\":\"\(uid)\",\"user_id\":\"\(uid)\",\"exp\":\(Int(expires)),\"aud\":\"demo\",\"iss\":\"https://securetoken.google.com/demo\"}".utf8))
        return header + "." + payload + "."
    }
}

@Suite struct TokenAuthenticationTests {
    static let rules = #"{"rules": {"users": {"$uid": {".read": "$uid === auth.uid", ".write": "$uid === auth.uid && auth.token.email_verified === true"}}}}"#

    @Test func tokensReachTheRules() async throws {
        let server = TestServer()
        try await server.run { client, _ async throws in
            try await client.call(.put, "/.settings/rules.json", Self.rules)
            let ada = try server.tokens.mint(uid: "ada", claims: [(key: "email_verified", value: .bool(true))], expiresIn: 600, now: server.wallDate)
            let unverified = try server.tokens.mint(uid: "ada", claims: [], expiresIn: 600, now: server.wallDate)
            #expect(try await client.call(.put, "/users/ada.json", "1", headers: [.authorization: "Bearer \(ada)"]).status == .ok)
            #expect(try await client.call(.get, "/users/ada.json?auth=\(ada)", headers: [:]).body == "1")
            #expect(try await client.call(.put, "/users/ada.json", "2", headers: [.authorization: "Bearer \(unverified)"]).status == .unauthorized)
            #expect(try await client.call(.get, "/users/bob.json", headers: [.authorization: "Bearer \(ada)"]).status == .unauthorized)
            let expired = try server.tokens.mint(uid: "ada", claims: [], expiresIn: 10, now: server.wallDate.addingTimeInterval(-3600))
            #expect(try await client.call(.get, "/users/ada.json", headers: [.authorization: "Bearer \(expired)"]).error == "Auth token is expired")
            // Unsigned tokens are refused outside emulator mode.
            let unsigned = TokenSignerTests.unsignedToken(uid: "ada", expires: server.wallDate.timeIntervalSince1970 + 600)
            #expect(try await client.call(.get, "/users/ada.json", headers: [.authorization: "Bearer \(unsigned)"]).error == "Could not parse auth token.")
            let jwks = try await client.call(.get, "/.well-known/jwks.json", headers: [:])
            #expect(jwks.status == .ok)
            #expect(jwks.json?["keys"] != nil)
        }
    }

    @Test func emulatorModeAcceptsUnsignedTokens() async throws {
        let server = TestServer(emulator: true)
        try await server.run { client, _ async throws in
            try await client.call(.put, "/.settings/rules.json", Self.rules)
            try await client.call(.put, "/users/ada.json", "1")
            let unsigned = TokenSignerTests.unsignedToken(uid: "ada", expires: server.wallDate.timeIntervalSince1970 + 600)
            #expect(try await client.call(.get, "/users/ada.json", headers: [.authorization: "Bearer \(unsigned)"]).body == "1")
        }
    }

    @Test func streamsEndWithAuthRevokedWhenTheTokenExpires() async throws {
        // Keep-alives far apart, so the minute the test advances holds none.
        let server = TestServer { $0.keepAliveInterval = .seconds(3600) }
        try await server.run { client, _ async throws in
            try await client.call(.put, "/.settings/rules.json", Self.rules)
            try await client.call(.put, "/users/ada.json", "1")
            // Valid for a minute of the server's clock, which stands still until the test advances it.
            let token = try server.tokens.mint(uid: "ada", claims: [], expiresIn: 60, now: server.wallDate)
            async let streamed = client.call(.get, "/users/ada.json", headers: [.authorization: "Bearer \(token)", .accept: "text/event-stream"])
            let database = try await server.registry.database("default")
            try await eventually { database.hub.listenerCount == 1 }
            await server.advance(by: .seconds(60))
            let reply = try await streamed
            #expect(reply.body == "event: put\ndata: {\"path\":\"/\",\"data\":1}\n\nevent: auth_revoked\ndata: credential is no longer valid\n\n")
        }
    }
}

/// Bounded random and mutated tokens: verification answers with an error or an auth value, never crashes.
@Suite struct TokenFuzzTests {
    @Test func mutatedTokensNeverCrashTheVerifier() async throws {
        let signer = TokenSigner.generate()
        let valid = Array(try signer.mint(uid: "ada", claims: [], expiresIn: 600, now: Date()))
        let alphabet = Array("abcXYZ019-_.=+/{}\"\u{0}é")
        var state: UInt64 = 11
        func next() -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33)
        }
        var accepted = 0
        for round in 0..<5_000 {
            // Long CPU-bound loops yield, so tests that wait on the same thread pool are not starved.
            if round % 100 == 0 { await Task.yield() }
            var token = valid
            if round % 3 == 2 {
                token = (0..<(next() % 200)).map { _ in alphabet[next() % alphabet.count] }
            } else {
                for _ in 0..<(1 + next() % 3) where !token.isEmpty {
                    token[next() % token.count] = alphabet[next() % alphabet.count]
                }
            }
            if (try? signer.verify(String(token), now: Date(), allowUnsigned: round % 2 == 0)) != nil { accepted += 1 }
        }
        // A changed signed token must not verify, except when the change hit padding-free trailing bits.
        #expect(accepted < 50)
    }
}

/// `HTTPFields.value(of:)` answers as the subscript does, repeated fields included.
@Test func aHeaderValueIsReadAsTheSubscriptReadsIt() {
    var fields: HTTPFields = [.authorization: "Bearer one", .accept: "a"]
    #expect(fields.value(of: .authorization) == "Bearer one")
    #expect(fields.value(of: .ifMatch) == nil)
    fields.append(HTTPField(name: .accept, value: "b"))
    #expect(fields.value(of: .accept) == fields[.accept])
    #expect(fields.value(of: .accept) == "a, b")
    fields.append(HTTPField(name: .cookie, value: "x=1"))
    fields.append(HTTPField(name: .cookie, value: "y=2"))
    #expect(fields.value(of: .cookie) == "x=1; y=2")
    #expect(fields.value(of: HTTPField.Name("AUTHORIZATION")!) == "Bearer one")
}
