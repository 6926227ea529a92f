import Foundation
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// The Auth client against a live server's identity service: accounts, errors mapped to Firebase's
/// codes, the signed-in user's token carried by the database connection (rules see `auth.uid`),
/// state listeners, and profile changes.
@Suite struct LiveAuthTests {
    static let rules = #"{"rules": {"users": {"$uid": {".read": "auth != null && auth.uid == $uid", ".write": "auth != null && auth.uid == $uid"}}}}"#

    static func status(_ error: (any Error)?) -> String {
        guard let error else { return "ok" }
        return (error as? DatabaseError)?.code.status ?? "\(error)"
    }

    @Test func aSignedInUserWritesWhereRulesNameItsUidAndSigningOutTakesThatAway() async throws {
        try await LiveServer.run(rules: Self.rules, identity: true) { url, _ in
            let database = try makeClient(url)
            let auth = Auth.auth(database: database)
            let user = try await auth.createUser(withEmail: "ada@example.com", password: "correct horse").user
            #expect(auth.currentUser?.uid == user.uid)
            #expect(user.email == "ada@example.com")
            #expect(!user.isAnonymous)

            let mine = database.reference(withPath: "users/\(user.uid)")
            try await mine.setValue(["name": "Ada"])
            #expect(try await mine.getData().value as? [String: String] == ["name": "Ada"])
            await #expect(throws: DatabaseError.self) { try await database.reference(withPath: "users/someone-else").setValue(1) }

            try auth.signOut()
            #expect(auth.currentUser == nil)
            let outcome = Recorder()
            withoutWaiting { mine.setValue(["name": "Eve"]) { error, _ in outcome.append(Self.status(error)) } }
            #expect(await outcome.wait(count: 1) == ["permission_denied"])

            // Signing in again restores access, on the same connection.
            let again = try await auth.signIn(withEmail: "ada@example.com", password: "correct horse").user
            #expect(again.uid == user.uid)
            try await mine.child("name").setValue("Ada Lovelace")
            database.goOffline()
        }
    }

    @Test func serverErrorsArriveWithFirebasesCodes() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let auth = Auth.auth(database: try makeClient(url))
            try await auth.createUser(withEmail: "grace@example.com", password: "cobol-1959")

