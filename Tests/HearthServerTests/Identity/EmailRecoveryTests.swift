import Foundation
import HearthCore
import HearthIdentity
import HearthRealtimeClient
import HearthSQLite
import HearthStorage
@testable import HearthServer
import HTTPTypes
import Testing

/// Undoing an address change (`RECOVER_EMAIL`): the verified address an account leaves is mailed a
/// link that moves it back, ends every session, clears the password, and outlives a restart.
@Suite struct EmailRecoveryTests {
    /// The newest mail of `type` in the outbox (which lists the newest first), and its link's code.
    static func lastMail(_ users: InMemoryUserStore, _ type: String) async throws -> (mail: EmailMessage, code: String) {
        let mail = try #require(try await users.outbox(project: IdentityTestServer.project, limit: 200).first { $0.requestType == type })
        let code = try #require(URLComponents(string: mail.link)?.queryItems?.first { $0.name == "oobCode" }?.value)
        return (mail, code)
    }

    /// The code of the newest `type` mail to `address`.
    static func lastCode(_ users: any UserStore, to address: String, _ type: String = "RECOVER_EMAIL") async throws -> String? {
        let mail = try await users.outbox(project: IdentityTestServer.project, limit: 200).first { $0.to == address && $0.requestType == type }
        return mail.flatMap { URLComponents(string: $0.link)?.queryItems?.first { $0.name == "oobCode" }?.value }
    }

    static func refresh(_ auth: IdentityClient, _ token: String) async throws -> Reply {
        try await auth.send(
            .post, "/securetoken.googleapis.com/v1/token?key=\(IdentityClient.key)", "grant_type=refresh_token&refresh_token=\(token)",
            headers: [.contentType: "application/x-www-form-urlencoded"]
        )
    }

    /// Marks an account's address verified, as following a verification link would.
    static func verify(_ auth: IdentityClient, _ account: JSONValue) async throws {
        let localId = try #require(account["localId"]?.stringValue)
        #expect(try await auth.admin("accounts:update", #"{"localId":"\#(localId)","emailVerified":true}"#).status == .ok)
    }

