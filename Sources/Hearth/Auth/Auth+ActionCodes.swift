import Foundation
import HearthCore

/// What an action code (the `oobCode` of an account email's link) is for, as FirebaseAuth's
/// `ActionCodeOperation` (the same raw values).
public enum ActionCodeOperation: Int, Sendable, Hashable {
    case unknown = 0
    case passwordReset = 1
    case verifyEmail = 2
    case recoverEmail = 3
    case emailLink = 4
    case verifyAndChangeEmail = 5
    case revertSecondFactorAddition = 6

    init(requestType: String?) {
        self = switch requestType {
        case "PASSWORD_RESET": .passwordReset
        case "VERIFY_EMAIL": .verifyEmail
        case "RECOVER_EMAIL": .recoverEmail
        case "EMAIL_SIGNIN": .emailLink
        case "VERIFY_AND_CHANGE_EMAIL": .verifyAndChangeEmail
        case "REVERT_SECOND_FACTOR_ADDITION": .revertSecondFactorAddition
        default: .unknown
        }
    }
}

/// What ``Auth/checkActionCode(_:)`` finds out about an action code, as FirebaseAuth's `ActionCodeInfo`.
///
/// For example:
/// ```swift
/// let info = try await Auth.auth().checkActionCode(code)
/// if info.operation == .passwordReset { askForANewPassword(for: info.email) }
/// ```
public final class ActionCodeInfo: Sendable {
    public let operation: ActionCodeOperation
    /// The account's email address (for an email change, the new one; for `.recoverEmail`, the
    /// address the change moved the account to, as FirebaseAuth has it).
    public let email: String
    /// For an email change, the address the account had before; for `.recoverEmail`, the address the
    /// code restores.
    public let previousEmail: String?

    init(operation: ActionCodeOperation, email: String, previousEmail: String?) {
        self.operation = operation
        self.email = email
        self.previousEmail = previousEmail
    }
}

/// The parts of an account email's link (FirebaseAuth's `ActionCodeURL`): what it is for, its code,
/// where to continue, its language. A link that wraps the action link (`link=`) is read through.
///
/// ```swift
/// if let action = ActionCodeURL(link: url.absoluteString), action.operation == .passwordReset, let code = action.code {
///     try await Auth.auth().confirmPasswordReset(withCode: code, newPassword: newPassword)
/// }
/// ```
public final class ActionCodeURL: Sendable {
    /// The project's API key (`apiKey`).
    public let apiKey: String?
    /// What the link is for (`mode`).
    public let operation: ActionCodeOperation
    /// The action code (`oobCode`).
    public let code: String?
    /// Where the app continues afterwards (`continueUrl`).
    public let continueURL: URL?
    /// The language of the email (`lang`).
    public let languageCode: String?

    /// Nil for text with no query parameters; otherwise the fields are nil (the operation `.unknown`)
    /// where the link lacks them.
    public init?(link: String) {
        let parameters = Auth.emailLinkParameters(link)
        guard !parameters.isEmpty else { return nil }
        apiKey = parameters["apiKey"]
        code = parameters["oobCode"]
        continueURL = parameters["continueUrl"].flatMap { URL(string: $0) }
        languageCode = parameters["lang"]
        operation = switch parameters["mode"] {
        case "resetPassword": .passwordReset
        case "verifyEmail": .verifyEmail
        case "recoverEmail": .recoverEmail
        case "signIn": .emailLink
        case "verifyAndChangeEmail": .verifyAndChangeEmail
        case "revertSecondFactorAddition": .revertSecondFactorAddition
        default: .unknown
        }
    }
}

/// The flows of account emails' links: a password reset, an email verification or change, driven by
/// the link's `oobCode` (FirebaseAuth's names).
///
/// For example:
/// ```swift
/// let email = try await Auth.auth().verifyPasswordResetCode(code)
/// try await Auth.auth().confirmPasswordReset(withCode: code, newPassword: newPassword)
/// ```
extension Auth {
    /// Sets a new password with a password-reset code; the code is used up.
    public func confirmPasswordReset(withCode code: String, newPassword: String) async throws {
        _ = try await client.call("accounts:resetPassword", [("oobCode", .string(code)), ("newPassword", .string(newPassword))])
    }

