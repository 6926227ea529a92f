import Hearth

// The actions the store's auth helpers dispatch (see `Store+Auth.swift`).

/// The signed-in user's id, from ``Store/identifyUser(using:)``.
public struct UserIdentified: Action, Equatable {
    public let userID: String

    public init(userID: String) {
        self.userID = userID
    }
}

/// A log-in succeeded (directly, or as the second step of a sign-up).
public struct UserLoggedIn: Action, Equatable {
    public let userID: String
    public let email: String?

    public init(userID: String, email: String?) {
        self.userID = userID
        self.email = email
    }
}

/// A sign-up created the account; ``UserLoggedIn`` follows.
public struct UserSignedUp: Action, Equatable {
    public let userID: String
    public let email: String

    public init(userID: String, email: String) {
        self.userID = userID
        self.email = email
    }
}

/// The signed-in user's password changed.
public struct PasswordChanged: Action, Equatable {
    public init() {}
}

/// The signed-in user's email changed to `email`.
public struct EmailChanged: Action, Equatable {
    public let email: String

    public init(email: String) {
        self.email = email
    }
}

/// The server accepted a password-reset request for `email`.
public struct PasswordResetSent: Action, Equatable {
    public let email: String

    public init(email: String) {
        self.email = email
    }
}

/// The user logged out.
public struct UserLoggedOut: Action, Equatable {
    public init() {}
}

/// An auth flow failed; the error says which flow and wraps the Auth client's error.
///
/// ```swift
/// if let failed = action as? UserAuthFailed, failed.error.code == .logIn {
///     state.loginError = failed.error.underlying?.code == .wrongPassword ? "Wrong password" : "Could not log in"
/// }
/// ```
public struct UserAuthFailed: Action, Equatable {
    public let error: AuthFlowError

    public init(error: AuthFlowError) {
        self.error = error
    }
}

/// Why an auth flow failed: which flow (``code``) and the Auth client's error (``underlying``),
/// absent only for ``Code/missingUserID``.
public struct AuthFlowError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The flow that failed. A struct over a private enum, so flows can be added without breaking
    /// code that switches over them.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case logIn, signUp, changePassword, changeEmail, resetPassword, logOut, missingUserID
        }

        private let base: Base

        public static let logIn = Code(base: .logIn)
        public static let signUp = Code(base: .signUp)
        public static let changePassword = Code(base: .changePassword)
        public static let changeEmail = Code(base: .changeEmail)
        public static let resetPassword = Code(base: .resetPassword)
        public static let logOut = Code(base: .logOut)
        /// No user is signed in, for a flow that needs one.
        public static let missingUserID = Code(base: .missingUserID)

        public var description: String {
            switch base {
            case .logIn: "log-in"
            case .signUp: "sign-up"
            case .changePassword: "change-password"
            case .changeEmail: "change-email"
            case .resetPassword: "reset-password"
            case .logOut: "log-out"
            case .missingUserID: "missing user id"
            }
        }
    }

    public let code: Code
    /// The Auth client's error, with Firebase's code (``AuthErrorCode``).
    public let underlying: AuthError?

    public init(_ code: Code, underlying: AuthError? = nil) {
        self.code = code
        self.underlying = underlying
    }

    /// The flow's error for whatever the Auth client threw.
    init(_ code: Code, wrapping error: any Error) {
        self.init(code, underlying: error as? AuthError ?? AuthError(.internalError, "\(type(of: error))"))
    }

    public var description: String {
        underlying.map { "\(code) failed: \($0)" } ?? "\(code)"
    }
}
