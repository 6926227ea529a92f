import HearthCore
import HearthEngine
import HearthRealtimeClient
import HearthStorage
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

@Suite struct AccessTests {
    @Test func newDatabasesAreLockedByDefault() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/a.json", "1")
            var reply = try await client.call(.get, "/a.json", headers: [:])
            #expect(reply.status == .unauthorized)
            #expect(reply.error == "Permission denied")
            reply = try await client.call(.put, "/a.json", "2", headers: [:])
            #expect(reply.status == .unauthorized)
            #expect(try await client.call(.get, "/a.json?auth=\(TestServer.secret)", headers: [:]).body == "1")
        }
    }

    @Test func strangersCannotCreateDatabasesByNamingThem() async throws {
        let storage = InMemoryStorage()
        try await TestServer().runLive(storage: storage) { client, port, registry in
            // Any name, any transport: refused as a new database's locked rules refuse, and nothing is made.
            for index in 0..<20 {
                let reply = try await client.call(.get, "/x.json?ns=guess\(index)", headers: [:])
                #expect(reply.status == .unauthorized)
                #expect(reply.error == "Permission denied")
            }
            #expect(try await client.call(.put, "/x.json?ns=guess-put", "1", headers: [:]).status == .unauthorized)
            let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=guess-ws")
            _ = try await connection.nextMessage()
            try await connection.send(#"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/","h":""}}}"#)
            #expect(try await connection.nextMessage()?.contains(#""s":"permission_denied""#) == true)
            await connection.close()
            #expect(try await storage.namespaces().filter { $0.hasPrefix("guess") }.isEmpty)
            #expect(!registry.openDatabases.contains { $0.namespace.hasPrefix("guess") })
            // The admin makes one by using it; from then on others meet its rules.
            #expect(try await client.call(.put, "/.settings/rules.json?ns=made", #"{"rules": {".read": true}}"#).status == .ok)
            #expect(try await client.call(.get, "/x.json?ns=made", headers: [:]).status == .ok)
        }
    }

    @Test func emulatorShortcutsOnlyInEmulatorMode() async throws {
        try await TestServer().run { client, _ async throws in
            let reply = try await client.call(.get, "/a.json", headers: [.authorization: "Bearer owner"])
            #expect(reply.status == .unauthorized)
            #expect(reply.error == "Could not parse auth token.")
        }
        try await TestServer(emulator: true).run { client, _ async throws in
            #expect(try await client.call(.put, "/a.json", "1", headers: [.authorization: "Bearer owner"]).status == .ok)
            #expect(try await client.call(.get, "/a.json?auth=owner", headers: [:]).body == "1")
            // Open by default in emulator mode, also without credentials.
            #expect(try await client.call(.put, "/b.json", "2", headers: [:]).status == .ok)
        }
    }

    @Test func wrongTokensAreRejected() async throws {
        try await TestServer(emulator: true).run { client, _ async throws in
            let reply = try await client.call(.get, "/a.json", headers: [.authorization: "Bearer not-the-secret"])
            #expect(reply.status == .unauthorized)
            #expect(reply.error == "Could not parse auth token.")
        }
    }

    @Test func authVariableOverrideActsAsThatUser() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/.settings/rules.json", #"{"rules": {"public": {".read": true}}}"#)
            try await client.call(.put, "/public/x.json", "1")
            try await client.call(.put, "/private/x.json", "1")
            #expect(try await client.call(.get, "/public/x.json?auth_variable_override=null").body == "1")
            let denied = try await client.call(.get, "/private/x.json?auth_variable_override=%7B%22uid%22:%22u1%22%7D")
            #expect(denied.status == .unauthorized)
            #expect(denied.error == "Permission denied")
        }
    }

    @Test func rulesEndpointValidatesAndHotReloads() async throws {
        try await TestServer().run { client, _ async throws in
            var reply = try await client.call(.get, "/.settings/rules.json")
            #expect(reply.json == (try JSONValue(parsing: #"{"rules":{".read":false,".write":false}}"#)))
            #expect(try await client.call(.get, "/.settings/rules.json", headers: [:]).status == .unauthorized)
            #expect(try await client.call(.put, "/.settings/rules.json", "{}", headers: [:]).status == .unauthorized)
            // A broken document is rejected with a position and the old rules stay.
            reply = try await client.call(.put, "/.settings/rules.json", "{\n  \"rules\": {\n    \".read\": true,,\n  }\n}")
            #expect(reply.status == .badRequest)
            #expect(reply.error?.hasPrefix("3:") == true)
            #expect(try await client.call(.get, "/x.json", headers: [:]).status == .unauthorized)
            let source = "{\n  // open for reading\n  \"rules\": {\".read\": \"true\", \"scores\": {\".indexOn\": \".value\"}}\n}"
            reply = try await client.call(.put, "/.settings/rules.json", source)
            #expect(reply.status == .ok)
            #expect(reply.json?["status"] == .string("ok"))
            #expect(try await client.call(.get, "/x.json", headers: [:]).status == .ok)
            #expect(try await client.call(.put, "/x.json", "1", headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/.settings/rules.json").body == source)
            reply = try await client.call(.get, "/.settings/rules.json?format=strict")
            #expect(reply.json?["rules"]?["scores"]?[".indexOn"] == .string(".value"))
        }
    }
}

