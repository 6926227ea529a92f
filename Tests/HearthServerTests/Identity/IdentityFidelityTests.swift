import Foundation
import HearthCore
import HTTPTypes
import Testing

/// What Firebase's Auth API does at its edges, as clients see it: the order of a reset's checks, enum
/// indexes, stale codes, password length in UTF-16, email-link accounts' provider, `lastRefreshAt`.
@Suite struct IdentityFidelityTests {
    /// An unknown code is refused before the new password is looked at or hashed (hashing costs a core
    /// tens of milliseconds, which no one without a code may make the server spend).
    @Test func aResetWithAnUnknownCodeIsRefusedBeforeThePasswordIsHashed() async throws {
        try await IdentityTestServer().run { auth async throws in
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"bogus","newPassword":"123"}"#).authError == "INVALID_OOB_CODE")
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"bogus","newPassword":"long-enough"}"#).authError == "INVALID_OOB_CODE")
        }
    }

    /// The Android SDK sends `requestType` as the enum's index (6 is EMAIL_SIGNIN, 1 PASSWORD_RESET).
    @Test func aRequestTypeMaySendItsIndex() async throws {
        try await IdentityTestServer().run { auth async throws in
            _ = try await auth.signUp("idx@example.com")
            let reset = try await auth.post("accounts:sendOobCode", #"{"requestType":1,"email":"idx@example.com"}"#)
            #expect(reset.status == .ok, "\(reset.body)")
            let link = try await auth.admin("accounts:sendOobCode", #"{"requestType":6,"email":"idx@example.com","returnOobLink":true}"#)
            #expect(link.string("oobLink")?.contains("mode=signIn") == true, "\(link.body)")
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":42,"email":"idx@example.com"}"#).authError?.hasPrefix("INVALID_REQ_TYPE") == true)
        }
    }

    /// A verification code sent to an address the account has since left verifies nothing, and says so.
    @Test func aVerificationCodeForAnAddressTheAccountLeftIsRefused() async throws {
        try await IdentityTestServer().run { auth async throws in
            let user = try await auth.signUp("ver@example.com")
            let uid = try #require(user["localId"]?.stringValue)
            let code = try #require(
                try await auth.admin("accounts:sendOobCode", #"{"requestType":"VERIFY_EMAIL","email":"ver@example.com","returnOobLink":true}"#).string("oobCode")
            )
            #expect(try await auth.admin("accounts:update", #"{"localId":"\#(uid)","email":"ver2@example.com"}"#).status == .ok)
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(code)"}"#).authError == "INVALID_OOB_CODE")
            let lookup = try await auth.admin("accounts:lookup", #"{"localId":["\#(uid)"]}"#)
            #expect(lookup.json?["users"]?.arrayValue?.first?["emailVerified"] == .bool(false))
        }
    }

    /// Six characters as JavaScript counts them (UTF-16 code units), as Firebase counts.
    @Test func aPasswordsLengthIsCountedInUTF16() async throws {
        try await IdentityTestServer().run { auth async throws in
            #expect(try await auth.post("accounts:signUp", #"{"email":"thumbs@example.com","password":"👍👍👍"}"#).status == .ok)
            #expect(try await auth.post("accounts:signUp", #"{"email":"short@example.com","password":"12345"}"#).authError?.hasPrefix("WEAK_PASSWORD") == true)
        }
    }

    /// An account made by an email link has its address as a `password` provider (the SDKs' `providerData`).
    @Test func anEmailLinkAccountHasAPasswordProvider() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let code = try #require(
                try await auth.admin("accounts:sendOobCode", #"{"requestType":"EMAIL_SIGNIN","email":"link@example.com","returnOobLink":true}"#).string("oobCode")
            )
            let signedIn = try await auth.post("accounts:signInWithEmailLink", #"{"email":"link@example.com","oobCode":"\#(code)"}"#)
            let idToken = try #require(signedIn.string("idToken"))
            let user = try #require(try await auth.post("accounts:lookup", #"{"idToken":"\#(idToken)"}"#).json?["users"]?.arrayValue?.first)
            #expect(user["emailLinkSignin"] == .bool(true))
            #expect(user["providerUserInfo"]?.arrayValue?.first?["providerId"] == .string("password"))
            #expect(user["providerUserInfo"]?.arrayValue?.first?["email"] == .string("link@example.com"))
            #expect(user["lastRefreshAt"] != nil)
        }
    }

    /// `lastRefreshAt` is when a token was last issued: a sign-up, and each refresh.
    @Test func aRefreshMovesLastRefreshAt() async throws {
        try await IdentityTestServer().run { auth async throws in
            let anonymous = try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#)
            let idToken = try #require(anonymous.string("idToken"))
            func lastRefresh() async throws -> String? {
                try await auth.post("accounts:lookup", #"{"idToken":"\#(idToken)"}"#).json?["users"]?.arrayValue?.first?["lastRefreshAt"]?.stringValue
            }
            let first = try #require(try await lastRefresh())
            try await Task.sleep(for: .milliseconds(20))
            let refreshed = try await auth.send(
                .post, "/securetoken.googleapis.com/v1/token?key=\(IdentityClient.key)",
                "grant_type=refresh_token&refresh_token=\(try #require(anonymous.string("refreshToken")))",
                headers: [.contentType: "application/x-www-form-urlencoded"]
            )
            #expect(refreshed.status == .ok, "\(refreshed.body)")
            let second = try #require(try await lastRefresh())
            #expect(second > first, "\(first) then \(second)")
        }
    }
}
