import Foundation
import HearthCore
import HearthIdentity
import HearthServer
import HearthSQLite
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
            // Without its address, it is no email-link account any more.
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","deleteProvider":["password"]}"#).status == .ok)
            let uid = try #require(user["localId"]?.stringValue)
            let after = try #require(try await auth.admin("accounts:lookup", #"{"localId":["\#(uid)"]}"#).json?["users"]?.arrayValue?.first)
            #expect(after["emailLinkSignin"] == nil && after["email"] == nil, "\(after)")
            #expect(after["providerUserInfo"]?.arrayValue?.isEmpty != false)
        }
    }

    /// `lastRefreshAt` is set when tokens are issued by a sign-up (an anonymous one too).
    @Test func aSignUpSetsLastRefreshAt() async throws {
        try await IdentityTestServer().run { auth async throws in
            let anonymous = try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#)
            let idToken = try #require(anonymous.string("idToken"))
            let user = try await auth.post("accounts:lookup", #"{"idToken":"\#(idToken)"}"#).json?["users"]?.arrayValue?.first
            #expect(user?["lastRefreshAt"]?.stringValue != nil)
        }
    }

    /// A token refresh moves `lastRefreshAt` (firebase-admin's `last_refresh_timestamp`), written in a
    /// batch shortly after, in place in the stored record (SQLite's), which stays whole.
    @Test func aRefreshMovesLastRefreshAt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-refreshed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await IdentityTestServer().run(users: try SQLiteUserStore(directory: directory)) { auth async throws in
            let created = try await auth.signUp("refresh@example.com")
            let localId = try #require(created["localId"]?.stringValue)
            func lastRefresh() async throws -> String? {
                try await auth.admin("accounts:lookup", #"{"localId":["\#(localId)"]}"#).json?["users"]?.arrayValue?.first?["lastRefreshAt"]?.stringValue
            }
            let atSignUp = try #require(try await lastRefresh())
            try await Task.sleep(for: .milliseconds(1100))
            let refreshed = try await auth.send(
                .post, "/securetoken.googleapis.com/v1/token?key=\(IdentityClient.key)",
                "grant_type=refresh_token&refresh_token=\(try #require(created["refreshToken"]?.stringValue))",
                headers: [.contentType: "application/x-www-form-urlencoded"]
            )
            #expect(refreshed.status == .ok)
            var moved: String?
            for _ in 0..<100 where moved == nil {
                if let now = try await lastRefresh(), now > atSignUp { moved = now } else { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(moved != nil, "lastRefreshAt stayed \(atSignUp)")
            // The record is whole: the account signs in and keeps its address and password.
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"refresh@example.com","password":"secret123"}"#).status == .ok)
        }
    }

    /// A verified change to a taken address answers as one to a free address, and counts against the
    /// recipient's limit alike (else the limit would tell which addresses are taken).
    @Test func aChangeToATakenAddressCountsAsAnyOther() async throws {
        try await IdentityTestServer { $0.identity.accountEmailsPerRecipientLimit = 2 }.run { auth async throws in
            _ = try await auth.signUp("victim@example.com")
            let user = try await auth.signUp("asker@example.com")
            let token = try #require(user["idToken"]?.stringValue)
            var answers: [String] = []
            for address in ["victim@example.com", "nobody@example.com"] {
                for _ in 0..<3 {
                    let reply = try await auth.post(
                        "accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(token)","newEmail":"\#(address)"}"#
                    )
                    answers.append(reply.status == .ok ? "ok" : reply.authError ?? "?")
                }
            }
            #expect(answers[0..<3] == answers[3..<6], "\(answers)")
            #expect(answers.last != "ok", "\(answers)")
        }
    }
}
