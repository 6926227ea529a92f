// firebase-port: runs the Timeline app's Firebase-era Swift core (Examples/FirebasePort/TimelinePort)
// against a live Hearth server and checks what it does.
//
//     hearth serve --emulator --in-memory --port 9000
//     swift run firebase-port "http://127.0.0.1:9000?ns=timeline"
//
// The configuration line is the one change outside the import lines: Hearth's
// `Database.configure(url:)` in place of `FirebaseApp.configure()`. Auth and Storage use the same
// server (one port serves the database, accounts and files).
//
// One line per step: `ok   <step>` or `FAIL <step>: <why>`; then `firebase-port: N passed, M failed`.
// Exits 1 if a step failed.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hearth
import TimelinePort

let arguments = CommandLine.arguments
guard arguments.count > 1 else {
    print("usage: firebase-port <database URL, e.g. http://127.0.0.1:9000?ns=timeline>")
    exit(2)
}
Database.configure(url: arguments[1])   // was: FirebaseApp.configure()

var passed = 0
var failed = 0

@MainActor
func check(_ step: String, _ condition: Bool, _ why: @autoclosure () -> String = "") {
    if condition {
        passed += 1
        print("ok   \(step)")
    } else {
        failed += 1
        print("FAIL \(step): \(why())")
    }
}

/// Runs a callback-style call and waits for the (Sendable) value it hands to `done`.
@MainActor
func wait<T: Sendable>(_ start: (@escaping (T) -> Void) -> Void) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        start { value in continuation.resume(returning: value) }
    }
}

func describe(_ error: (any Error)?) -> String {
    guard let error else { return "no error" }
    let nsError = error as NSError
    return "\(nsError.domain) \(nsError.code): \(error)"
}

func authCode(_ error: (any Error)?) -> AuthErrorCode? {
    guard let error else { return nil }
    return AuthErrorCode(rawValue: (error as NSError).code)
}

/// A few hundred bytes that start and end like a JPEG.
func fakeJPEG(_ seed: UInt8) -> Data {
    var bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0x00]
    for index in 0..<400 { bytes.append(UInt8(truncatingIfNeeded: index &* 31 &+ Int(seed))) }
    bytes += [0xFF, 0xD9]
    return Data(bytes)
}

let users = UserController.shared
let posts = PostController.shared
let images = ImageController.shared

let run = UUID().uuidString.prefix(8).lowercased()
let aliceEmail = "alice-\(run)@example.com"
let bobEmail = "bob-\(run)@example.com"
let password = "correct horse battery"
let aliceImage = fakeJPEG(1)
let bobImage = fakeJPEG(2)

// MARK: Accounts

var aliceID = ""
var error = await wait { done in
    users.signUp(email: aliceEmail, password: password, username: "alice", bio: "Takes photos", url: "https://alice.example") { user, error in
        aliceID = user?.identifier ?? ""
        done(error)
    }
}
check("sign up alice", error == nil && !aliceID.isEmpty && aliceID == Auth.auth().currentUser?.uid, describe(error))

error = await wait { done in
    users.signUp(email: aliceEmail, password: password, username: "alice2") { _, error in done(error) }
}
check("sign-up with an existing email fails with emailAlreadyInUse", authCode(error) == .emailAlreadyInUse, describe(error))

check("log out alice", users.logOut() && Auth.auth().currentUser == nil && users.currentUser == nil)

var bobID = ""
error = await wait { done in
    users.signUp(email: bobEmail, password: password, username: "bob") { user, error in
        bobID = user?.identifier ?? ""
        done(error)
    }
}
check("sign up bob", error == nil && !bobID.isEmpty && bobID != aliceID, describe(error))

var bobPostID = ""
var bobImagePath = ""
error = await wait { done in
    posts.createPost(imageData: bobImage, caption: "bob's first") { post, error in
        bobPostID = post?.identifier ?? ""
        bobImagePath = post?.image ?? ""
        done(error)
    }
}
check("bob posts a photo", error == nil && !bobPostID.isEmpty && bobImagePath == "images/\(bobPostID).jpg",
      "\(describe(error)), image \(bobImagePath)")
