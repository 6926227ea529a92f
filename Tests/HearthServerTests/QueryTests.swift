import HearthCore
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

/// The queries of firebase-admin-python's integration suite (rest-and-rules.md §1.7.4), over REST.
@Suite struct QueryTests {
    static let dinosaurs = #"""
        {"dinosaurs": {
          "bruhathkayosaurus": {"appeared": -70000000, "height": 25, "length": 44, "order": "saurischia", "vanished": -70000000, "weight": 135000, "ratings": {"pos": 1}},
          "lambeosaurus": {"appeared": -76000000, "height": 2.1, "length": 12.5, "order": "ornithischia", "vanished": -75000000, "weight": 5000, "ratings": {"pos": 2}},
          "linhenykus": {"appeared": -85000000, "height": 0.6, "length": 1, "order": "theropoda", "vanished": -75000000, "weight": 3, "ratings": {"pos": 3}},
          "pterodactyl": {"appeared": -150000000, "height": 0.6, "length": 0.8, "order": "pterosauria", "vanished": -148500000, "weight": 2, "ratings": {"pos": 4}},
          "stegosaurus": {"appeared": -155000000, "height": 4, "length": 9, "order": "ornithischia", "vanished": -150000000, "weight": 2500, "ratings": {"pos": 5}},
          "triceratops": {"appeared": -68000000, "height": 3, "length": 8, "order": "ornithischia", "vanished": -66000000, "weight": 11000, "ratings": {"pos": 6}}},
         "scores": {"bruhathkayosaurus": 55, "lambeosaurus": 21, "linhenykus": 80, "pterodactyl": 93, "stegosaurus": 5, "triceratops": 22}}
        """#
    static let rules = #"{"rules": {"dinosaurs": {".indexOn": ["height", "ratings/pos"]}, "scores": {".indexOn": ".value"}}}"#

    @Test(arguments: [
        ("/dinosaurs.json?orderBy=%22$key%22", ["bruhathkayosaurus", "lambeosaurus", "linhenykus", "pterodactyl", "stegosaurus", "triceratops"]),
        ("/scores.json?orderBy=%22$value%22", ["stegosaurus", "lambeosaurus", "triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"]),
        ("/dinosaurs.json?orderBy=%22height%22", ["linhenykus", "pterodactyl", "lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"]),
        ("/dinosaurs.json?orderBy=%22height%22&startAt=3.5", ["stegosaurus", "bruhathkayosaurus"]),
        ("/dinosaurs.json?orderBy=%22height%22&endAt=3.5", ["linhenykus", "pterodactyl", "lambeosaurus", "triceratops"]),
        ("/dinosaurs.json?orderBy=%22height%22&startAt=2.5&endAt=5", ["triceratops", "stegosaurus"]),
        ("/dinosaurs.json?orderBy=%22height%22&equalTo=0.6", ["linhenykus", "pterodactyl"]),
        ("/dinosaurs.json?orderBy=%22ratings/pos%22&startAt=4", ["pterodactyl", "stegosaurus", "triceratops"]),
        ("/dinosaurs.json?orderBy=%22$key%22&limitToFirst=2", ["bruhathkayosaurus", "lambeosaurus"]),
        ("/scores.json?orderBy=%22$value%22&limitToLast=2", ["linhenykus", "pterodactyl"]),
        ("/dinosaurs.json?orderBy=%22height%22&startAt=0.6,%22linhenykus%22&limitToFirst=2", ["linhenykus", "pterodactyl"]),
        ("/dinosaurs.json?orderBy=%22height%22&startAfter=0.6", ["lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"]),
        ("/dinosaurs.json?orderBy=%22height%22&endBefore=3", ["linhenykus", "pterodactyl", "lambeosaurus"]),
        ("/dinosaurs.json?orderBy=%22$key%22&startAt=%22s%22&endAt=%22t%22", ["stegosaurus"]),
        ("/dinosaurs.json?shallow=true&limitToFirst=2&startAfter=lambeosaurus", ["linhenykus", "pterodactyl"]),
    ] as [(String, [String])])
    func queriesReturnTheirWindowInIndexOrder(_ uri: String, _ expected: [String]) async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/.settings/rules.json", Self.rules)
            try await client.call(.put, "/.json", Self.dinosaurs)
            let reply = try await client.call(.get, uri)
            #expect(reply.status == .ok, "\(uri): \(reply.body)")
            guard case .object(let members)? = reply.json else { Issue.record("not an object: \(reply.body)"); return }
            #expect(members.map(\.key) == expected)
        }
    }

    @Test func aQueryOnALeafOrNothingIsNull() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/leaf.json", "1")
            #expect(try await client.call(.get, "/leaf.json?orderBy=%22$key%22&limitToFirst=1").body == "null")
            #expect(try await client.call(.get, "/none.json?orderBy=%22$key%22&limitToFirst=1").body == "null")
        }
    }
}
