// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseAuth` and `import FirebaseDatabase`).
//
// Accounts and profiles: sign up (email, password, username, bio, url), log in, log out, the current
// user, profile edits, follow / unfollow, search by username, fetch a user.

import Foundation
import Hearth

public class UserController {
    public static let shared = UserController()

    /// The signed-in user's profile, once loaded.
    public private(set) var currentUser: TimelineUser?

    var usersRef: DatabaseReference {
        return Database.database().reference().child("users")
    }

    public init() {}

    /// The signed-in account's uid (Firebase remembers the session across launches).
    public var currentUserIdentifier: String? {
        return Auth.auth().currentUser?.uid
    }

    // MARK: Signing up, in and out

    /// Creates the account, then the profile at `users/<uid>`.
    public func signUp(email: String, password: String, username: String, bio: String? = nil, url: String? = nil,
                       completion: @escaping (TimelineUser?, Error?) -> Void) {
        Auth.auth().createUser(withEmail: email, password: password) { authResult, error in
            if let error = error {
                print("Sign-up failed: \(UserController.message(for: error))")
                completion(nil, error)
                return
            }
            guard let firebaseUser = authResult?.user else {
                completion(nil, TimelineError.notSignedIn)
                return
            }
            var user = TimelineUser(identifier: firebaseUser.uid, username: username, bio: bio, url: url)
            user.save { error in
                if let error = error {
                    completion(nil, error)
                    return
                }
                self.currentUser = user
                // The account's display name follows the username (shown by other Firebase tools).
                let changeRequest = firebaseUser.createProfileChangeRequest()
                changeRequest.displayName = username
                changeRequest.commitChanges { _ in
                    completion(user, nil)
                }
            }
        }
    }

    /// Signs in, then loads the profile.
    public func logIn(email: String, password: String, completion: @escaping (TimelineUser?, Error?) -> Void) {
        Auth.auth().signIn(withEmail: email, password: password) { authResult, error in
            if let error = error {
                print("Log-in failed: \(UserController.message(for: error))")
                completion(nil, error)
                return
            }
            guard let uid = authResult?.user.uid else {
                completion(nil, TimelineError.notSignedIn)
                return
            }
            self.fetchUser(identifier: uid) { user in
                self.currentUser = user
                completion(user, user == nil ? TimelineError.notFound : nil)
            }
        }
    }

    /// Signs out; returns whether it worked.
    @discardableResult
    public func logOut() -> Bool {
        do {
            try Auth.auth().signOut()
            currentUser = nil
            return true
        } catch let signOutError as NSError {
            print("Error signing out: \(signOutError)")
            return false
        }
    }

    /// Loads the signed-in user's profile (at launch: the session survives, the profile is read again).
    public func loadCurrentUser(completion: @escaping (TimelineUser?) -> Void) {
        guard let uid = Auth.auth().currentUser?.uid else {
            currentUser = nil
            completion(nil)
            return
        }
        fetchUser(identifier: uid) { user in
            self.currentUser = user
            completion(user)
        }
    }

    // MARK: Profiles

    public func fetchUser(identifier: String, completion: @escaping (TimelineUser?) -> Void) {
        usersRef.child(identifier).observeSingleEvent(of: .value, with: { snapshot in
            completion(TimelineUser(snapshot: snapshot))
        }, withCancel: { error in
            print("Error reading user \(identifier): \(error.localizedDescription)")
            completion(nil)
        })
    }

    /// Changes the signed-in user's username, bio and url (the follows stay).
    public func updateProfile(username: String, bio: String?, url: String?, completion: @escaping (TimelineUser?, Error?) -> Void) {
        guard let firebaseUser = Auth.auth().currentUser else {
            completion(nil, TimelineError.notSignedIn)
            return
        }
        let values: [String: Any] = ["username": username, "bio": bio ?? NSNull(), "url": url ?? NSNull()]
        usersRef.child(firebaseUser.uid).updateChildValues(values) { error, _ in
            if let error = error {
                completion(nil, error)
                return
            }
            let changeRequest = firebaseUser.createProfileChangeRequest()
            changeRequest.displayName = username
            changeRequest.commitChanges { error in
                if let error = error {
                    print("Could not update the display name: \(error.localizedDescription)")
                }
                self.fetchUser(identifier: firebaseUser.uid) { user in
                    self.currentUser = user
                    completion(user, user == nil ? TimelineError.notFound : nil)
                }
            }
        }
    }