check("log out bob", users.logOut() && Auth.auth().currentUser == nil)

// MARK: Refused log-ins

let login = LoginViewModel()
login.mode = .logIn
login.email = aliceEmail
login.password = "not the password"
error = await wait { done in login.submit { error in done(error) } }
check("wrong password fails with wrongPassword or invalidCredential",
      [.wrongPassword, .invalidCredential].contains(authCode(error)) && login.invalidField == "password",
      "\(describe(error)), field \(login.invalidField ?? "none")")

error = await wait { done in
    users.logIn(email: "nobody-\(run)@example.com", password: password) { _, error in done(error) }
}
check("unknown email fails with userNotFound or invalidCredential",
      [.userNotFound, .invalidCredential].contains(authCode(error)), describe(error))
check("a refused log-in leaves nobody signed in", Auth.auth().currentUser == nil)

// MARK: Alice's profile (async/await and Codable)

do {
    let alice = try await users.logIn(email: aliceEmail, password: password)
    check("log in alice (async)", alice.username == "alice" && alice.bio == "Takes photos" && alice.identifier == aliceID,
          "\(alice)")
} catch {
    check("log in alice (async)", false, describe(error))
}

var updatedBio = ""
error = await wait { done in
    users.updateProfile(username: "alice", bio: "Takes photos of bob", url: "https://alice.example/photos") { user, error in
        updatedBio = user?.bio ?? ""
        done(error)
    }
}
check("update profile", error == nil && updatedBio == "Takes photos of bob" && Auth.auth().currentUser?.displayName == "alice",
      "\(describe(error)), bio \(updatedBio), displayName \(Auth.auth().currentUser?.displayName ?? "nil")")

do {
    var profile = try await users.fetchUser(identifier: aliceID)
    profile.url = "https://alice.example/codable"
    try await users.saveProfile(profile)
    let saved = try await users.fetchUser(identifier: aliceID)
    check("save the profile with setValue(from:) and read it with data(as:)",
          saved.url == "https://alice.example/codable" && saved.username == "alice" && saved.bio == "Takes photos of bob", "\(saved)")
} catch {
    check("save the profile with setValue(from:) and read it with data(as:)", false, describe(error))
}

// MARK: Following

var found: [String] = []
found = await wait { done in
    users.searchUsers(username: "bob") { results in done(results.compactMap { $0.identifier }) }
}
check("search users by username", found == [bobID], "found \(found)")

error = await wait { done in
    users.fetchUser(identifier: bobID) { bob in
        guard let bob else { return done(TimelineError.notFound) }
        users.follow(bob) { error in done(error) }
    }
}
var followed: [String] = await wait { done in users.followedIdentifiers(of: aliceID) { done($0) } }
check("alice follows bob", error == nil && followed == [bobID] && users.currentUser?.followedIdentifiers == [bobID],
      "\(describe(error)), follows \(followed)")

// MARK: Posts and the timeline

var alicePostID = ""
var aliceImagePath = ""
error = await wait { done in
    posts.createPost(imageData: aliceImage, caption: "alice's first") { post, error in
        alicePostID = post?.identifier ?? ""
        aliceImagePath = post?.image ?? ""
        done(error)
    }
}
check("alice posts a photo", error == nil && !alicePostID.isEmpty && alicePostID > bobPostID, describe(error))

let timeline = TimelineViewModel()
var changes = 0
timeline.onPostsChanged = { _ in changes += 1 }
await wait { done in timeline.refresh { done(()) } }
var shown = (0..<timeline.numberOfRows).map { timeline.post(at: $0).identifier ?? "" }
check("alice's timeline has both posts, newest first", shown == [alicePostID, bobPostID] && changes == 1,
      "shown \(shown), expected \([alicePostID, bobPostID])")

// MARK: Comments and likes

