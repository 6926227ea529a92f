import Foundation
import HearthCore
@testable import HearthIdentity
import HearthStorage
import Testing

/// Users of an emulators:export `accounts.json`: the Auth emulator's fakeHash passwords become
/// Hearth's scrypt, Hearth's own hashes are kept, and nothing is dropped silently.
@Suite struct EmulatorAccountsTests {
    let hasher = PasswordHasher.fastForTests

    @Test func anEmulatorUserSignsInWithItsPasswordAfterTheImport() async throws {
        let file = try JSONValue(parsing: """
            {"kind": "identitytoolkit#DownloadAccountResponse", "users": [
              {"localId": "alice", "email": "Alice@Example.com", "emailVerified": true, "displayName": "Alice",
               "salt": "fakeSaltA1", "passwordHash": "fakeHash:salt=fakeSaltA1:password=se:cret",
               "createdAt": "1700000000000", "lastLoginAt": "1700000500000", "validSince": "1700000000",
               "lastRefreshAt": "2023-11-14T22:21:40.000Z",
               "providerUserInfo": [{"providerId": "password", "rawId": "alice@example.com"}]},
              {"localId": "bob", "disabled": true, "customAttributes": "{\\"admin\\":true}",
               "providerUserInfo": [{"providerId": "google.com", "rawId": "1234", "email": "bob@example.com"}]}
            ]}
            """)
        let store = InMemoryUserStore()
        let report = try await EmulatorAccounts.importFile(file, store: store, project: "demo-app", hasher: hasher)
        #expect(report.imported == 2)
        #expect(report.problems.isEmpty)
        let alice = try #require(try await store.user(project: "demo-app", localId: "alice"))
        #expect(alice.email == "alice@example.com")
        #expect(alice.createdAt == 1_700_000_000_000 && alice.lastLoginAt == 1_700_000_500_000 && alice.validSince == 1_700_000_000)
        #expect(alice.lastRefreshAt == 1_700_000_500_000)
        // The plain text is everything after the prefix, colons included.
        #expect(await hasher.verify("se:cret", against: try #require(alice.passwordHash)))
        #expect(await !hasher.verify("secret", against: try #require(alice.passwordHash)))
        let bob = try #require(try await store.user(project: "demo-app", localId: "bob"))
        #expect(bob.disabled && bob.customAttributes == #"{"admin":true}"# && bob.passwordHash == nil)
        #expect(bob.linkedProviders == [LinkedProvider(providerId: "google.com", rawId: "1234", email: "bob@example.com")])
    }

    @Test func hearthsOwnExportComesBackWithTheSameHash() async throws {
        var user = UserRecord(localId: "carol", createdAt: 1_700_000_000_000)
        user.email = "carol@example.com"
        user.passwordHash = try await hasher.hash("pw-123456")
        user.validSince = 1_700_000_001
        let source = InMemoryUserStore()
        try await source.create(user, project: "p", issuing: nil)
        let exported = try await EmulatorAccounts.export(store: source, project: "p")
        let target = InMemoryUserStore()
        let report = try await EmulatorAccounts.importFile(exported, store: target, project: "p", hasher: hasher)
        #expect(report.imported == 1)
        let back = try #require(try await target.user(project: "p", localId: "carol"))
        #expect(back.passwordHash == user.passwordHash)
        #expect(back.validSince == user.validSince && back.email == user.email && back.createdAt == user.createdAt)
    }

    @Test func whatCannotBeImportedIsReported() async throws {
        let store = InMemoryUserStore()
        var existing = UserRecord(localId: "taken", createdAt: 1)
        existing.email = "taken@example.com"
        try await store.create(existing, project: "p", issuing: nil)
        let file = try JSONValue(parsing: """
            {"users": [
              {"localId": "taken"},
              {"localId": "dup", "email": "taken@example.com"},
              {"email": "no-id@example.com"},
              {"localId": "hashed", "passwordHash": "c29tZS1zY3J5cHQtaGFzaA==", "salt": "c2FsdA=="}
            ]}
            """)
        let report = try await EmulatorAccounts.importFile(file, store: store, project: "p", hasher: hasher)
        // The user with a foreign hash is imported (without a password) and reported; the others are refused.
        #expect(report.imported == 1)
        #expect(report.problems.count == 4)
        #expect(try await store.user(project: "p", localId: "hashed")?.passwordHash == nil)
    }
}
