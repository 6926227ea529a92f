import Foundation
import HearthAccess
import HearthCore
@testable import HearthIdentity
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import Testing

/// `accounts:batchCreate`: users imported with Firebase's modified-scrypt hashes sign in with their
/// old passwords, and their hashes are replaced by Hearth's own at that sign-in.
@Suite struct ImportTests {
    // The published test vector of firebase/scrypt.
    static let signerKey = "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=="
    static let saltSeparator = "Bw=="
    static let salt = "42xEC+ixf3L2lw=="
    static let hash = "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="

    static func bytes(_ base64: String) -> [UInt8] { Array(Data(base64Encoded: base64)!) }

    @Test func firebasesModifiedScryptMatchesItsPublishedVector() throws {
        var imported = FirebaseScryptHash(
            rounds: 8, memoryCost: 14, saltSeparator: Self.bytes(Self.saltSeparator), signerKey: Self.bytes(Self.signerKey),
            salt: Self.bytes(Self.salt), hash: Self.bytes(Self.hash)
        )
        #expect(try imported.matches("user1password"))
        #expect(try !imported.matches("user1passwore"))
        #expect(FirebaseScryptHash(imported.stored) == imported)
        imported.saltSeparator = []
        #expect(try !imported.matches("user1password"))
    }

    @Test func importedUsersSignInWithTheirOldPasswordsAndAreUpgraded() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer().run(users: users) { auth async throws in
            // URL-safe base64, as firebase-admin sends it.
            func urlSafe(_ text: String) -> String { text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
            let body = #"""
                {"hashAlgorithm":"SCRYPT","signerKey":"\#(urlSafe(Self.signerKey))","saltSeparator":"\#(Self.saltSeparator)","rounds":8,"memoryCost":14,
                 "users":[
                   {"localId":"imported-1","email":"Old@Example.com","passwordHash":"\#(urlSafe(Self.hash))","salt":"\#(urlSafe(Self.salt))","displayName":"Old","emailVerified":true},
                   {"localId":"imported-2","email":"not-an-email"},
                   {"localId":"imported-3","email":"old@example.com"},
                   {"localId":"imported-4","customAttributes":"{\"admin\":true}"}
                 ]}
                """#
            #expect(try await auth.post("accounts:batchCreate", body).authError != nil, "clients may not import")
            let reply = try await auth.send(.post, "/identitytoolkit.googleapis.com/v1/projects/\(IdentityTestServer.project)/accounts:batchCreate", body, headers: TestServer.admin)
            #expect(reply.status == .ok, "\(reply.body)")
            guard case .array(let errors)? = reply.json?["error"] else { Issue.record("no per-user errors: \(reply.body)"); return }
            #expect(errors.compactMap { $0["index"] } == [.number(1), .number(2)])

            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"old@example.com","password":"wrong-password"}"#).authError != nil)
            let signedIn = try await auth.post("accounts:signInWithPassword", #"{"email":"old@example.com","password":"user1password","returnSecureToken":true}"#)
            #expect(signedIn.status == .ok, "\(signedIn.body)")
            #expect(signedIn.string("localId") == "imported-1")
            #expect(signedIn.string("displayName") == "Old")
            // The hash is now Hearth's own, and the password still works.
            let stored = try await users.user(project: IdentityTestServer.project, localId: "imported-1")?.passwordHash
            #expect(stored?.hasPrefix("scrypt$") == true)
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"old@example.com","password":"user1password"}"#).status == .ok)
            let claims = try await auth.admin("accounts:lookup", #"{"localId":["imported-4"]}"#)
            #expect(claims.body.contains("admin"))
        }
    }
}

/// Identity-provider links (`providerUserInfo` entries such as `google.com`) of imported users: kept,
/// shown by lookup, found by `federatedUserId`, removed by `deleteProvider`.
@Suite struct LinkedProviderTests {
    @Test func importedLinksAreShownFoundAndRemovable() async throws {
        try await IdentityTestServer().run { auth async throws in
            let imported = try await auth.admin("accounts:batchCreate", #"""
                {"users":[
                  {"localId":"linked","email":"l@example.com","providerUserInfo":[
                    {"providerId":"google.com","rawId":"g-123","email":"l@gmail.com","displayName":"L"},
                    {"providerId":"password","rawId":"l@example.com"}]},
                  {"localId":"broken","providerUserInfo":[{"providerId":"apple.com"}]}]}
                """#)
            #expect(imported.json?["error"]?.arrayValue?.map { $0["index"] } == [.number(1)])
            let found = try await auth.admin("accounts:lookup", #"{"federatedUserId":[{"providerId":"google.com","rawId":"g-123"}]}"#)
            let user = try #require(found.json?["users"]?.arrayValue?.first)
            #expect(user["localId"] == .string("linked"))
            let providers = user["providerUserInfo"]?.arrayValue ?? []
            #expect(providers.map { $0["providerId"] } == [.string("google.com")])  // no password: none was imported
            #expect(providers.first?["federatedId"] == .string("g-123") && providers.first?["email"] == .string("l@gmail.com"))
            #expect(try await auth.admin("accounts:lookup", #"{"federatedUserId":[{"providerId":"google.com","rawId":"g-999"}]}"#).json?["users"] == nil)

            #expect(try await auth.admin("accounts:update", #"{"localId":"linked","deleteProvider":["google.com"]}"#).status == .ok)
            let after = try await auth.admin("accounts:lookup", #"{"localId":["linked"]}"#)
            #expect(after.json?["users"]?.arrayValue?.first?["providerUserInfo"]?.arrayValue?.isEmpty == true)
            #expect(try await auth.admin("accounts:lookup", #"{"federatedUserId":[{"providerId":"google.com","rawId":"g-123"}]}"#).json?["users"] == nil)
        }
    }

    @Test func usersWithoutLinksUpdateInTheSQLiteStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-links-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await IdentityTestServer().run(users: try SQLiteUserStore(directory: directory)) { auth async throws in
            let created = try await auth.admin("accounts", "{}")
            let uid = try #require(created.string("localId"))
            let updated = try await auth.admin("accounts:update", #"{"localId":"\#(uid)","email":"p@example.com","phoneNumber":"+15555550123","displayName":"P","photoUrl":"https://example.com/p.png","password":"secret1","emailVerified":true}"#)
            #expect(updated.status == .ok, "\(updated.body)")
            #expect(updated.json?["providerUserInfo"]?.arrayValue?.count == 2)
        }
    }
}
