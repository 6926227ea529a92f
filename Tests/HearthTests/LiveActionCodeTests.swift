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

    /// An email change mails the address left an undo: `checkActionCode` tells what it restores (as
    /// FirebaseAuth's `ActionCodeInfo` for `.recoverEmail`), `applyActionCode` moves the account back.
    @Test func anEmailChangeIsUndoneFromTheAddressItLeft() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let user = try await auth.createUser(withEmail: "ada@example.com", password: "correct horse").user
            // Only a verified address gets an undo.
            try await user.sendEmailVerification()
            try await auth.applyActionCode(try await Self.code(url, email: "ada@example.com", requestType: "VERIFY_EMAIL"))
            try await user.sendEmailVerification(beforeUpdatingEmail: "eve@example.com")
            try await auth.applyActionCode(try await Self.code(url, email: "eve@example.com", requestType: "VERIFY_AND_CHANGE_EMAIL"))
            let code = try await Self.code(url, email: "ada@example.com", requestType: "RECOVER_EMAIL")
            let info = try await auth.checkActionCode(code)
            #expect(info.operation == .recoverEmail)
            #expect(info.email == "eve@example.com" && info.previousEmail == "ada@example.com")
            try await auth.applyActionCode(code)
            try? auth.signOut()
            // The password is cleared by the undo (whoever moved the account may have set it): a reset.
            await #expect(throws: AuthError.self) { try await auth.signIn(withEmail: "ada@example.com", password: "correct horse") }
            try await auth.sendPasswordReset(withEmail: "ada@example.com")
            try await auth.confirmPasswordReset(withCode: try await Self.code(url, email: "ada@example.com", requestType: "PASSWORD_RESET"), newPassword: "mine again")
            #expect(try await auth.signIn(withEmail: "ada@example.com", password: "mine again").user.uid == user.uid)
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

/// FirebaseAuth's credentials against a live server: linking an anonymous user to an email keeps its
/// uid and data, re-authentication checks the credential is the user's, `signIn(with:)`, and the
/// account's providers and times.
@Suite struct LiveCredentialTests {
    @Test func anAnonymousUserLinkedToAnEmailKeepsItsUidAndData() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let database = try makeClient(url)
            let auth = Auth.auth(database: database)
            let anonymous = try await auth.signInAnonymously().user
            #expect(anonymous.isAnonymous && anonymous.providerData.isEmpty)
            try await database.reference(withPath: "notes/\(anonymous.uid)").setValue("kept")
            let linked = try await anonymous.link(with: EmailAuthProvider.credential(withEmail: "ada@example.com", password: "correct horse")).user
            #expect(linked.uid == anonymous.uid && !linked.isAnonymous && linked.email == "ada@example.com")
            #expect(linked.providerData.map(\.providerID) == ["password"])
            #expect(linked.providerData.first?.email == "ada@example.com")
            // Linked twice: Firebase's error.
            do {
                _ = try await linked.link(with: EmailAuthProvider.credential(withEmail: "ada@example.com", password: "correct horse"))
                Issue.record("a second password credential was linked")
            } catch {
                #expect(AuthErrorCode(rawValue: (error as NSError).code) == .providerAlreadyLinked)
            }
            try auth.signOut()
            let again = try await auth.signIn(with: EmailAuthProvider.credential(withEmail: "ada@example.com", password: "correct horse")).user
            #expect(again.uid == anonymous.uid)
            #expect(try await database.reference(withPath: "notes/\(again.uid)").getData().value as? String == "kept")
            let metadata = again.metadata
            let created = try #require(metadata.creationDate)
            let lastSignIn = try #require(metadata.lastSignInDate)
            #expect(abs(created.timeIntervalSinceNow) < 300 && lastSignIn >= created)
        }
    }

    @Test func reauthenticationChecksTheCredentialIsTheUsers() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            try await auth.createUser(withEmail: "grace@example.com", password: "cobol-1959")
            try auth.signOut()
            let user = try await auth.createUser(withEmail: "ada@example.com", password: "correct horse").user
            let result = try await user.reauthenticate(with: EmailAuthProvider.credential(withEmail: "ada@example.com", password: "correct horse"))
            #expect(result.user.uid == user.uid)
            do {
                _ = try await user.reauthenticate(with: EmailAuthProvider.credential(withEmail: "grace@example.com", password: "cobol-1959"))
                Issue.record("another user's credential re-authenticated")
            } catch {
                #expect((error as? AuthError)?.code == .userMismatch)
            }
            do {
                _ = try await user.reauthenticate(with: EmailAuthProvider.credential(withEmail: "ada@example.com", password: "wrong password"))
                Issue.record("a wrong password re-authenticated")
            } catch {
                let code = (error as? AuthError)?.code
                #expect(code == .wrongPassword || code == .invalidCredential)
            }
            // Then the password change the seed apps make after re-authenticating.
            try await user.updatePassword(to: "new horse battery")
            try auth.signOut()
            #expect(try await auth.signIn(withEmail: "ada@example.com", password: "new horse battery").user.uid == user.uid)
        }
    }
}
