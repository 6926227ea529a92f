import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Hearth
import HearthCore
import Testing

/// FirebaseAuth's calls for account emails' codes and ID token results, against a live server (in
/// emulator mode, whose `oobCodes` listing stands in for the mailbox): a password reset checked,
/// verified and confirmed; an email verification sent and applied; the token's claims.
@Suite struct LiveActionCodeTests {
    /// The newest code the server issued for `email` and `requestType`.
    static func code(_ url: String, email: String, requestType: String) async throws -> String {
        let base = try #require(URLComponents(string: url).map { "\($0.scheme!)://\($0.host!):\($0.port!)" })
        let (data, _) = try await URLSession.shared.data(from: try #require(URL(string: "\(base)/emulator/v1/projects/hearth/oobCodes")))
        let codes = try #require(try JSONValue(parsing: data)["oobCodes"]?.arrayValue)
        let match = codes.last { $0["email"]?.stringValue == email && $0["requestType"]?.stringValue == requestType }
        return try #require(match?["oobCode"]?.stringValue, "no \(requestType) code for \(email) in \(codes)")
    }

    @Test func aPasswordResetCodeIsCheckedVerifiedAndConfirmed() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            try await auth.createUser(withEmail: "ada@example.com", password: "first-password")
            try auth.signOut()
            try await auth.sendPasswordReset(withEmail: "ada@example.com")
            let code = try await Self.code(url, email: "ada@example.com", requestType: "PASSWORD_RESET")

            let info = try await auth.checkActionCode(code)
            #expect(info.operation == .passwordReset && info.email == "ada@example.com" && info.previousEmail == nil)
            #expect(try await auth.verifyPasswordResetCode(code) == "ada@example.com")
            try await auth.confirmPasswordReset(withCode: code, newPassword: "second-password")
            // The code is used up; the new password signs in, the old one no longer does.
            do {
                try await auth.confirmPasswordReset(withCode: code, newPassword: "third-password")
                Issue.record("a used code was accepted again")
            } catch {
                #expect(AuthErrorCode(rawValue: (error as NSError).code) == .invalidActionCode)
            }
            #expect(try await auth.signIn(withEmail: "ada@example.com", password: "second-password").user.email == "ada@example.com")
            await #expect(throws: AuthError.self) { try await auth.signIn(withEmail: "ada@example.com", password: "first-password") }
        }
    }

    @Test func anEmailVerificationIsSentAndApplied() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let user = try await auth.createUser(withEmail: "grace@example.com", password: "cobol-1959").user
            #expect(!user.isEmailVerified)
            try await user.sendEmailVerification()
            let code = try await Self.code(url, email: "grace@example.com", requestType: "VERIFY_EMAIL")
            #expect(try await auth.checkActionCode(code).operation == .verifyEmail)
            // A verification code is not a password-reset code.
            await #expect(throws: AuthError.self) { try await auth.verifyPasswordResetCode(code) }
            try await auth.applyActionCode(code)
            try await user.reload()
            #expect(user.isEmailVerified)
        }
    }

    @Test func theIDTokenResultCarriesItsTimesProviderAndClaims() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let user = try await auth.createUser(withEmail: "ada@example.com", password: "correct horse").user
            let result = try await user.getIDTokenResult()
            #expect(result.token == (try await user.getIDToken()))
            #expect(result.signInProvider == "password")
            #expect(result.claims["email"] as? String == "ada@example.com")
            #expect(result.claims["user_id"] as? String == user.uid)
            #expect(abs(result.expirationDate.timeIntervalSince(result.issuedAtDate) - 3600) < 1)
            #expect(result.authDate <= result.issuedAtDate && abs(result.issuedAtDate.timeIntervalSinceNow) < 300)
            let refreshed = try await user.getIDTokenResult(forcingRefresh: true)
            #expect(refreshed.signInProvider == "password" && refreshed.claims["sub"] as? String == user.uid)
            let anonymous = try await auth.signInAnonymously().user
            #expect(try await anonymous.getIDTokenResult().signInProvider == "anonymous")
        }
    }
}