    /// With enumeration protection on (the default), an account moves only by a verified change: the
    /// address it left is told, and its link takes the account back from whoever moved it.
    @Test func aVerifiedChangeMailsTheAddressItLeftAnUndo() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer().run(users: users) { auth async throws in
            let owner = try await auth.signUp("owner@example.com")
            try await Self.verify(auth, owner)
            let ownerToken = try #require(owner["idToken"]?.stringValue)
            // Someone with the owner's session moves the account to an address they hold, keeping a
            // second change code for later.
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(ownerToken)","newEmail":"thief@example.com"}"#).status == .ok)
            let spare = try await Self.lastMail(users, "VERIFY_AND_CHANGE_EMAIL")
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(ownerToken)","newEmail":"thief@example.com"}"#).status == .ok)
            let change = try await Self.lastMail(users, "VERIFY_AND_CHANGE_EMAIL")
            #expect(spare.code != change.code)
            let moved = try await auth.post("accounts:update", #"{"oobCode":"\#(change.code)"}"#)
            #expect(moved.string("email") == "thief@example.com", "\(moved.body)")
            let thief = try await auth.post("accounts:signInWithPassword", #"{"email":"thief@example.com","password":"secret123","returnSecureToken":true}"#)
            let thiefRefresh = try #require(thief.string("refreshToken"))
            let thiefToken = try #require(thief.string("idToken"))

            let (notice, code) = try await Self.lastMail(users, "RECOVER_EMAIL")
            #expect(notice.to == "owner@example.com")
            #expect(notice.subject == "Your sign-in email was changed for \(IdentityTestServer.project)")
            #expect(notice.body.contains("was changed to thief@example.com") && notice.body.contains(notice.link))
            #expect(notice.link.contains("/__/auth/action?mode=recoverEmail&oobCode="))
            #expect(notice.link.contains("&apiKey=\(IdentityClient.key)"))

            // Checking it tells both addresses and uses nothing; it sets no password.
            for _ in 0..<2 {
                let check = try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)"}"#)
                #expect(check.string("requestType") == "RECOVER_EMAIL", "\(check.body)")
                #expect(check.string("email") == "owner@example.com" && check.string("newEmail") == "thief@example.com")
            }
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)","newPassword":"taken-over"}"#).authError == "INVALID_OOB_CODE")

            let restored = try await auth.post("accounts:update", #"{"oobCode":"\#(code)"}"#)
            #expect(restored.string("email") == "owner@example.com", "\(restored.body)")
            #expect(restored.json?["emailVerified"] == .bool(true))
            // Every session ends, the intruder's too: his refresh token, and his ID token of this very
            // second (which `validSince`, in whole seconds, would otherwise still let through).
            #expect(try await Self.refresh(auth, thiefRefresh).authError == "TOKEN_EXPIRED")
            #expect(try await auth.post("accounts:lookup", #"{"idToken":"\#(thiefToken)"}"#).authError == "TOKEN_EXPIRED")
            // The password he may have set is gone: the owner chooses a new one by a reset.
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"owner@example.com","password":"secret123"}"#).status != .ok)
            #expect(try await auth.post("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"owner@example.com"}"#).status == .ok)
            let reset = try await Self.lastMail(users, "PASSWORD_RESET")
            #expect(reset.mail.to == "owner@example.com")
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(reset.code)","newPassword":"mine-again"}"#).status == .ok)
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"owner@example.com","password":"mine-again"}"#).status == .ok)
            // The change code kept from before does not move the account again.
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(spare.code)"}"#).authError == "INVALID_OOB_CODE")
            // Once.
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(code)"}"#).authError == "INVALID_OOB_CODE")
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)"}"#).authError == "INVALID_OOB_CODE")
            // A code that names the account but is not one of its undos.
            let forged = code.split(separator: ".")[0] + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(forged)"}"#).authError == "INVALID_OOB_CODE")
        }
    }

    /// The undo ends the intruder's open realtime session at once, without the grace a password change
    /// leaves an SDK to sign in again (here a minute, far past the wait for the expiry).
    @Test func anUndoEndsOpenRealtimeSessionsAtOnce() async throws {
        let users = InMemoryUserStore()
        let server = IdentityTestServer {
            $0.reauthenticationGrace = .seconds(60)
            $0.identity.emailEnumerationProtection = false
        }
        try await server.runLive(users: users) { auth, port async throws in
            try await auth.send(.put, "/.settings/rules.json?ns=demo", TokenRevocationTests.rules, headers: TestServer.admin)
            let owner = try await auth.signUp("owner@example.com")
            try await Self.verify(auth, owner)
            let moved = try await auth.post("accounts:update", #"{"idToken":"\#(try #require(owner["idToken"]?.stringValue))","email":"thief@example.com","returnSecureToken":true}"#)
            let connection = try await TokenRevocationTests.signedIn(port: port, token: try #require(moved.string("idToken")))
            let code = try #require(try await Self.lastCode(users, to: "owner@example.com"))
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(code)"}"#).status == .ok)
            #expect(try await connection.receive(timeout: .seconds(10)) == #"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"Auth token is expired."}}}"#)
            await connection.close()
        }
    }

    /// Kept with the account, the undos outlive a restart; each undoes its change and those after it,
    /// so the one an intruder mails himself by moving the account again cannot wipe the owner's.
    @Test func undosOutliveARestartAndALaterOneCannotWipeAnEarlierOne() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-recovery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = IdentityTestServer { $0.identity.emailEnumerationProtection = false }
        try await server.run(users: try SQLiteUserStore(directory: directory)) { auth async throws in
            let owner = try await auth.signUp("owner@example.com")
            var token = try #require(owner["idToken"]?.stringValue)
            for address in ["first@example.com", "second@example.com"] {
                try await Self.verify(auth, owner)
                let moved = try await auth.post("accounts:update", #"{"idToken":"\#(token)","email":"\#(address)","returnSecureToken":true}"#)
                token = try #require(moved.string("idToken"), "\(moved.body)")
            }
        }
        // A new server on the accounts as stored on disk: no code is held in memory any more.
        let users = try SQLiteUserStore(directory: directory)
        let mails = try await users.outbox(project: IdentityTestServer.project, limit: 50).filter { $0.requestType == "RECOVER_EMAIL" }.reversed()
        #expect(mails.map(\.to) == ["owner@example.com", "first@example.com"])
        let (ownersUndo, intrudersUndo) = (try #require(try await Self.lastCode(users, to: "owner@example.com")), try #require(try await Self.lastCode(users, to: "first@example.com")))
        try await server.run(users: users) { auth async throws in
            let back = try await auth.post("accounts:update", #"{"oobCode":"\#(intrudersUndo)"}"#)
            #expect(back.string("email") == "first@example.com", "\(back.body)")
            let restored = try await auth.post("accounts:update", #"{"oobCode":"\#(ownersUndo)"}"#)
            #expect(restored.string("email") == "owner@example.com", "\(restored.body)")
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(intrudersUndo)"}"#).authError == "INVALID_OOB_CODE")
        }
        // The other order: the owner's undo drops the later ones.
        let again = InMemoryUserStore()
        try await server.run(users: again) { auth async throws in
            let owner = try await auth.signUp("owner@example.com")
            var token = try #require(owner["idToken"]?.stringValue)
            for address in ["first@example.com", "second@example.com"] {
                try await Self.verify(auth, owner)
                token = try #require(try await auth.post("accounts:update", #"{"idToken":"\#(token)","email":"\#(address)","returnSecureToken":true}"#).string("idToken"))
            }
            // Linking another address and password (`accounts:signUp` with the ID token) moves it too.
            try await Self.verify(auth, owner)
            let relinked = try await auth.post("accounts:signUp", #"{"idToken":"\#(token)","email":"third@example.com","password":"another123"}"#)
            #expect(relinked.status == .ok, "\(relinked.body)")
            let undos = try await again.outbox(project: IdentityTestServer.project, limit: 50).filter { $0.requestType == "RECOVER_EMAIL" }.reversed()
            #expect(undos.map(\.to) == ["owner@example.com", "first@example.com", "second@example.com"])
            let codes = undos.compactMap { URLComponents(string: $0.link)?.queryItems?.first { $0.name == "oobCode" }?.value }
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(codes[0])"}"#).string("email") == "owner@example.com")
            for later in codes.dropFirst() {
                #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(later)"}"#).authError == "INVALID_OOB_CODE")
            }
        }
    }

    /// An unverified account that took the address meanwhile loses it to the undo (the link proves the
    /// mailbox); a verified one keeps it (`EMAIL_EXISTS`, the undo kept). An address never verified, the
    /// admin's changes and an anonymous account's first address get no mail; the emulator lists undos.
    @Test func aTakenAddressTheAdminAndTheEmulator() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer(emulator: true).run(users: users) { auth async throws in
            let owner = try await auth.signUp("owner@example.com")
            try await Self.verify(auth, owner)
            let token = try #require(owner["idToken"]?.stringValue)
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(token)","email":"moved@example.com"}"#).status == .ok)
            let listed = try #require(try await OutOfBandTests.pending(auth).first { $0.type == "RECOVER_EMAIL" })
            #expect(listed.email == "owner@example.com")
            // Whoever moved it signs up with the old address, unverified: the undo takes it back.
            let squatter = try await auth.signUp("owner@example.com")
            let restored = try await auth.post("accounts:update", #"{"oobCode":"\#(listed.code)"}"#)
            #expect(restored.string("email") == "owner@example.com" && restored.string("localId") == owner["localId"]?.stringValue, "\(restored.body)")
            #expect(try await Self.refresh(auth, try #require(squatter["refreshToken"]?.stringValue)).authError == "TOKEN_EXPIRED")
            let squatterNow = try await auth.admin("accounts:lookup", #"{"localId":["\#(squatter["localId"]!.stringValue!)"]}"#)
            #expect(squatterNow.json?["users"]?.arrayValue?.count == 1 && squatterNow.json?["users"]?.arrayValue?.first?["email"] == nil, "\(squatterNow.body)")

            // A verified holder keeps it.
            let second = try await auth.signUp("second@example.com")
            try await Self.verify(auth, second)
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(try #require(second["idToken"]?.stringValue))","email":"elsewhere@example.com"}"#).status == .ok)
            let undo = try #require(try await OutOfBandTests.pending(auth).first { $0.type == "RECOVER_EMAIL" && $0.email == "second@example.com" })
            let holder = try await auth.signUp("second@example.com")
            try await Self.verify(auth, holder)
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(undo.code)"}"#).authError == "EMAIL_EXISTS")
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(undo.code)"}"#).string("requestType") == "RECOVER_EMAIL")

            let before = try await users.outbox(project: IdentityTestServer.project, limit: 200).count
            // An address the account never verified: the mail could reach a stranger.
            let unverified = try await auth.signUp("unverified@example.com")
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(try #require(unverified["idToken"]?.stringValue))","email":"other@example.com"}"#).status == .ok)
            let localId = try #require(owner["localId"]?.stringValue)
            #expect(try await auth.admin("accounts:update", #"{"localId":"\#(localId)","email":"admin-set@example.com"}"#).status == .ok)
            let anonymous = try #require(try await auth.post("accounts:signUp", #"{"returnSecureToken":true}"#).string("idToken"))
            #expect(try await auth.post("accounts:update", #"{"idToken":"\#(anonymous)","email":"first@example.com","password":"secret123"}"#).status == .ok)
            #expect(try await users.outbox(project: IdentityTestServer.project, limit: 200).count == before)
        }
    }

    /// What whoever holds a session might try so that the owner's undo stops working: many changes
    /// (more than the undos an account keeps), removing the address and then setting another, the
    /// admin's rescue (after which the intruder's own undo must not take the account back), and moving
    /// it back himself (the undo still signs him out).
    @Test func anIntruderCannotOutlastTheOwnersUndo() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer { $0.identity.emailEnumerationProtection = false }.run(users: users) { auth async throws in
            func move(_ token: String, _ body: String) async throws -> String {
                let moved = try await auth.post("accounts:update", #"{"idToken":"\#(token)",\#(body),"returnSecureToken":true}"#)
                #expect(moved.status == .ok, "\(moved.body)")
                return moved.string("idToken") ?? token
            }
            func undo(to address: String) async throws -> String { try #require(try await Self.lastCode(users, to: address)) }

            // Twelve moves, each from an address the intruder verified: more than the ten undos kept.
            let one = try await auth.signUp("one@example.com")
            var token = try #require(one["idToken"]?.stringValue)
            for step in 1...12 {
                try await Self.verify(auth, one)
                token = try await move(token, #""email":"one-\#(step)@example.com""#)
            }
            let restored = try await auth.post("accounts:update", #"{"oobCode":"\#(try await undo(to: "one@example.com"))"}"#)
            #expect(restored.string("email") == "one@example.com", "\(restored.body)")

            let two = try await auth.signUp("two@example.com")
            try await Self.verify(auth, two)
            token = try await move(try #require(two["idToken"]?.stringValue), #""deleteProvider":["password"]"#)
            let removal = try #require(try await users.outbox(project: IdentityTestServer.project, limit: 200).first { $0.to == "two@example.com" && $0.requestType == "RECOVER_EMAIL" })
            #expect(removal.body.contains("was removed from your account"))
            token = try await move(token, #""email":"thief-two@example.com""#)
            let check = try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(try await undo(to: "two@example.com"))"}"#)
            #expect(check.string("email") == "two@example.com" && check.json?["newEmail"] == nil, "\(check.body)")
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(try await undo(to: "two@example.com"))"}"#).string("email") == "two@example.com")

            let three = try await auth.signUp("three@example.com")
            try await Self.verify(auth, three)
            token = try await move(try #require(three["idToken"]?.stringValue), #""email":"thief-three@example.com""#)
            try await Self.verify(auth, three)
            token = try await move(token, #""email":"thief-three-b@example.com""#)
            #expect(try await auth.admin("accounts:update", #"{"localId":"\#(three["localId"]!.stringValue!)","email":"three@example.com"}"#).status == .ok)
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(try await undo(to: "thief-three@example.com"))"}"#).authError == "INVALID_OOB_CODE")

            // Relinking the same address (with another password) keeps it verified, so it still gets
            // its undo when the account moves on.
            let five = try await auth.signUp("five@example.com")
            try await Self.verify(auth, five)
            let relinked = try await auth.post("accounts:signUp", #"{"idToken":"\#(try #require(five["idToken"]?.stringValue))","email":"five@example.com","password":"intruders1"}"#)
            #expect(relinked.status == .ok, "\(relinked.body)")
            let afterRelink = try await auth.admin("accounts:lookup", #"{"localId":["\#(five["localId"]!.stringValue!)"]}"#)
            #expect(afterRelink.json?["users"]?.arrayValue?.first?["emailVerified"] == .bool(true), "\(afterRelink.body)")
            _ = try await move(try #require(relinked.string("idToken")), #""email":"thief-five@example.com""#)
            #expect(try await Self.lastCode(users, to: "five@example.com") != nil)

            let four = try await auth.signUp("four@example.com")
            try await Self.verify(auth, four)
            token = try await move(try #require(four["idToken"]?.stringValue), #""email":"thief-four@example.com""#)
            token = try await move(token, #""email":"four@example.com""#)
            let intruder = try await auth.post("accounts:signInWithPassword", #"{"email":"four@example.com","password":"secret123","returnSecureToken":true}"#)
            #expect(try await auth.post("accounts:update", #"{"oobCode":"\#(try await undo(to: "four@example.com"))"}"#).string("email") == "four@example.com")
            #expect(try await Self.refresh(auth, try #require(intruder.string("refreshToken"))).authError == "TOKEN_EXPIRED")
        }
    }
}