    /// The email address a password-reset code is for; the code stays valid.
    public func verifyPasswordResetCode(_ code: String) async throws -> String {
        let info = try await checkActionCode(code)
        guard info.operation == .passwordReset else { throw AuthError(.invalidActionCode, "INVALID_OOB_CODE") }
        return info.email
    }

    /// What an action code is for, and for whom; the code stays valid.
    public func checkActionCode(_ code: String) async throws -> ActionCodeInfo {
        let reply = try await client.call("accounts:resetPassword", [("oobCode", .string(code))])
        let operation = ActionCodeOperation(requestType: reply.text("requestType"))
        let newEmail = reply.text("newEmail")
        return ActionCodeInfo(
            operation: operation, email: newEmail ?? reply.text("email") ?? "", previousEmail: newEmail == nil ? nil : reply.text("email")
        )
    }

    /// Applies an email verification or email change code, or undoes an email change (`.recoverEmail`);
    /// the code is used up.
    public func applyActionCode(_ code: String) async throws {
        _ = try await client.call("accounts:update", [("oobCode", .string(code))])
    }

    /// As ``confirmPasswordReset(withCode:newPassword:)``, with a completion handler.
    public func confirmPasswordReset(withCode code: String, newPassword: String, completion: (@Sendable ((any Error)?) -> Void)?) {
        deliverCompletion(completion) { try await self.confirmPasswordReset(withCode: code, newPassword: newPassword) }
    }

    /// As ``verifyPasswordResetCode(_:)``, with a completion handler.
    public func verifyPasswordResetCode(_ code: String, completion: (@Sendable (String?, (any Error)?) -> Void)?) {
        deliverResult(of: { try await self.verifyPasswordResetCode(code) }, on: database.callbackQueue, to: completion)
    }

    /// As ``checkActionCode(_:)``, with a completion handler.
    public func checkActionCode(_ code: String, completion: (@Sendable (ActionCodeInfo?, (any Error)?) -> Void)?) {
        deliverResult(of: { try await self.checkActionCode(code) }, on: database.callbackQueue, to: completion)
    }

    /// As ``applyActionCode(_:)``, with a completion handler.
    public func applyActionCode(_ code: String, completion: (@Sendable ((any Error)?) -> Void)?) {
        deliverCompletion(completion) { try await self.applyActionCode(code) }
    }
}

/// Passwordless sign-in with an email link, as FirebaseAuth's: the server emails a link (Hearth's
/// server sends them in emulator mode only, as a Firebase project has it off by default), and the
/// link with its address signs the user in, creating the account if there is none.
///
/// For example:
/// ```swift
/// let settings = ActionCodeSettings()
/// settings.url = URL(string: "https://example.com/finish")
/// settings.handleCodeInApp = true
/// try await Auth.auth().sendSignInLink(toEmail: email, actionCodeSettings: settings)
/// // … later, with the link the user opened:
/// if Auth.auth().isSignIn(withEmailLink: link) { try await Auth.auth().signIn(withEmail: email, link: link) }
/// ```
extension Auth {
    /// Asks the server to email a sign-in link to `email`.
    public func sendSignInLink(toEmail email: String, actionCodeSettings: ActionCodeSettings) async throws {
        _ = try await client.call(
            "accounts:sendOobCode", [("requestType", .string("EMAIL_SIGNIN")), ("email", .string(email))] + actionCodeSettings.requestMembers
        )
    }

    /// As ``sendSignInLink(toEmail:actionCodeSettings:)``, with a completion handler.
    public func sendSignInLink(
        toEmail email: String, actionCodeSettings: ActionCodeSettings, completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        deliverCompletion(completion) { try await self.sendSignInLink(toEmail: email, actionCodeSettings: actionCodeSettings) }
    }