@MainActor
func fetchPostSummary(_ identifier: String) async -> (exists: Bool, comments: [String], likes: Int, likedByAlice: Bool) {
    await wait { done in
        posts.fetchPost(identifier: identifier) { post in
            guard let post else { return done((false, [], 0, false)) }
            done((true, post.comments.map(\.text), post.likeCount, post.isLiked(by: aliceID)))
        }
    }
}

var commentIDs: [String] = []
for text in ["nice photo", "to be deleted"] {
    error = await wait { done in
        posts.fetchPost(identifier: bobPostID) { post in
            guard let post else { return done(TimelineError.notFound) }
            posts.addComment(text, to: post) { comment, error in
                if let identifier = comment?.identifier { commentIDs.append(identifier) }
                done(error)
            }
        }
    }
    check("comment \"\(text)\" on bob's post", error == nil, describe(error))
}

error = await wait { done in
    posts.fetchPost(identifier: bobPostID) { post in
        guard let post else { return done(TimelineError.notFound) }
        posts.like(post) { _, error in done(error) }
    }
}
check("like bob's post", error == nil, describe(error))

var summary = await fetchPostSummary(bobPostID)
check("bob's post has 2 comments and 1 like", summary.comments == ["nice photo", "to be deleted"] && summary.likes == 1 && summary.likedByAlice,
      "\(summary)")

await wait { done in timeline.refresh { done(()) } }
let bobRow = (0..<timeline.numberOfRows).first { timeline.post(at: $0).identifier == bobPostID }
check("the timeline shows the counts", bobRow.map { timeline.summary(at: $0) } == "1 like · 2 comments",
      bobRow.map { timeline.summary(at: $0) } ?? "bob's post not shown")

// MARK: Images

var downloadError: (any Error)? = nil
var downloaded: Data? = nil
downloadError = await wait { done in
    images.downloadImage(atPath: bobImagePath) { data, error in
        downloaded = data
        done(error)
    }
}
check("download bob's image bytes back", downloadError == nil && downloaded == bobImage,
      "\(describe(downloadError)), \(downloaded?.count ?? 0) bytes for \(bobImage.count)")

let resultBytes: Int = await wait { done in
    images.fetchImage(atPath: aliceImagePath) { result in
        switch result {
        case .success(let data): done(data == aliceImage ? data.count : -1)
        case .failure: done(-2)
        }
    }
}
check("download alice's image with the Result callback", resultBytes == aliceImage.count, "got \(resultBytes)")

let link: String = await wait { done in images.downloadURL(forPath: bobImagePath) { url, _ in done(url?.absoluteString ?? "") } }
check("download URL", link.contains("alt=media") && link.contains("token="), link)

// MARK: Deleting

if let bobRow {
    await wait { done in timeline.toggleLike(at: bobRow) { done(()) } }
}
summary = await fetchPostSummary(bobPostID)
check("delete a like (double-tap again)", summary.likes == 0 && !summary.likedByAlice
      && bobRow.map { timeline.summary(at: $0) } == "0 likes · 2 comments", "\(summary)")

error = await wait { done in
    posts.fetchPost(identifier: bobPostID) { post in
        guard let comment = post?.comments.first(where: { $0.text == "to be deleted" }) else { return done(TimelineError.notFound) }
        posts.deleteComment(comment) { error in done(error) }
    }
}
summary = await fetchPostSummary(bobPostID)
check("delete a comment", error == nil && summary.comments == ["nice photo"], "\(describe(error)), \(summary)")

error = await wait { done in
    posts.fetchPost(identifier: alicePostID) { post in
        guard let post else { return done(TimelineError.notFound) }
        posts.deletePost(post) { error in done(error) }
    }
}
summary = await fetchPostSummary(alicePostID)
check("delete alice's post", error == nil && !summary.exists, "\(describe(error)), \(summary)")

