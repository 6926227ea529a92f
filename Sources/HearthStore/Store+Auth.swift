import Hearth

// Auth flows: each calls the Auth client and dispatches a success action or `UserAuthFailed` with
// an `AuthFlowError` naming the flow and wrapping the client's `AuthError`.

extension Store {
    /// Dispatches ``UserIdentified`` with the signed-in user's id, or ``UserAuthFailed`` with
    /// ``AuthFlowError/Code/missingUserID`` when nobody is signed in (at launch, say).
    ///
    /// ```swift
    /// store.identifyUser(using: Auth.auth())
    /// ```
    public func identifyUser(using auth: Auth) {
        if let user = auth.currentUser {
            dispatch(UserIdentified(userID: user.uid))
        } else {
            dispatch(UserAuthFailed(error: AuthFlowError(.missingUserID)))
        }
    }

    /// Logs in with an email and password; dispatches ``UserLoggedIn`` or ``UserAuthFailed`` with
    /// ``AuthFlowError/Code/logIn``.
    ///
    /// ```swift
    /// store.logIn(email: "ada@example.com", password: password, using: Auth.auth())
    /// ```
    @discardableResult
    public func logIn(email: String, password: String, using auth: Auth) -> Task<Void, Never> {
        run(Effect { store in
            do {
                let user = try await auth.signIn(withEmail: email, password: password).user
                store.dispatch(UserLoggedIn(userID: user.uid, email: user.email))
            } catch {
                store.dispatch(UserAuthFailed(error: AuthFlowError(.logIn, wrapping: error)))
            }
        })
    }

    /// Creates an account and logs in as it; dispatches ``UserSignedUp`` then ``UserLoggedIn``, or
    /// ``UserAuthFailed`` with ``AuthFlowError/Code/signUp``.
    ///
    /// ```swift
    /// store.signUp(email: "ada@example.com", password: password, using: Auth.auth())
    /// ```
    @discardableResult
    public func signUp(email: String, password: String, using auth: Auth) -> Task<Void, Never> {
        run(Effect { store in
            do {
                // The Auth client signs the new account in, as FirebaseAuth does: no second call.
                let user = try await auth.createUser(withEmail: email, password: password).user
                store.dispatch(UserSignedUp(userID: user.uid, email: email))
                store.dispatch(UserLoggedIn(userID: user.uid, email: user.email))
            } catch {
                store.dispatch(UserAuthFailed(error: AuthFlowError(.signUp, wrapping: error)))
            }
        })
    }

    /// Changes the signed-in user's password without re-authenticating (it needs a recent sign-in:
    /// prefer ``changePassword(from:to:using:)``); dispatches ``PasswordChanged`` or ``UserAuthFailed``
    /// (``AuthFlowError/Code/changePassword``, or ``AuthFlowError/Code/missingUserID``).
    @discardableResult
    public func changePassword(to password: String, using auth: Auth) -> Task<Void, Never> {
        run(Effect { store in
            guard let user = auth.currentUser else {
                return store.dispatch(UserAuthFailed(error: AuthFlowError(.missingUserID)))
            }
            do {
                try await user.updatePassword(to: password)
                store.dispatch(PasswordChanged())
            } catch {
                store.dispatch(UserAuthFailed(error: AuthFlowError(.changePassword, wrapping: error)))
            }
        })
    }

    /// Changes the signed-in user's email without re-authenticating (it needs a recent sign-in:
    /// prefer ``changeEmail(to:password:using:)``); dispatches ``EmailChanged`` or ``UserAuthFailed``
    /// (``AuthFlowError/Code/changeEmail``, or ``AuthFlowError/Code/missingUserID``). A server with
    /// email enumeration protection on refuses a direct change (`operationNotAllowed`); there the app
    /// sends a verification to the new address (`User.sendEmailVerification(beforeUpdatingEmail:)`).
    @discardableResult
    public func changeEmail(to email: String, using auth: Auth) -> Task<Void, Never> {
        run(Effect { store in
            guard let user = auth.currentUser else {
                return store.dispatch(UserAuthFailed(error: AuthFlowError(.missingUserID)))
            }
            do {
                try await user.updateEmail(to: email)
                store.dispatch(EmailChanged(email: email))
            } catch {
                store.dispatch(UserAuthFailed(error: AuthFlowError(.changeEmail, wrapping: error)))
            }
        })
    }

    /// Changes the signed-in user's password after re-authenticating with the current one, as a
    /// password change screen does (the server asks for a recent sign-in otherwise); dispatches
    /// ``PasswordChanged``, or ``UserAuthFailed`` with ``AuthFlowError/Code/changePassword`` wrapping
    /// the Auth error (`wrongPassword` or `invalidCredential` for a wrong current password, `weakPassword`).
    ///
    /// ```swift
    /// store.changePassword(from: currentPassword, to: newPassword, using: Auth.auth())
    /// ```
    @discardableResult
    public func changePassword(from currentPassword: String, to password: String, using auth: Auth) -> Task<Void, Never> {
        run(Effect { store in
            guard let user = auth.currentUser, let email = user.email else {
                return store.dispatch(UserAuthFailed(error: AuthFlowError(.missingUserID)))
            }
            do {
                try await user.reauthenticate(with: EmailAuthProvider.credential(withEmail: email, password: currentPassword))
                try await user.updatePassword(to: password)
                store.dispatch(PasswordChanged())
            } catch {
                store.dispatch(UserAuthFailed(error: AuthFlowError(.changePassword, wrapping: error)))
            }
        })
    }

    /// Changes the signed-in user's email after re-authenticating with their password; dispatches
    /// ``EmailChanged``, or ``UserAuthFailed`` with ``AuthFlowError/Code/changeEmail`` wrapping the
    /// Auth error (a wrong password, `invalidEmail`, `emailAlreadyInUse`).
    ///
    /// ```swift
    /// store.changeEmail(to: "ada@lovelace.org", password: currentPassword, using: Auth.auth())
    /// ```
    @discardableResult
    public func changeEmail(to email: String, password: String, using auth: Auth) -> Task<Void, Never> {
        run(Effect { store in
            guard let user = auth.currentUser, let current = user.email else {
                return store.dispatch(UserAuthFailed(error: AuthFlowError(.missingUserID)))
            }
            do {
                try await user.reauthenticate(with: EmailAuthProvider.credential(withEmail: current, password: password))
                try await user.updateEmail(to: email)
                store.dispatch(EmailChanged(email: email))
            } catch {
                store.dispatch(UserAuthFailed(error: AuthFlowError(.changeEmail, wrapping: error)))
            }
        })
    }

    /// Asks the server to send a password-reset email; dispatches ``PasswordResetSent`` or
    /// ``UserAuthFailed`` with ``AuthFlowError/Code/resetPassword``.
    @discardableResult
    public func resetPassword(email: String, using auth: Auth) -> Task<Void, Never> {
        run(Effect { store in
            do {
                try await auth.sendPasswordReset(withEmail: email)
                store.dispatch(PasswordResetSent(email: email))
            } catch {
                store.dispatch(UserAuthFailed(error: AuthFlowError(.resetPassword, wrapping: error)))
            }
        })
    }

    /// Logs out; dispatches ``UserLoggedOut`` or ``UserAuthFailed`` with ``AuthFlowError/Code/logOut``.
    public func logOut(using auth: Auth) {
        do {
            try auth.signOut()
            dispatch(UserLoggedOut())
        } catch {
            dispatch(UserAuthFailed(error: AuthFlowError(.logOut, wrapping: error)))
        }
    }
}