    /// Whether `link` is an email sign-in link (`mode=signIn` with an `oobCode`, in the link or in a
    /// `link` parameter wrapping it).
    public func isSignIn(withEmailLink link: String) -> Bool {
        let parameters = Self.emailLinkParameters(link)
        return parameters["mode"] == "signIn" && parameters["oobCode"] != nil
    }

    /// Signs in with an email sign-in link and the address it was sent to; the account is made if
    /// there is none (`additionalUserInfo.isNewUser`) and its email counts as verified. A link that is
    /// not a sign-in link fails with `invalidActionCode`.
    @discardableResult
    public func signIn(withEmail email: String, link: String) async throws -> AuthDataResult {
        let parameters = Self.emailLinkParameters(link)
        guard parameters["mode"] == "signIn", let code = parameters["oobCode"] else {
            throw AuthError(.invalidActionCode, "INVALID_OOB_CODE : not an email sign-in link")
        }
        return try await signIn(
            "accounts:signInWithEmailLink", [("email", .string(email)), ("oobCode", .string(code)), ("returnSecureToken", .bool(true))],
            providerID: EmailAuthProvider.id, isNewUser: { $0.text("isNewUser") == "true" }
        )
    }

    /// As ``signIn(withEmail:link:)``, with a completion handler.
    public func signIn(withEmail email: String, link: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        deliverResult(of: { try await self.signIn(withEmail: email, link: link) }, on: database.callbackQueue, to: completion)
    }

    /// The query parameters of a link, those of a link it wraps (`link=`, as Dynamic Links do) filling in.
    static func emailLinkParameters(_ link: String) -> [String: String] {
        func parameters(_ text: String) -> [String: String] {
            let items = URLComponents(string: text)?.queryItems ?? URLComponents(string: "?" + text)?.queryItems ?? []
            var result: [String: String] = [:]
            for item in items where result[item.name] == nil { result[item.name] = item.value }
            return result
        }
        var result = parameters(link)
        if let inner = result["link"] ?? result["deep_link_id"] {
            result.merge(parameters(inner)) { outer, _ in outer }
        }
        return result
    }
}

extension User {
    /// Asks the server to send the user an email to verify its address; its link leads on to the
    /// settings' `url`.
    ///
    /// ```swift
    /// try await Auth.auth().currentUser?.sendEmailVerification()
    /// ```
    public func sendEmailVerification(with actionCodeSettings: ActionCodeSettings? = nil) async throws {
        let token = try await getIDToken()
        _ = try await auth.client.call(
            "accounts:sendOobCode",
            [("requestType", .string("VERIFY_EMAIL")), ("idToken", .string(token))] + (actionCodeSettings?.requestMembers ?? [])
        )
    }

    /// Asks the server to send a link to `newEmail`; following it moves the account to that address.
    public func sendEmailVerification(beforeUpdatingEmail newEmail: String, actionCodeSettings: ActionCodeSettings? = nil) async throws {
        let token = try await getIDToken()
        _ = try await auth.client.call(
            "accounts:sendOobCode",
            [("requestType", .string("VERIFY_AND_CHANGE_EMAIL")), ("idToken", .string(token)), ("newEmail", .string(newEmail))]
                + (actionCodeSettings?.requestMembers ?? [])
        )
    }

    /// As ``sendEmailVerification(with:)``, with a completion handler.
    ///
    /// ```swift
    /// user.sendEmailVerification { error in if let error { show(error) } }
    /// ```
    public func sendEmailVerification(with actionCodeSettings: ActionCodeSettings? = nil, completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        auth.deliverCompletion(completion) { try await self.sendEmailVerification(with: actionCodeSettings) }
    }

    /// As ``sendEmailVerification(beforeUpdatingEmail:actionCodeSettings:)``, with a completion handler.
    public func sendEmailVerification(
        beforeUpdatingEmail email: String, actionCodeSettings: ActionCodeSettings? = nil, completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        auth.deliverCompletion(completion) { try await self.sendEmailVerification(beforeUpdatingEmail: email, actionCodeSettings: actionCodeSettings) }
    }
}
