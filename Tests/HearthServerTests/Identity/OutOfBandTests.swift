import Foundation
import HearthAccess
import HearthCore
import HearthIdentity
import HearthStorage
@testable import HearthServer
import HTTPTypes
import Testing

/// Password reset, email verification and email change by out-of-band code: codes issued by
/// `accounts:sendOobCode`, listed by the emulator hook or returned to the admin, single-use, and the
/// account changes they make.
@Suite struct OutOfBandTests {
    static let codesPath = "/emulator/v1/projects/\(IdentityTestServer.project)/oobCodes"

    /// The pending codes the emulator hook lists: (email, requestType, oobCode).
    static func pending(_ auth: IdentityClient) async throws -> [(email: String, type: String, code: String)] {
        let reply = try await auth.send(.get, codesPath, nil)
        #expect(reply.status == .ok, "\(reply.body)")
        guard case .array(let codes)? = reply.json?["oobCodes"] else { return [] }
        return codes.compactMap { code in
            guard let email = code["email"]?.stringValue, let type = code["requestType"]?.stringValue, let value = code["oobCode"]?.stringValue
            else { return nil }
            return (email, type, value)
        }
    }

    @Test func sentCodesGoToTheOutboxWithALinkToTheActionPage() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer { $0.identity.authorizedDomains = ["app.example"] }.run(users: users) { auth async throws in
            let account = try await auth.signUp("grace@example.com")
            let idToken = try #require(account["idToken"]?.stringValue)
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"grace@example.com","continueUrl":"https://app.example/after"}"#).status == .ok)
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_EMAIL","idToken":"\#(idToken)"}"#).status == .ok)
            // The admin's generated link is not mailed.
            #expect(try await auth.admin("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"grace@example.com","returnOobLink":true}"#).status == .ok)
            let outbox = try await users.outbox(project: IdentityTestServer.project, limit: 10)
            #expect(outbox.map(\.requestType) == ["VERIFY_EMAIL", "PASSWORD_RESET"])
            let reset = try #require(outbox.last)
            #expect(reset.to == "grace@example.com")
            #expect(reset.subject == "Reset your password for \(IdentityTestServer.project)")
            #expect(reset.link.contains("/__/auth/action?mode=resetPassword&oobCode="))
            #expect(reset.link.contains("&apiKey=\(IdentityClient.key)"))
            #expect(reset.link.hasSuffix("&continueUrl=https%3A%2F%2Fapp.example%2Fafter"))
            #expect(reset.body.contains(reset.link))
            // The link's code works once: it sets the password.
            let code = try #require(URLComponents(string: reset.link)?.queryItems?.first { $0.name == "oobCode" }?.value)
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)","newPassword":"brand-new-1"}"#).status == .ok)
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"grace@example.com","password":"brand-new-1"}"#).status == .ok)
        }
    }

    @Test func aPasswordResetCodeChangesThePasswordOnceAndEndsOldSessions() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let account = try await auth.signUp("ada@example.com", "first-password")
            let oldRefresh = try #require(account["refreshToken"]?.stringValue)
            let sent = try await auth.post("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"Ada@example.com"}"#)
            #expect(sent.status == .ok)
            #expect(sent.string("email") == "ada@example.com")
            #expect(sent.json?["oobLink"] == nil, "a client never gets the link")
            let codes = try await Self.pending(auth)
            #expect(codes.map(\.type) == ["PASSWORD_RESET"])
            let code = try #require(codes.first?.code)

            // Checking a code does not use it.
            let check = try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)"}"#)
            #expect(check.string("requestType") == "PASSWORD_RESET")
            #expect(check.string("email") == "ada@example.com")
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)","newPassword":"123"}"#).authError
                == "WEAK_PASSWORD : Password should be at least 6 characters")
            let reset = try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)","newPassword":"second-password"}"#)
            #expect(reset.status == .ok, "\(reset.body)")
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)","newPassword":"third-password"}"#).authError == "INVALID_OOB_CODE")
            #expect(try await Self.pending(auth).isEmpty)

            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"ada@example.com","password":"first-password"}"#).authError == "INVALID_PASSWORD")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"ada@example.com","password":"second-password"}"#).status == .ok)
            // The sessions from before the reset are over.
            let refresh = try await auth.send(
                .post, "/securetoken.googleapis.com/v1/token?key=\(IdentityClient.key)", "grant_type=refresh_token&refresh_token=\(oldRefresh)",
                headers: [.contentType: "application/x-www-form-urlencoded"]
            )
            #expect(refresh.authError == "TOKEN_EXPIRED")
        }
    }

    @Test func verifyingAndChangingAnEmailByCode() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let account = try await auth.signUp("grace@example.com")
            let idToken = try #require(account["idToken"]?.stringValue)
            try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_EMAIL","idToken":"\#(idToken)"}"#)
            let verify = try #require(try await Self.pending(auth).first { $0.type == "VERIFY_EMAIL" })
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(verify.code)","newPassword":"whatever1"}"#).authError == "INVALID_OOB_CODE")
            let verified = try await auth.post("accounts:update", #"{"oobCode":"\#(verify.code)"}"#)
            #expect(verified.json?["emailVerified"] == .bool(true), "\(verified.body)")

            try await auth.signUp("taken@example.com")
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(idToken)","newEmail":"taken@example.com"}"#).authError == "EMAIL_EXISTS")
            try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(idToken)","newEmail":"hopper@example.com"}"#)
            let change = try #require(try await Self.pending(auth).first { $0.type == "VERIFY_AND_CHANGE_EMAIL" })
            #expect(change.email == "hopper@example.com")
            // Checking it tells both addresses (the JS SDK's checkActionCode needs `newEmail`).
            let check = try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(change.code)"}"#)
            #expect(check.string("email") == "grace@example.com" && check.string("newEmail") == "hopper@example.com", "\(check.body)")
            // A password change in a later second (it ends earlier sessions) leaves the pending change
            // code working, as the Auth emulator does.
            try await Task.sleep(for: .milliseconds(1100))
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","password":"another-one-1"}"#).status == .ok)
            let changed = try await auth.post("accounts:update", #"{"oobCode":"\#(change.code)"}"#)
            #expect(changed.string("email") == "hopper@example.com", "\(changed.body)")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"hopper@example.com","password":"another-one-1"}"#).status == .ok)
            #expect(try await auth.post("accounts:update", #"{"oobCode":"not-a-code"}"#).authError == "INVALID_OOB_CODE")
        }
    }

    /// A code sent to an address does nothing once the account has moved to another: a reset (which
    /// whoever held the old mailbox could use) and an email change.
    @Test func codesForAnAddressTheAccountLeftApplyNoMore() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            let account = try await auth.signUp("old@example.com", "first-password")
            let idToken = try #require(account["idToken"]?.stringValue)
            try await auth.post("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"old@example.com"}"#)
            try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(idToken)","newEmail":"third@example.com"}"#)
            let codes = try await Self.pending(auth)
            let reset = try #require(codes.first { $0.type == "PASSWORD_RESET" })
            let change = try #require(codes.first { $0.type == "VERIFY_AND_CHANGE_EMAIL" })
            let moved = try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","email":"new@example.com"}"#)
            #expect(moved.status == .ok, "\(moved.body)")
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(reset.code)","newPassword":"attacker-password"}"#).authError == "INVALID_OOB_CODE")
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(change.code)"}"#).authError == "INVALID_OOB_CODE")
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"new@example.com","password":"first-password"}"#).status == .ok)
        }
    }

    /// An app's requests for account emails are limited per recipient (nobody floods someone's inbox
    /// through the server) and per client address; the admin's are not.
    @Test func accountEmailsAreLimitedPerRecipientAndPerAddress() async throws {
        let server = IdentityTestServer {
            $0.identity.accountEmailsPerRecipientLimit = 2
            $0.identity.accountEmailsPerAddressLimit = 3
        }
        try await server.run { auth async throws in
            try await auth.signUp("inbox@example.com")
            try await auth.signUp("other@example.com")
            let reset = #"{"requestType":"PASSWORD_RESET","email":"inbox@example.com"}"#
            #expect(try await auth.post("accounts:sendOobCode", reset).status == .ok)
            #expect(try await auth.post("accounts:sendOobCode", reset).status == .ok)
            #expect(try await auth.post("accounts:sendOobCode", reset).authError == "RESET_PASSWORD_EXCEED_LIMIT")
            // The admin is not limited.
            #expect(try await auth.send(.post, "/identitytoolkit.googleapis.com/v1/accounts:sendOobCode", reset, headers: TestServer.admin).status == .ok)
            // Another recipient, once the client's address has asked three times (refusals count).
            let other = #"{"requestType":"PASSWORD_RESET","email":"other@example.com"}"#
            #expect(try await auth.post("accounts:sendOobCode", other).authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
        }
        // An address without an account reaches the per-recipient limit alike: the limit does not tell
        // whether an account exists (enumeration protection is on by default).
        try await IdentityTestServer { $0.identity.accountEmailsPerRecipientLimit = 2 }.run { auth async throws in
            let nobody = #"{"requestType":"PASSWORD_RESET","email":"nobody@example.com"}"#
            #expect(try await auth.post("accounts:sendOobCode", nobody).status == .ok)
            #expect(try await auth.post("accounts:sendOobCode", nobody).status == .ok)
            #expect(try await auth.post("accounts:sendOobCode", nobody).authError == "RESET_PASSWORD_EXCEED_LIMIT")
        }
    }

    @Test func theAdminGetsTheLinkAndUnknownAddressesFollowEnumerationProtection() async throws {
        try await IdentityTestServer().run { auth async throws in
            try await auth.signUp("alan@example.com")
            let link = try await auth.send(
                .post, "/identitytoolkit.googleapis.com/v1/accounts:sendOobCode",
                #"{"requestType":"PASSWORD_RESET","email":"alan@example.com","returnOobLink":true}"#, headers: TestServer.admin
            )
            #expect(link.status == .ok, "\(link.body)")
            let oobLink = try #require(link.string("oobLink"))
            #expect(oobLink.contains("mode=resetPassword") && oobLink.contains("oobCode="))
            // Default mode protects against enumeration: an unknown address is not revealed to clients.
            let unknown = try await auth.post("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"nobody@example.com"}"#)
            #expect(unknown.status == .ok)
            // And there is no emulator hook outside emulator mode.
            #expect(try await auth.send(.get, Self.codesPath, nil).status == .notFound)
        }
    }
}

