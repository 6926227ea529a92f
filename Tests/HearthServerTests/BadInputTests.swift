import HearthCore
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

/// Bad input gets Firebase's error shape and status, and the stored data stays as it was.
@Suite struct BadInputTests {
    static let original = #"{"keep":{"a":1,"b":"two"}}"#

    func expectUnchanged(_ client: some TestClientProtocol) async throws {
        #expect(try await client.call(.get, "/.json").body == Self.original)
    }

    static let deep33 = String(repeating: #"{"k":"#, count: 33) + "1" + String(repeating: "}", count: 33)
    /// A location 32 levels deep: a value there is allowed, one below it is not.
    static let path32 = "/keep" + (2...32).map { "/k\($0)" }.joined()

    @Test(arguments: [
        ("PUT", "/keep.json", "{not json", "Invalid data; couldn't parse JSON object, array, or value."),
        ("PUT", "/keep.json", "", "Missing PUT, POST or PATCH data"),
        ("PUT", "/keep.json", #"{"bad.key":1}"#, nil),
        ("PUT", "/keep.json", #"{"a":{"b":{"$c":1}}}"#, nil),
        ("PUT", "/.json", deep33, "Invalid data; data must not be nested more than 32 levels deep"),
        ("PUT", "/keep.json", #"{".sv":"nope"}"#, nil),
        ("PUT", "/keep.json", #"{".value":1,"x":2}"#, nil),
        ("POST", "/keep.json", "[1,", nil),
        ("PATCH", "/keep.json", "[1,2]", "Invalid data; couldn't parse JSON object. Are you sending a JSON object with valid key names?"),
        ("PATCH", "/keep.json", #"{"a":2,"b.c":3}"#, nil),
        ("PATCH", "/keep.json", #"{"a":2,"a/x":3}"#, nil),
        ("PATCH", "/keep.json", #"{"x":1,"y/z/w":3,"q":4,"y/z":2}"#, "Invalid data; path /y/z is an ancestor of /y/z/w in the same update"),
        // Keys compare by their bytes: `e` + a combining accent does not hide `é`'s overlap with `é/x`.
        ("PATCH", "/keep.json", #"{"\u00e9":1,"e\u0301":2,"\u00e9/x":3}"#, "Invalid data; path /\u{e9} is an ancestor of /\u{e9}/x in the same update"),
        ("PATCH", "/keep.json", #"{"a":2,"c":{"d.e":1}}"#, nil),
        ("PUT", "/ke#ep.json", "1", nil),
        ("PUT", "/keep/.bad.json", "1", nil),
        ("GET", "/keep.json?limitToFirst=1", nil, "orderBy must be defined when other query parameters are defined"),
        ("GET", "/keep.json?orderBy=a", nil, "orderBy must be a valid JSON encoded path"),
        ("GET", "/keep.json?orderBy=%22$key%22&startAt=0", nil, "Provided key index type is invalid, must be string"),
        ("GET", "/keep.json?orderBy=%22$key%22&startAt=abc", nil, "Constraint index field must be a JSON primitive"),
        ("GET", "/keep.json?orderBy=%22$key%22&equalTo=%7B%7D", nil, "Constraint index field must be a JSON primitive"),
        ("GET", "/keep.json?orderBy=%22$key%22&limitToFirst=-1", nil, nil),
        ("GET", "/keep.json?orderBy=%22$key%22&limitToFirst=1&limitToLast=1", nil, nil),
        ("GET", "/keep.json?orderBy=%22$key%22&equalTo=%22a%22&startAt=%22a%22", nil, nil),
        ("GET", "/keep.json?orderBy=%22a%22", nil, #"Index not defined, add ".indexOn": "a", for path "/keep", to the rules"#),
        ("GET", "/keep.json?orderBy=%22$value%22", nil, #"Index not defined, add ".indexOn": ".value", for path "/keep", to the rules"#),
        ("GET", "/keep.json?shallow=true&orderBy=%22$key%22", nil, "Mixing 'shallow' and querying parameters is not supported"),
        ("GET", "/keep.json?print=loud", nil, nil),
        ("GET", "/keep.json?timeout=soon", nil, nil),
        ("GET", "/keep.json?timeout=20min", nil, nil),
        // A number of units past Int's range (once a crash).
        ("GET", "/keep.json?timeout=100000000000000000s", nil, "timeout must be at most 15min"),
        ("GET", "/keep.json?timeout=200000000000000min", nil, "timeout must be at most 15min"),
        // Numbers past a double's range are no JSON value Firebase stores (they were stored as Infinity).
        ("PUT", "/keep/n.json", "1e999", nil),
        ("PUT", "/keep/n.json", #"{"a":1,".priority":-1e999}"#, nil),
        ("PUT", "/keep/n/.priority.json", "1e999", nil),
        ("PUT", "/keep/n.json", #"{".sv":{"increment":1e999}}"#, nil),
        // A POST or a PATCH path one level below a location 32 deep.
        ("POST", path32 + ".json", "1", "Invalid data; data must not be nested more than 32 levels deep"),
        ("PATCH", path32.split(separator: "/").dropLast().map { "/" + $0 }.joined() + ".json", #"{"k32/x":1}"#, nil),
        ("PUT", "/keep.json?writeSizeLimit=huge", "1", nil),
        ("PUT", "/keep/%ZZ.json", "1", nil),
        // A GET with a malformed escape answers as a PUT does, not 200 null.
        ("GET", "/keep/%ZZ.json", nil, "Invalid path: the URL has a malformed percent escape"),
        ("DELETE", "/keep/%ZZ.json", nil, "Invalid path: the URL has a malformed percent escape"),
    ] as [(String, String, String?, String?)])
    func badRequestsGet400AndChangeNothing(_ method: String, _ uri: String, _ body: String?, _ message: String?) async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/.json", Self.original)
            let reply = try await client.call(HTTPRequest.Method(method)!, uri, body)
            #expect(reply.status == .badRequest, "\(method) \(uri)")
            let error = try #require(reply.error, "error body for \(method) \(uri): \(reply.body)")
            if let message { #expect(error == message) }
            try await expectUnchanged(client)
        }
    }

    @Test func oversizedBodiesAreRejected() async throws {
        try await TestServer(configure: { $0.maximumRequestBytes = 1024 }).run { client, _ async throws in
            try await client.call(.put, "/.json", Self.original)
            let big = "\"" + String(repeating: "x", count: 2048) + "\""
            let reply = try await client.call(.put, "/keep.json", big)
            #expect(reply.status == .badRequest)
            #expect(reply.error?.contains("too large") == true)
            try await expectUnchanged(client)
        }
    }

    @Test func writeSizeLimitIsEnforced() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/.json", Self.original)
            let many = "{" + (0..<10_001).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
            let reply = try await client.call(.put, "/big.json?writeSizeLimit=tiny", many)
            #expect(reply.status == .badRequest)
            try await expectUnchanged(client)
            #expect(try await client.call(.put, "/big.json?writeSizeLimit=small", many).status == .ok)
        }
    }

    @Test func aFailedMultiPathUpdateWritesNothing() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/.json", Self.original)
            try await client.call(.put, "/.settings/rules.json", #"{"rules": {".read": true, "keep": {"a": {".write": true}}}}"#)
            // One location is writable, the other is not: the whole update is denied.
            let reply = try await client.call(.patch, "/keep.json", #"{"a":5,"b":6}"#, headers: [:])
            #expect(reply.status == .unauthorized)
            try await expectUnchanged(client)
            #expect(try await client.call(.patch, "/keep.json", #"{"a":5}"#, headers: [:]).status == .ok)
        }
    }

    @Test func unknownPathsAnswerInFirebaseShape() async throws {
        try await TestServer().run { client, _ async throws in
            let reply = try await client.call(.get, "/not-json")
            #expect(reply.status == .notFound)
            #expect(reply.error != nil)
        }
    }
}
