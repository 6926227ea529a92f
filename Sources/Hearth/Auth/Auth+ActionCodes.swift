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
public struct ActionCodeInfo: Sendable {
    public let operation: ActionCodeOperation
    /// The account's email address (for an email change, the new one).
    public let email: String
    /// For an email change, the address the account had before.
    public let previousEmail: String?
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

    /// Applies an email verification or email change code; the code is used up.
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