/// Email-link (passwordless) sign-in: `sendOobCode` with `EMAIL_SIGNIN`, then
/// `accounts:signInWithEmailLink`.
@Suite struct EmailLinkSignInTests {
    @Test func aLinkSignsInANewAddressOnceAndVerifiesIt() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer(emulator: true) { $0.identity.authorizedDomains = ["app.example"] }.run(users: users) { auth async throws in
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"EMAIL_SIGNIN","email":"New@Example.com","continueUrl":"https://app.example/finish"}"#).status == .ok)
            let code = try #require(try await OutOfBandTests.pending(auth).first { $0.type == "EMAIL_SIGNIN" })
            #expect(code.email == "new@example.com")
            let mail = try #require(try await users.outbox(project: IdentityTestServer.project, limit: 1).first)
            #expect(mail.link.contains("mode=signIn&oobCode=\(code.code)") && mail.link.contains("continueUrl=https%3A%2F%2Fapp.example%2Ffinish"))
            // Checking the code does not tell its address: the sign-in's check that the client knows it
            // would be worth nothing.
            let check = try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code.code)"}"#)
            #expect(check.string("requestType") == "EMAIL_SIGNIN" && check.json?["email"] == nil, "\(check.body)")
            // The code is for that address only, and a verification-by-code call does not use it up.
            #expect(try await auth.post("accounts:signInWithEmailLink", #"{"email":"other@example.com","oobCode":"\#(code.code)"}"#).authError?.hasPrefix("INVALID_EMAIL") == true)
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(code.code)"}"#).authError == "INVALID_OOB_CODE")
            let signedIn = try await auth.post("accounts:signInWithEmailLink", #"{"email":"new@example.com","oobCode":"\#(code.code)"}"#)
            #expect(signedIn.status == .ok, "\(signedIn.body)")
            #expect(signedIn.string("kind") == "identitytoolkit#EmailLinkSigninResponse")
            #expect(signedIn.json?["isNewUser"] == .bool(true))
            let claims = try jwtParts(try #require(signedIn.string("idToken"))).payload
            #expect(claims["email"] == .string("new@example.com") && claims["email_verified"] == .bool(true))
            #expect(claims["firebase"]?["sign_in_provider"] == .string("password"))
            #expect(try await auth.post("accounts:signInWithEmailLink", #"{"email":"new@example.com","oobCode":"\#(code.code)"}"#).authError == "INVALID_OOB_CODE")
        }
    }

    @Test func anExistingUserKeepsItsAccountAndTheDefaultModeGivesLinksToTheAdminOnly() async throws {
        try await IdentityTestServer().run { auth async throws in
            let account = try await auth.signUp("known@example.com")
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"EMAIL_SIGNIN","email":"known@example.com"}"#).authError == "OPERATION_NOT_ALLOWED")
            let generated = try await auth.admin("accounts:sendOobCode", #"{"requestType":"EMAIL_SIGNIN","email":"known@example.com","returnOobLink":true}"#)
            let code = try #require(generated.string("oobCode"))
            #expect(generated.string("oobLink")?.contains("mode=signIn") == true)
            let signedIn = try await auth.post("accounts:signInWithEmailLink", #"{"email":"known@example.com","oobCode":"\#(code)"}"#)
            #expect(signedIn.string("localId") == account["localId"]?.stringValue)
            #expect(signedIn.json?["isNewUser"] == .bool(false))
            let looked = try await auth.admin("accounts:lookup", #"{"email":["known@example.com"]}"#)
            #expect(looked.json?["users"]?.arrayValue?.first?["emailVerified"] == .bool(true))
        }
    }
}
