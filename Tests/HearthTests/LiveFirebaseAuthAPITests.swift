import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// FirebaseAuth's calls that Firebase code ports with, against a live server in emulator mode: what a
/// sign-in reports (`additionalUserInfo`), completion forms and the errors they hand over (as
/// `NSError`s in Firebase's domain), email-link sign-in through a credential, the ID-token listener
/// and the sequences, unlinking a provider, and the parts of an action link.
@Suite struct LiveFirebaseAuthAPITests {
    /// The newest `oobLink` the server issued for `email` and `requestType` (the emulator's mailbox).
    static func link(_ url: String, email: String, requestType: String) async throws -> String {
        let base = try #require(URLComponents(string: url).map { "\($0.scheme!)://\($0.host!):\($0.port!)" })
        let (data, _) = try await URLSession.shared.data(from: try #require(URL(string: "\(base)/emulator/v1/projects/hearth/oobCodes")))
        let codes = try #require(try JSONValue(parsing: data)["oobCodes"]?.arrayValue)
        let match = codes.last { $0["email"]?.stringValue == email && $0["requestType"]?.stringValue == requestType }
        return try #require(match?["oobLink"]?.stringValue, "no \(requestType) link for \(email) in \(codes)")
    }

    /// Waits for a completion handler's values (it runs on the callback queue).
    static func completion<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) async -> T {
        await withCheckedContinuation { continuation in start { continuation.resume(returning: $0) } }
    }

