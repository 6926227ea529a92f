import Foundation
import HTTPTypes
import HearthCore
import Testing

@testable import HearthServer

/// The Storage emulator's control endpoints (emulator mode only, no credentials), as
/// `@firebase/rules-unit-testing` calls them: `PUT /internal/setRules` and `POST /internal/reset`.
@Suite struct StorageEmulatorTests {
    static let ownFiles = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/{file} { allow read, write: if request.auth != null && request.auth.uid == uid; }
          }
        }
        """

    static func setRules(_ files: [(name: String, content: String, resource: String?)]) -> [UInt8] {
        let members: [JSONValue] = files.map { file in
            var fields: [(key: String, value: JSONValue)] = [("name", .string(file.name)), ("content", .string(file.content))]
            if let resource = file.resource { fields.append(("resource", .string(resource))) }
            return .object(fields)
        }
        return Array(JSONValue.object([("rules", .object([("files", .array(members))]))]).jsonText.utf8)
    }

    @Test func setRulesLoadsRulesThatApplyToTheNextRequest() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            let ada = try files.user("ada")
            let path = FilesClient.objectPath("users/ada/a.txt")
            let set = try await files.send(.put, "/internal/setRules", body: Self.setRules([("storage.rules", Self.ownFiles, nil)]), headers: [:])
            #expect(set.status == .ok)
            #expect(set.json?["message"] == .string("Rules updated successfully"))
            #expect(try await files.upload("users/ada/a.txt", Array("mine".utf8), headers: ada).status == .ok)
            #expect(try await files.upload("users/bob/b.txt", Array("not mine".utf8), headers: ada).status == .forbidden)
            #expect(try await files.send(.get, path, headers: [:]).status == .forbidden)
            #expect(try await files.send(.get, "/.settings/storage.rules").body == Self.ownFiles)
        }
    }

    @Test func badBodiesAndBrokenRulesAreRefusedAndTheRulesInForceStay() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            _ = try await files.send(.put, "/internal/setRules", body: Self.setRules([("storage.rules", Self.ownFiles, nil)]), headers: [:])
            let cases: [([UInt8], String)] = [
                (Array(#"{"rules": {}}"#.utf8), "Request body must include 'rules.files' array"),
                (Array(#"{"rules": {"files": [{"name": "x.rules"}]}}"#.utf8), "Each member of 'rules.files' array must contain 'name' and 'content'"),
                (Self.setRules([("a.rules", Self.ownFiles, "a"), ("b.rules", Self.ownFiles, nil)]),
                 "Each member of 'rules.files' array must contain 'name', 'content', and 'resource'"),
            ]
            for (body, message) in cases {
                let answer = try await files.send(.put, "/internal/setRules", body: body, headers: [:])
                #expect(answer.status == .badRequest)
                #expect(answer.json?["message"] == .string(message))
            }
            let broken = "service firebase.storage {\n  match /b/{bucket}/o {\n    allow read: if ;\n  }\n}"
            let refused = try await files.send(.put, "/internal/setRules", body: Self.setRules([("storage.rules", broken, nil)]), headers: [:])
            #expect(refused.status == .badRequest)
            #expect(refused.json?["message"] == .string("There was an error updating rules, see logs for more details"))
            guard case .array(let issues)? = refused.json?["issues"], let first = issues.first else {
                Issue.record("no issues in \(refused.body)")
                return
            }
            #expect(first["file"] == .string("storage.rules"))
            #expect(first["line"] == .number(3))
            #expect(try await files.send(.get, "/.settings/storage.rules").body == Self.ownFiles)
            // The same rules for every bucket are taken; different ones are not (one ruleset in Hearth).
            let same = Self.setRules([("a.rules", Self.ownFiles, "a"), ("b.rules", Self.ownFiles, "b")])
            #expect(try await files.send(.put, "/internal/setRules", body: same, headers: [:]).status == .ok)
            let different = Self.setRules([("a.rules", Self.ownFiles, "a"), ("b.rules", broken, "b")])
            #expect(try await files.send(.put, "/internal/setRules", body: different, headers: [:]).status == .badRequest)
        }
    }

    @Test func resetDropsEveryObjectAndBucketButKeepsTheRules() async throws {
        try await FilesTestServer(emulator: true).run { files async throws in
            _ = try await files.send(.put, "/internal/setRules", body: Self.setRules([("storage.rules", Self.ownFiles, nil)]), headers: [:])
            try await files.upload("users/ada/a.txt", Array("a".utf8))
            try await files.upload("users/ada/deep/b.txt", Array("b".utf8))
            try await files.upload("x.txt", Array("other bucket".utf8), bucket: "other-bucket")
            let reset = try await files.send(.post, "/internal/reset", headers: [:])
            #expect(reset.status == .ok && reset.body == "OK")
            #expect(try await files.send(.get, FilesClient.objectPath("users/ada/a.txt")).status == .notFound)
            #expect(try await files.send(.get, FilesClient.objectPath("users/ada/deep/b.txt")).status == .notFound)
            #expect(try await files.send(.get, FilesClient.objectPath("x.txt", bucket: "other-bucket")).status == .notFound)
            let listed = try await files.send(.get, "/v0/b/\(FilesTestServer.bucket)/o")
            #expect(listed.status == .ok)
            #expect(listed.json?["items"] == nil || listed.json?["items"] == .array([]))
            #expect(try await files.send(.get, "/.settings/storage.rules").body == Self.ownFiles)
            // The default bucket is there again, empty, and takes uploads.
            #expect(try await files.upload("users/ada/again.txt", Array("again".utf8)).status == .ok)
        }
    }

    @Test func outsideEmulatorModeTheEndpointsDoNotExist() async throws {
        try await FilesTestServer().run { files async throws in
            let set = try await files.send(.put, "/internal/setRules", body: Self.setRules([("storage.rules", Self.ownFiles, nil)]), headers: [:])
            #expect(set.status != .ok)
            #expect(try await files.send(.post, "/internal/reset", headers: [:]).status != .ok)
        }
    }
}
