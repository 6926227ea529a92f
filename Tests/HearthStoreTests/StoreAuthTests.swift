import Hearth
import HearthStore
import HearthStoreTesting
import HearthTestSupport
import Testing

/// The store's auth flows against a live server's identity service: each dispatches its success
/// action, or `UserAuthFailed` whose error names the flow and wraps the Auth client's error.
@MainActor
@Suite struct StoreAuthTests {
    static let email = "ada@example.com"
    static let password = "correct horse"

    /// Signs up through the store and asserts both actions; returns the new user's id.
    private func signUp(_ store: TestStore<ChatState>, _ auth: Auth, email: String = email) async throws -> String {
        store.store.signUp(email: email, password: Self.password, using: auth)
        let signedUp = try #require(await store.receive(UserSignedUp.self, where: { $0.email == email }))
        await store.receive(UserLoggedIn(userID: signedUp.userID, email: email)) {
            $0.userID = signedUp.userID
            $0.email = email
            $0.authError = nil
        }
        #expect(auth.currentUser?.uid == signedUp.userID)
        return signedUp.userID
    }

    @Test func signUpLogsInAndASecondSignUpWithTheSameEmailFails() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            _ = try await signUp(store, auth)

            store.store.signUp(email: Self.email, password: "another password", using: auth)
            await store.receive(UserAuthFailed.self, where: { $0.error.code == .signUp && $0.error.underlying?.code == .emailAlreadyInUse }) {
                $0.authError = $1.error
            }
            store.store.signUp(email: "new@example.com", password: "123", using: auth)
            await store.receive(UserAuthFailed.self, where: { $0.error.code == .signUp && $0.error.underlying?.code == .weakPassword }) {
                $0.authError = $1.error
            }
            await store.finish()
        }
    }

    @Test func logInSucceedsWithTheRightPasswordAndFailsWithAWrongOne() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let uid = try await auth.createUser(withEmail: Self.email, password: Self.password).user.uid
            try auth.signOut()
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)

            store.store.logIn(email: Self.email, password: "wrong password", using: auth)
            await store.receive(UserAuthFailed.self, where: {
                $0.error.code == .logIn && [.wrongPassword, .invalidCredential].contains($0.error.underlying?.code)
            }) { $0.authError = $1.error }
            #expect(auth.currentUser == nil)

            store.store.logIn(email: Self.email, password: Self.password, using: auth)
            await store.receive(UserLoggedIn(userID: uid, email: Self.email)) {
                $0.userID = uid
                $0.email = Self.email
                $0.authError = nil
            }
            await store.finish()
        }
    }

    @Test func identifyingTheUserNeedsSomeoneSignedIn() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.identifyUser(using: auth)
            await store.receive(UserAuthFailed(error: AuthFlowError(.missingUserID))) { $0.authError = AuthFlowError(.missingUserID) }

            let uid = try await auth.createUser(withEmail: Self.email, password: Self.password).user.uid
            store.store.identifyUser(using: auth)
            await store.receive(UserIdentified(userID: uid)) { $0.userID = uid }
            await store.finish()
        }
    }

    @Test func changePasswordTakesEffectAndAWeakOneIsRefused() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.changePassword(to: "new password", using: auth)
            await store.receive(UserAuthFailed(error: AuthFlowError(.missingUserID))) { $0.authError = AuthFlowError(.missingUserID) }

            let uid = try await signUp(store, auth)
            store.store.changePassword(to: "123", using: auth)
            await store.receive(UserAuthFailed.self, where: { $0.error.code == .changePassword && $0.error.underlying?.code == .weakPassword }) {
                $0.authError = $1.error
            }
            store.store.changePassword(to: "new password", using: auth)
            await store.receive(PasswordChanged()) { $0.passwordChanges = 1 }

            // The new password is the one that works now.
            store.store.logOut(using: auth)
            await store.receive(UserLoggedOut()) {
                $0.userID = nil
                $0.email = nil
            }
            #expect((try? await auth.signIn(withEmail: Self.email, password: Self.password)) == nil)
            store.store.logIn(email: Self.email, password: "new password", using: auth)
            await store.receive(UserLoggedIn(userID: uid, email: Self.email)) {
                $0.userID = uid
                $0.email = Self.email
                $0.authError = nil
            }
            await store.finish()
        }
    }

    @Test func changeEmailTakesEffectAndAnInvalidOneIsRefused() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.changeEmail(to: "ada@lovelace.org", using: auth)
            await store.receive(UserAuthFailed(error: AuthFlowError(.missingUserID))) { $0.authError = AuthFlowError(.missingUserID) }

            let uid = try await signUp(store, auth)
            store.store.changeEmail(to: "not an email", using: auth)
            await store.receive(UserAuthFailed.self, where: { $0.error.code == .changeEmail && $0.error.underlying?.code == .invalidEmail }) {
                $0.authError = $1.error
            }
            store.store.changeEmail(to: "ada@lovelace.org", using: auth)
            await store.receive(EmailChanged(email: "ada@lovelace.org")) { $0.email = "ada@lovelace.org" }
            #expect(auth.currentUser?.email == "ada@lovelace.org")

            // The account answers to the new address only.
            store.store.logOut(using: auth)
            await store.receive(UserLoggedOut()) {
                $0.userID = nil
                $0.email = nil
            }
            store.store.logIn(email: "ada@lovelace.org", password: Self.password, using: auth)
            await store.receive(UserLoggedIn(userID: uid, email: "ada@lovelace.org")) {
                $0.userID = uid
                $0.email = "ada@lovelace.org"
                $0.authError = nil
            }
            await store.finish()
        }
    }

    @Test func changingThePasswordReauthenticatesWithTheCurrentOneFirst() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            let uid = try await signUp(store, auth)

            // A wrong current password changes nothing.
            store.store.changePassword(from: "not my password", to: "new password", using: auth)
            await store.receive(UserAuthFailed.self, where: {
                $0.error.code == .changePassword && [.wrongPassword, .invalidCredential].contains($0.error.underlying?.code)
            }) { $0.authError = $1.error }
            #expect((try? await auth.signIn(withEmail: Self.email, password: Self.password))?.user.uid == uid)

            store.store.changePassword(from: Self.password, to: "new password", using: auth)
            await store.receive(PasswordChanged()) { $0.passwordChanges = 1 }
            #expect(auth.currentUser?.uid == uid)
            try auth.signOut()
            #expect((try? await auth.signIn(withEmail: Self.email, password: Self.password)) == nil)
            #expect((try? await auth.signIn(withEmail: Self.email, password: "new password"))?.user.uid == uid)
            await store.finish()
        }
    }

    @Test func changingTheEmailReauthenticatesWithThePasswordFirst() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            let uid = try await signUp(store, auth)

            store.store.changeEmail(to: "ada@lovelace.org", password: "not my password", using: auth)
            await store.receive(UserAuthFailed.self, where: {
                $0.error.code == .changeEmail && [.wrongPassword, .invalidCredential].contains($0.error.underlying?.code)
            }) { $0.authError = $1.error }
            #expect(auth.currentUser?.email == Self.email)

            store.store.changeEmail(to: "ada@lovelace.org", password: Self.password, using: auth)
            await store.receive(EmailChanged(email: "ada@lovelace.org")) { $0.email = "ada@lovelace.org" }
            try auth.signOut()
            #expect((try? await auth.signIn(withEmail: "ada@lovelace.org", password: Self.password))?.user.uid == uid)
            await store.finish()
        }
    }

    @Test func passwordResetIsSentForAKnownEmailOnly() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            try await auth.createUser(withEmail: Self.email, password: Self.password)
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.resetPassword(email: Self.email, using: auth)
            await store.receive(PasswordResetSent(email: Self.email)) { $0.resetEmailsSent = [Self.email] }
            store.store.resetPassword(email: "nobody@example.com", using: auth)
            await store.receive(UserAuthFailed.self, where: { $0.error.code == .resetPassword && $0.error.underlying?.code == .userNotFound }) {
                $0.authError = $1.error
            }
            await store.finish()
        }
    }

    @Test func logOutSignsTheUserOut() async throws {
        try await TestServer.run { server in
            let auth = Auth.auth(database: try server.client())
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            _ = try await signUp(store, auth)
            store.store.logOut(using: auth)
            await store.receive(UserLoggedOut()) {
                $0.userID = nil
                $0.email = nil
            }
            #expect(auth.currentUser == nil)
            await store.finish()
        }
    }

    @Test func anUnreachableServerIsALogInFailureWithANetworkError() async throws {
        let auth = Auth.auth(database: try Database(url: "http://127.0.0.1:1?ns=demo"))
        let store = TestStore(initialState: ChatState(), reducer: chatReducer)
        store.store.logIn(email: Self.email, password: Self.password, using: auth)
        await store.receive(UserAuthFailed.self, where: { $0.error.code == .logIn && $0.error.underlying?.code == .networkError }) {
            $0.authError = $1.error
        }
        await store.finish()
    }
}
