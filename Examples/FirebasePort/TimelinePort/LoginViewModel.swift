// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseAuth`).
//
// The sign-up / log-in screen's logic (one screen, two modes): validation, the call, and what to show
// when Firebase refuses.

import Foundation
import Hearth

public class LoginViewModel {
    public enum Mode {
        case signUp
        case logIn
    }

    public var mode: Mode = .logIn
    public var email = ""
    public var password = ""
    public var username = ""
    public var bio = ""
    public var url = ""

    /// The message under the form, if the last attempt failed.
    public private(set) var errorMessage: String?
    /// Which field the error is about, to highlight it.
    public private(set) var invalidField: String?

    public var onSignedIn: ((TimelineUser) -> Void)?
    public var onError: ((String) -> Void)?

    let userController: UserController

    public init(userController: UserController = .shared) {
        self.userController = userController
    }

    public var canSubmit: Bool {
        switch mode {
        case .signUp: return !email.isEmpty && password.count >= 6 && !username.isEmpty
        case .logIn: return !email.isEmpty && !password.isEmpty
        }
    }

    public func submit(completion: ((Error?) -> Void)? = nil) {
        errorMessage = nil
        invalidField = nil
        let finish: (TimelineUser?, Error?) -> Void = { user, error in
            if let error = error {
                self.handle(error)
                completion?(error)
                return
            }
            if let user = user { self.onSignedIn?(user) }
            completion?(nil)
        }
        switch mode {
        case .signUp:
            userController.signUp(email: email, password: password, username: username,
                                  bio: bio.isEmpty ? nil : bio, url: url.isEmpty ? nil : url, completion: finish)
        case .logIn:
            userController.logIn(email: email, password: password, completion: finish)
        }
    }

    /// "Forgot password?"
    public func sendPasswordReset(completion: ((Error?) -> Void)? = nil) {
        Auth.auth().sendPasswordReset(withEmail: email) { error in
            if let error = error { self.handle(error) }
            completion?(error)
        }
    }

    /// The "choose a new password" screen the reset email's link opens: checks the code, then sets the
    /// password and logs in with it.
    public func resetPassword(code: String, newPassword: String, completion: ((Error?) -> Void)? = nil) {
        Auth.auth().verifyPasswordResetCode(code) { email, error in
            guard let email = email else {
                if let error = error { self.handle(error) }
                completion?(error)
                return
            }
            Auth.auth().confirmPasswordReset(withCode: code, newPassword: newPassword) { error in
                if let error = error {
                    self.handle(error)
                    completion?(error)
                    return
                }
                self.mode = .logIn
                self.email = email
                self.password = newPassword
                self.submit(completion: completion)
            }
        }
    }

    func handle(_ error: Error) {
        if let code = AuthErrorCode(rawValue: (error as NSError).code) {
            switch code {
            case .wrongPassword, .invalidCredential:
                invalidField = "password"
                errorMessage = "The email or password is wrong."
            case .emailAlreadyInUse:
                invalidField = "email"
                errorMessage = "An account already uses this email address. Log in instead."
                mode = .logIn
            case .userNotFound:
                invalidField = "email"
                errorMessage = "There is no account with this email address. Sign up instead."
                mode = .signUp
            case .invalidEmail:
                invalidField = "email"
                errorMessage = "This email address is not valid."
            case .weakPassword:
                invalidField = "password"
                errorMessage = "Choose a password of at least 6 characters."
            default:
                errorMessage = UserController.message(for: error)
            }
        } else {
            errorMessage = error.localizedDescription
        }
        onError?(errorMessage ?? "")
    }
}