/// A Posts-app style rules file, end to end over REST, with users acting through auth_variable_override.
@Suite struct RulesEnforcementTests {
    static let rules = #"""
        {
          "rules": {
            "posts": {
              ".read": "auth != null",
              "$uid": {
                ".write": "$uid === auth.uid",
                "$post": {
                  ".validate": "newData.hasChildren(['title']) && newData.child('title').isString()"
                }
              }
            }
          }
        }
        """#

    static func asUser(_ uid: String) -> String {
        "auth_variable_override=%7B%22uid%22:%22\(uid)%22%7D"
    }

    @Test func usersWriteOnlyTheirOwnValidPosts() async throws {
        try await TestServer().run { client, _ async throws in
            #expect(try await client.call(.put, "/.settings/rules.json", Self.rules).status == .ok)
            let ada = Self.asUser("ada")
            #expect(try await client.call(.put, "/posts/ada/p1.json?\(ada)", #"{"title":"Hi"}"#).status == .ok)
            // Someone else's posts, a post without a title, a title that is not a string: all denied.
            #expect(try await client.call(.put, "/posts/bob/p1.json?\(ada)", #"{"title":"Hi"}"#).error == "Permission denied")
            #expect(try await client.call(.put, "/posts/ada/p2.json?\(ada)", #"{"body":"x"}"#).status == .unauthorized)
            #expect(try await client.call(.put, "/posts/ada/p2.json?\(ada)", #"{"title":5}"#).status == .unauthorized)
            // A multi-path update touching someone else's posts fails whole.
            let mixed = try await client.call(.patch, "/posts.json?\(ada)", #"{"ada/p3":{"title":"a"},"bob/p3":{"title":"b"}}"#)
            #expect(mixed.status == .unauthorized)
            #expect(try await client.call(.get, "/posts/ada/p3.json").body == "null")
            // Reading needs a signed-in user; nothing leaks to anonymous readers, queries included.
            #expect(try await client.call(.get, "/posts.json?\(ada)").status == .ok)
            #expect(try await client.call(.get, "/posts.json?auth_variable_override=null").status == .unauthorized)
            #expect(try await client.call(.get, "/posts.json?orderBy=%22$key%22&limitToFirst=1", headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/posts/ada.json", headers: [.accept: "text/event-stream"]).status == .unauthorized)
            // Deleting one's own post skips .validate.
            #expect(try await client.call(.delete, "/posts/ada/p1.json?\(ada)").status == .ok)
        }
    }

    @Test func rulesWithErrorsAreRefusedWithEveryDiagnostic() async throws {
        try await TestServer().run { client, _ async throws in
            let reply = try await client.call(.put, "/.settings/rules.json", #"{"rules": {".read": "auth.uid ===", "a": {".write": "7"}}}"#)
            #expect(reply.status == .badRequest)
            let lines = reply.error?.split(separator: "\n") ?? []
            #expect(lines.count == 2)
            #expect(lines.first?.hasPrefix("rules/.read: 1:") == true)
            #expect(lines.last?.hasPrefix("rules/a/.write: ") == true)
        }
    }
}