    // MARK: Following

    public func follow(_ user: TimelineUser, completion: @escaping (Error?) -> Void) {
        guard let uid = Auth.auth().currentUser?.uid, let other = user.identifier else {
            completion(TimelineError.notSignedIn)
            return
        }
        usersRef.child(uid).child("follows").child(other).setValue(true) { error, _ in
            if error == nil {
                if self.currentUser?.follows == nil { self.currentUser?.follows = [:] }
                self.currentUser?.follows?[other] = true
            }
            completion(error)
        }
    }

    public func unfollow(_ user: TimelineUser, completion: @escaping (Error?) -> Void) {
        guard let uid = Auth.auth().currentUser?.uid, let other = user.identifier else {
            completion(TimelineError.notSignedIn)
            return
        }
        usersRef.child(uid).child("follows").child(other).removeValue { error, _ in
            if error == nil {
                self.currentUser?.follows?[other] = nil
            }
            completion(error)
        }
    }

    /// The uids `user` follows, read from the server.
    public func followedIdentifiers(of identifier: String, completion: @escaping ([String]) -> Void) {
        usersRef.child(identifier).child("follows").observeSingleEvent(of: .value) { snapshot in
            var identifiers: [String] = []
            for case let child as DataSnapshot in snapshot.children where child.value as? Bool == true {
                identifiers.append(child.key)
            }
            completion(identifiers)
        }
    }

    /// How many users follow `user` (for the profile header).
    public func followerCount(of user: TimelineUser, completion: @escaping (Int) -> Void) {
        guard let identifier = user.identifier else {
            completion(0)
            return
        }
        usersRef.queryOrdered(byChild: "follows/\(identifier)").queryEqual(toValue: true).observeSingleEvent(of: .value) { snapshot in
            completion(Int(snapshot.childrenCount))
        }
    }

    // MARK: Search

    /// Users whose username is exactly `username`.
    public func searchUsers(username: String, completion: @escaping ([TimelineUser]) -> Void) {
        usersRef.queryOrdered(byChild: "username").queryEqual(toValue: username).observeSingleEvent(of: .value, with: { snapshot in
            let users = snapshot.children.compactMap { child -> TimelineUser? in
                guard let child = child as? DataSnapshot else { return nil }
                return TimelineUser(snapshot: child)
            }
            completion(users)
        }, withCancel: { error in
            print("Search failed: \(error.localizedDescription)")
            completion([])
        })
    }

    // MARK: Errors

    /// A message for people, from FirebaseAuth's error codes.
    public static func message(for error: Error) -> String {
        if let code = AuthErrorCode(rawValue: (error as NSError).code) {
            switch code {
            case .wrongPassword, .invalidCredential:
                return "The email or password is wrong."
            case .emailAlreadyInUse:
                return "An account already uses this email address."
            case .userNotFound:
                return "There is no account with this email address."
            case .invalidEmail:
                return "This email address is not valid."
            case .weakPassword:
                return "Choose a longer password."
            case .networkError:
                return "Check your connection and try again."
            case .tooManyRequests:
                return "Too many attempts: try again later."
            default:
                return "Something went wrong: \(error.localizedDescription)"
            }
        }
        return error.localizedDescription
    }

    /// The FirebaseAuth error code of `error`, if it is one.
    public static func authErrorCode(of error: Error) -> AuthErrorCode? {
        let error = error as NSError
        guard error.domain == AuthErrorDomain else { return nil }
        return AuthErrorCode(rawValue: error.code)
    }
}