var missingMessage = ""
downloadError = await wait { done in
    images.downloadImage(atPath: aliceImagePath) { _, error in
        if let error { missingMessage = ImageController.message(for: error) }
        done(error)
    }
}
check("the deleted post's image fails with objectNotFound",
      downloadError.map(ImageController.isObjectNotFound) == true && missingMessage == "This photo no longer exists.",
      "\(describe(downloadError)), message \(missingMessage)")

do {
    _ = try await Storage.storage().reference().child("images/never-uploaded-\(run).jpg").data(maxSize: 1024)
    downloadError = nil
} catch {
    downloadError = error
}
var isNotFound = false
if let error = downloadError as NSError?, error.domain == StorageErrorDomain,
   StorageErrorCode(rawValue: error.code) == .objectNotFound {
    isNotFound = true
}
switch downloadError as? StorageError {
case .objectNotFound?:
    break
default:
    isNotFound = false
}
check("a missing object fails with objectNotFound (NSError and StorageError)", isNotFound, describe(downloadError))

await wait { done in timeline.refresh { done(()) } }
shown = (0..<timeline.numberOfRows).map { timeline.post(at: $0).identifier ?? "" }
check("the timeline no longer shows the deleted post", shown == [bobPostID], "shown \(shown)")

// MARK: Token and session

var project = ""
do {
    let info = try await users.sessionInfo()
    project = info.claims["aud"] as? String ?? ""
    check("ID token result: claims and sign-in provider",
          info.uid == aliceID && info.email == aliceEmail && info.signInProvider == "password"
          && info.claims["user_id"] as? String == aliceID && info.expirationDate > Date(),
          "uid \(info.uid), email \(info.email ?? "nil"), provider \(info.signInProvider)")
} catch {
    check("ID token result: claims and sign-in provider", false, describe(error))
}

let provider: String = await wait { done in
    users.fetchSessionInfo(forcingRefresh: true) { info, _ in done(info?.signInProvider ?? "") }
}
check("ID token result, completion form (forced refresh)", provider == "password", "provider \(provider)")

do {
    try await users.sendPasswordReset(email: aliceEmail)
    check("send a password reset email", true)
} catch {
    check("send a password reset email", false, describe(error))
}

// The reset email's link, from the emulator's mailbox (GET /emulator/v1/projects/<project>/oobCodes), opens
// the "choose a new password" screen: the code is checked, the password set, and alice logs in with it.
do {
    var mailbox = URLComponents(string: arguments[1])!
    mailbox.path = "/emulator/v1/projects/\(project)/oobCodes"
    mailbox.query = nil
    let (body, _) = try await URLSession.shared.data(from: mailbox.url!)
    let codes = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["oobCodes"] as? [[String: Any]] ?? []
    let code = codes.last { $0["email"] as? String == aliceEmail && $0["requestType"] as? String == "PASSWORD_RESET" }?["oobCode"] as? String
    let reset = LoginViewModel()
    let resetError: String? = await wait { done in
        reset.resetPassword(code: code ?? "", newPassword: "a new password 2") { error in done(error.map { describe($0) }) }
    }
    check("confirm the password reset and log in with the new password",
          code != nil && resetError == nil && Auth.auth().currentUser?.uid == aliceID, resetError ?? "no reset code for \(aliceEmail)")
    var reused: AuthErrorCode?
    do { try await Auth.auth().confirmPasswordReset(withCode: code ?? "", newPassword: "another") } catch { reused = authCode(error) }
    check("a used reset code fails with invalidActionCode", reused == .invalidActionCode, "\(String(describing: reused))")
} catch {
    check("confirm the password reset and log in with the new password", false, describe(error))
}

var sentToLogin = false
timeline.onSignedOut = { sentToLogin = true }
let signedOut = users.logOut()
await wait { done in timeline.refresh { done(()) } }
check("sign out", signedOut && Auth.auth().currentUser == nil && sentToLogin && timeline.numberOfRows == 0)

print("firebase-port: \(passed) passed, \(failed) failed")
exit(failed == 0 ? 0 : 1)
