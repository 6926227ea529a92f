import HearthCore
import HTTPTypes
@testable import HearthEngine
import HummingbirdTesting
@testable import HearthServer
import Testing

/// A multi-path update may not name a path and one of its descendants (Firebase refuses it); the
/// check compares neighbours in key order, so it must still find every such pair.
@Suite struct UpdateOverlapTests {
    static func paths(_ strings: [String]) throws -> [DatabasePath] { try strings.map { try DatabasePath($0) } }

    @Test(arguments: [
        ["a", "a/b"],
        ["a/b/c", "x", "a"],
        ["a/b", "a/c", "a/b/d/e"],
        ["m", "a", "z", "m/n", "b"],
        ["k1", "k10", "k1/x"],        // keys that share a prefix without one being the other
        ["same", "same"],
    ])
    func overlapsAreRefused(_ strings: [String]) throws {
        #expect(throws: WriteError.self) { try DatabaseInstance.checkOverlaps(try Self.paths(strings)) }
    }

    @Test(arguments: [
        ["a", "b", "c"],
        ["a/b", "a/c", "ab", "a/bc"],
        ["k1/x", "k10/x", "k1y"],
        [String](),
    ])
    func disjointPathsPass(_ strings: [String]) throws {
        try DatabaseInstance.checkOverlaps(try Self.paths(strings))
    }

    @Test func aBigUpdateIsCheckedAndWrittenOverREST() async throws {
        try await TestServer().run { client, _ async throws in
            let members = (0..<100_000).map { #""c\#($0)": \#($0)"# }.joined(separator: ",")
            #expect(try await client.call(.patch, "/big.json?print=silent", "{\(members)}").status == .noContent)
            #expect(try await client.call(.get, "/big/c99999.json").body == "99999")
            let refused = try await client.call(.patch, "/big.json", #"{"c1": 1, "c2": 2, "c1/deeper": 3}"#)
            #expect(refused.status == .badRequest)
            #expect(refused.error?.contains("ancestor") == true)
        }
    }
}