    @Test func additionalUserInfoSaysWhetherTheSignInMadeTheAccount() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let created = try await auth.createUser(withEmail: "ada@example.com", password: "analytical")
            #expect(created.additionalUserInfo?.isNewUser == true)
            #expect(created.additionalUserInfo?.providerID == "password")
            #expect(created.credential == nil)
            try auth.signOut()
            let signedIn = try await auth.signIn(withEmail: "ada@example.com", password: "analytical")
            #expect(signedIn.additionalUserInfo?.isNewUser == false)
            #expect(signedIn.additionalUserInfo?.newUser() == false)
            try auth.signOut()
            #expect(try await auth.signInAnonymously().additionalUserInfo?.isNewUser == true)
        }
    }

    @Test func completionFormsHandOverResultsAndFirebaseStyleErrors() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let (result, _) = await Self.completion { done in
                auth.createUser(withEmail: "grace@example.com", password: "cobol-1959") { result, error in done((result?.user.uid, error as NSError?)) }
            }
            let uid = try #require(result)

            // The same email again: Firebase's domain, code, error name and the email in userInfo.
            let (_, taken) = await Self.completion { done in
                auth.createUser(withEmail: "grace@example.com", password: "another-one") { result, error in done((result, error as NSError?)) }
            }
            let error = try #require(taken)
            #expect(error.domain == AuthErrorDomain)
            #expect(AuthErrorCode(rawValue: error.code) == .emailAlreadyInUse)
            #expect(error.userInfo[AuthErrorUserInfoNameKey] as? String == "ERROR_EMAIL_ALREADY_IN_USE")
            #expect(error.userInfo[AuthErrorUserInfoEmailKey] as? String == "grace@example.com")

            let user = try #require(auth.currentUser)
            let token = await Self.completion { done in user.getIDToken { token, _ in done(token) } }
            #expect(token?.isEmpty == false)
            let changed = await Self.completion { done in user.updatePassword(to: "fortran-1957") { done($0 as NSError?) } }
            #expect(changed == nil)
            let reloaded = await Self.completion { done in user.reload { done($0 as NSError?) } }
            #expect(reloaded == nil)
            try auth.signOut()

            let (_, wrong) = await Self.completion { done in
                auth.signIn(withEmail: "grace@example.com", password: "cobol-1959") { result, error in done((result, error as NSError?)) }
            }
            #expect([.wrongPassword, .invalidCredential].contains(wrong.flatMap { AuthErrorCode(rawValue: $0.code) }))
            let signedIn = try await auth.signIn(withEmail: "grace@example.com", password: "fortran-1957").user
            #expect(signedIn.uid == uid)
            let deleted = await Self.completion { done in signedIn.delete { done($0 as NSError?) } }
            #expect(deleted == nil)
            #expect(auth.currentUser == nil)
            await #expect(throws: AuthError.self) { try await auth.signIn(withEmail: "grace@example.com", password: "fortran-1957") }
        }
    }

    @Test func anEmailLinkSignsInAndReauthenticatesThroughACredential() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let settings = ActionCodeSettings()
            settings.url = URL(string: "http://127.0.0.1/finish")
            settings.handleCodeInApp = true
            try await auth.sendSignInLink(toEmail: "katherine@example.com", actionCodeSettings: settings)
            let link = try await Self.link(url, email: "katherine@example.com", requestType: "EMAIL_SIGNIN")
            #expect(auth.isSignIn(withEmailLink: link))
            #expect(!auth.isSignIn(withEmailLink: "https://example.com/?mode=resetPassword&oobCode=x"))
            let action = try #require(ActionCodeURL(link: link))
            #expect(action.operation == .emailLink)
            #expect(action.code?.isEmpty == false)

            let result = try await auth.signIn(with: EmailAuthProvider.credential(withEmail: "katherine@example.com", link: link))
            #expect(result.additionalUserInfo?.isNewUser == true)
            #expect(result.user.email == "katherine@example.com" && result.user.isEmailVerified)

            // A second link re-authenticates the same user; a used link no longer does.
            try await auth.sendSignInLink(toEmail: "katherine@example.com", actionCodeSettings: settings)
            let second = try await Self.link(url, email: "katherine@example.com", requestType: "EMAIL_SIGNIN")
            try await result.user.reauthenticate(with: EmailAuthProvider.credential(withEmail: "katherine@example.com", link: second))
            #expect(auth.currentUser?.uid == result.user.uid)
            await #expect(throws: AuthError.self) {
                try await result.user.reauthenticate(with: EmailAuthProvider.credential(withEmail: "katherine@example.com", link: second))
            }
        }
    }

    @Test func theIDTokenListenerAndTheSequencesHearSignInRefreshAndSignOut() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let heard = Mutex<[String]>([])
            let handle = auth.addIDTokenDidChangeListener { _, user in heard.withLock { $0.append(user?.uid ?? "nobody") } }
            let states = Task { () -> [String] in
                var seen: [String] = []
                for await user in auth.authStateChanges {
                    seen.append(user?.uid ?? "nobody")
                    if seen.count == 3 { break }
                }
                return seen
            }
            await waitUntil { heard.withLock { $0 } == ["nobody"] }
            let user = try await auth.createUser(withEmail: "mary@example.com", password: "jackson-1958").user
            await waitUntil { heard.withLock { $0 } == ["nobody", user.uid] }
            _ = try await user.getIDToken(forcingRefresh: true)
            await waitUntil { heard.withLock { $0 } == ["nobody", user.uid, user.uid] }
            try auth.signOut()
            await waitUntil { heard.withLock { $0 }.last == "nobody" }
            #expect(heard.withLock { $0 } == ["nobody", user.uid, user.uid, "nobody"])
            #expect(await states.value == ["nobody", user.uid, "nobody"])
            auth.removeIDTokenDidChangeListener(handle)
            _ = try await auth.signInAnonymously()
            try await Task.sleep(for: .milliseconds(100))
            #expect(heard.withLock { $0.count } == 4, "a removed listener hears nothing")
        }
    }

    @Test func unlinkingThePasswordProviderRemovesIt() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            let user = try await auth.createUser(withEmail: "dorothy@example.com", password: "vaughan-1949").user
            #expect(user.providerData.map(\.providerID) == ["password"])
            try await user.unlink(fromProvider: EmailAuthProviderID)
            #expect(user.providerData.isEmpty)
            do {
                try await user.unlink(fromProvider: EmailAuthProviderID)
                Issue.record("unlinking a provider the user lacks succeeded")
            } catch {
                #expect(AuthErrorCode(rawValue: (error as NSError).code) == .noSuchProvider)
            }
        }
    }

    @Test func anActionLinkParsesIntoItsParts() throws {
        let link = "https://demo.example.com/__/auth/action?mode=resetPassword&oobCode=abc123&apiKey=key&lang=fr"
            + "&continueUrl=https%3A%2F%2Fapp.example.com%2Fdone"
        let action = try #require(ActionCodeURL(link: link))
        #expect(action.operation == .passwordReset)
        #expect(action.code == "abc123" && action.apiKey == "key" && action.languageCode == "fr")
        #expect(action.continueURL == URL(string: "https://app.example.com/done"))
        // A Dynamic Link wrapping the action link reads through it.
        let wrapped = "https://app.page.link/?link=" + (link.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        #expect(ActionCodeURL(link: wrapped)?.code == "abc123")
        #expect(ActionCodeURL(link: "https://example.com/?mode=verifyEmail")?.operation == .verifyEmail)
        #expect(ActionCodeURL(link: "https://example.com/?mode=verifyEmail")?.code == nil)
    }
}
