// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseAuth` and `import FirebaseDatabase`).
//
// The newer async/await forms (firebase-ios-sdk 8 and later) and Codable, as an app that has started
// to modernise has them beside its callback code.

import Foundation
import Hearth

/// What the app learns from the signed-in user's ID token.
public struct SessionInfo {
    public let uid: String
    public let email: String?
    public let signInProvider: String
    public let expirationDate: Date
    public let claims: [String: Any]
}

extension UserController {
    /// Signs in and loads the profile with async/await.
    @discardableResult
    public func logIn(email: String, password: String) async throws -> TimelineUser {
        let result = try await Auth.auth().signIn(withEmail: email, password: password)
        let snapshot = try await usersRef.child(result.user.uid).getData()
        var user = try snapshot.data(as: TimelineUser.self)
        user.identifier = snapshot.key
        return user
    }

    /// Writes the whole profile from the Codable model. `setValue(from:)` is Firebase's synchronous
    /// throwing call (it encodes, then queues the write), so there is no `await` on it.
    public func saveProfile(_ user: TimelineUser) async throws {
        guard let identifier = user.identifier else { throw TimelineError.invalidData }
        try usersRef.child(identifier).setValue(from: user)
    }

    /// The profile as the server has it now, decoded with Codable.
    public func fetchUser(identifier: String) async throws -> TimelineUser {
        let snapshot = try await usersRef.child(identifier).getData()
        guard snapshot.exists() else { throw TimelineError.notFound }
        var user = try snapshot.data(as: TimelineUser.self)
        user.identifier = identifier
        return user
    }

    /// The signed-in user's token: its claims and how they signed in.
    public func sessionInfo() async throws -> SessionInfo {
        guard let user = Auth.auth().currentUser else { throw TimelineError.notSignedIn }
        let tokenResult = try await user.getIDTokenResult()
        return SessionInfo(uid: user.uid, email: tokenResult.claims["email"] as? String,
                           signInProvider: tokenResult.signInProvider, expirationDate: tokenResult.expirationDate,
                           claims: tokenResult.claims)
    }

    /// The completion form of ``sessionInfo()``.
    public func fetchSessionInfo(forcingRefresh: Bool = false, completion: @escaping (SessionInfo?, Error?) -> Void) {
        guard let user = Auth.auth().currentUser else {
            completion(nil, TimelineError.notSignedIn)
            return
        }
        user.getIDTokenResult(forcingRefresh: forcingRefresh) { tokenResult, error in
            guard let tokenResult = tokenResult else {
                completion(nil, error)
                return
            }
            completion(SessionInfo(uid: user.uid, email: tokenResult.claims["email"] as? String,
                                   signInProvider: tokenResult.signInProvider,
                                   expirationDate: tokenResult.expirationDate, claims: tokenResult.claims), nil)
        }
    }

    /// "Forgot password": asks Firebase to send the reset email.
    public func sendPasswordReset(email: String) async throws {
        try await Auth.auth().sendPasswordReset(withEmail: email)
    }
}