            func code(_ work: () async throws -> Void) async -> AuthErrorCode? {
                do { try await work(); return nil } catch { return (error as? AuthError)?.code }
            }
            #expect(await code { try await auth.createUser(withEmail: "grace@example.com", password: "another-one") } == .emailAlreadyInUse)
            #expect(await code { try await auth.createUser(withEmail: "new@example.com", password: "123") } == .weakPassword)
            // Handled the Firebase way, through NSError: FirebaseAuth's domain, code and error name.
            do {
                try await auth.createUser(withEmail: "grace@example.com", password: "another-one")
                Issue.record("a second account with the same email was created")
            } catch {
                let nsError = error as NSError
                #expect(nsError.domain == "FIRAuthErrorDomain" && nsError.code == 17007)
                #expect(AuthErrorCode(rawValue: nsError.code) == .emailAlreadyInUse)
                #expect(nsError.userInfo["FIRAuthErrorUserInfoNameKey"] as? String == "ERROR_EMAIL_ALREADY_IN_USE")
                #expect(!nsError.localizedDescription.isEmpty)
            }
            #expect(await code { try await auth.createUser(withEmail: "not an email", password: "long enough") } == .invalidEmail)
            let wrong = await code { try await auth.signIn(withEmail: "grace@example.com", password: "wrong password") }
            #expect(wrong == .wrongPassword || wrong == .invalidCredential)
            let unknown = await code { try await auth.signIn(withEmail: "nobody@example.com", password: "whatever1") }
            #expect(unknown == .userNotFound || unknown == .invalidCredential)
            try await auth.sendPasswordReset(withEmail: "grace@example.com")
            #expect(await code { try await auth.sendPasswordReset(withEmail: "nobody@example.com") } == .userNotFound)
            // A server that is not there is a network error.
            let offline = Auth(database: try makeClient("http://127.0.0.1:1?ns=demo"), clock: SystemClock())
            #expect(await code { try await offline.signInAnonymously() } == .networkError)
        }
    }

    @Test func listenersAndTheAsyncSequenceFollowSignInAndSignOut() async throws {
        try await LiveServer.run(identity: true) { url, _ in
            let database = try makeClient(url)
            let auth = Auth.auth(database: database)
            let heard = Recorder()
            let handle = auth.addStateDidChangeListener { _, user in heard.append(user.map { $0.isAnonymous ? "anonymous" : "user" } ?? "nil") }
            let streamed = Recorder()
            let reader = Task {
                for await user in auth.authStates {
                    streamed.append(user == nil ? "nil" : "user")
                    if streamed.all.count == 3 { break }
                }
            }
            #expect(await heard.wait(count: 1) == ["nil"])
            _ = await streamed.wait(count: 1)
            let anonymous = try await auth.signInAnonymously().user
            #expect(anonymous.isAnonymous)
            #expect(await heard.wait(count: 2) == ["nil", "anonymous"])
            _ = await streamed.wait(count: 2)
            try auth.signOut()
            #expect(await heard.wait(count: 3) == ["nil", "anonymous", "nil"])
            #expect(await streamed.wait(count: 3) == ["nil", "user", "nil"])
            _ = await reader.value
            auth.removeStateDidChangeListener(handle)
            try await auth.signInAnonymously()
            await drain(database)
            #expect(heard.all.count == 3)
            database.goOffline()
        }
    }

    @Test func profileChangesPasswordChangesAndAForcedRefreshKeepTheSessionWorking() async throws {
        try await LiveServer.run(rules: Self.rules, identity: true) { url, _ in
            let database = try makeClient(url)
            let auth = Auth.auth(database: database)
            let user = try await auth.createUser(withEmail: "alan@example.com", password: "enigma-1940").user
            let change = user.createProfileChangeRequest()
            change.displayName = "Alan"
            change.photoURL = URL(string: "https://example.com/alan.png")
            try await change.commitChanges()
            try await user.reload()
            #expect(user.displayName == "Alan")
            #expect(user.photoURL?.absoluteString == "https://example.com/alan.png")

            try await user.updatePassword(to: "bombe-1941")
            let token = try await user.getIDToken(forcingRefresh: true)
            #expect(token.split(separator: ".").count == 3)
            try await database.reference(withPath: "users/\(user.uid)/ok").setValue(true)
            try auth.signOut()
            #expect((try? await auth.signIn(withEmail: "alan@example.com", password: "enigma-1940")) == nil)
            try await auth.signIn(withEmail: "alan@example.com", password: "bombe-1941")
            try await auth.currentUser?.delete()
            #expect(auth.currentUser == nil)
            let gone = try? await auth.signIn(withEmail: "alan@example.com", password: "bombe-1941")
            #expect(gone == nil)
            database.goOffline()
        }
    }

    @Test func withPersistenceTheSessionOutlivesTheClientAndSignOutEndsIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-auth-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await LiveServer.run(rules: Self.rules, identity: true) { url, _ in
            func launch() throws -> (Database, Auth) {
                let database = try makeClient(url)
                database.persistenceDirectory = folder
                database.isPersistenceEnabled = true
                return (database, Auth.auth(database: database))
            }
            let (first, firstAuth) = try launch()
            let uid = try await firstAuth.createUser(withEmail: "kept@example.com", password: "kept-password").user.uid
            first.goOffline()

            // The next launch is signed in at once, and its connection authenticates as that user.
            let (second, secondAuth) = try launch()
            #expect(secondAuth.currentUser?.uid == uid)
            #expect(secondAuth.currentUser?.email == "kept@example.com")
            try await second.reference(withPath: "users/\(uid)").setValue(["kept": true])
            try secondAuth.signOut()
            second.goOffline()

            let (third, thirdAuth) = try launch()
            #expect(thirdAuth.currentUser == nil)
            third.goOffline()
        }
    }
}
