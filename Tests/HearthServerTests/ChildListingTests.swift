import Foundation
import HearthCore
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

/// `/.console/children`: the console's positional window on a big node (count, then children by
/// offset in Firebase key order), for console sessions only.
@Suite struct ChildListingTests {
    static func session(_ client: some TestClientProtocol) async throws -> HTTPFields {
        let token = try #require(try await client.call(.post, "/.console/session", #"{"secret":"\#(TestServer.secret)"}"#, headers: [:]).json?["token"]?.stringValue)
        return [.authorization: "Bearer \(token)"]
    }

    static func keys(_ reply: Reply) -> [String] {
        (reply.json?["children"]?.arrayValue ?? []).compactMap { $0["key"]?.stringValue }
    }

    @Test func pagesOfABigNodeByPositionInKeyOrder() async throws {
        try await TestServer().run { client, _ async throws in
            let bearer = try await Self.session(client)
            // 2,500 children: string keys, integer-like keys (which sort first, numerically) and one object.
            var members: [String] = (0..<2400).map { #""s\#(String(format: "%04d", $0))": \#($0)"# }
            members += (0..<99).map { #""\#($0 * 7)": "n\#($0)""# }
            members.append(#""obj": {"a": 1, "b": {"c": true}}"#)
            #expect(try await client.call(.patch, "/big.json", "{\(members.joined(separator: ","))}").status == .ok)
            let expected = (0..<99).map { String($0 * 7) } + ["obj"] + (0..<2400).map { "s" + String(format: "%04d", $0) }

            let first = try await client.call(.get, "/.console/children?path=/big&limit=5", headers: bearer)
            #expect(first.status == .ok)
            #expect(first.json?["count"] == .number(2500))
            #expect(Self.keys(first) == Array(expected.prefix(5)))
            #expect(first.json?["children"]?.arrayValue?[1] == .object([("key", .string("7")), ("value", .string("n1"))]))
            for offset in [1, 99, 1234, 2495] {
                let page = try await client.call(.get, "/.console/children?path=/big&offset=\(offset)&limit=10", headers: bearer)
                #expect(Self.keys(page) == Array(expected[offset..<min(2500, offset + 10)]), "offset \(offset)")
            }
            // An object is summarised by its child count, not sent.
            let object = try await client.call(.get, "/.console/children?path=big&offset=99&limit=1", headers: bearer)
            #expect(object.json?["children"]?.arrayValue == [.object([("key", .string("obj")), ("children", .number(2))])])

            // A value change keeps the cached order and shows the new value; a new key is placed.
            #expect(try await client.call(.put, "/big/s1234.json", #""changed""#).status == .ok)
            let changed = try await client.call(.get, "/.console/children?path=/big&offset=1334&limit=1", headers: bearer)
            #expect(changed.json?["children"]?.arrayValue == [.object([("key", .string("s1234")), ("value", .string("changed"))])])
            #expect(try await client.call(.put, "/big/s1234a.json", "1").status == .ok)
            let grown = try await client.call(.get, "/.console/children?path=/big&offset=1334&limit=3", headers: bearer)
            #expect(grown.json?["count"] == .number(2501))
            #expect(Self.keys(grown) == ["s1234", "s1234a", "s1235"])
            #expect(try await client.call(.delete, "/big/s1234.json").status == .ok)
            #expect(Self.keys(try await client.call(.get, "/.console/children?path=/big&offset=1334&limit=2", headers: bearer)) == ["s1234a", "s1235"])

            // Past the end, a leaf and nothing at all.
            #expect(Self.keys(try await client.call(.get, "/.console/children?path=/big&offset=9999", headers: bearer)) == [])
            let leaf = try await client.call(.get, "/.console/children?path=/big/7", headers: bearer)
            #expect(leaf.json?["count"] == .number(0) && leaf.json?["value"] == .string("n1"))
            #expect(try await client.call(.get, "/.console/children?path=/nothing", headers: bearer).json?["count"] == .number(0))
        }
    }

    @Test func needsAConsoleSessionAndSaneParameters() async throws {
        try await TestServer().run { client, _ async throws in
            #expect(try await client.call(.get, "/.console/children?path=/", headers: [:]).status == .unauthorized)
            #expect(try await client.call(.get, "/.console/children?path=/", headers: [.authorization: "Bearer hcs_not-a-session"]).status == .unauthorized)
            let bearer = try await Self.session(client)
            for query in ["limit=1001", "limit=-1", "offset=-5", "offset=x", "path=/a/.b"] {
                let reply = try await client.call(.get, "/.console/children?\(query)", headers: bearer)
                #expect(reply.status == .badRequest, "\(query)")
                #expect(reply.error != nil)
            }
        }
    }

    /// The fast path (ASCII keys sorted as strings) and the general one give Firebase's key order.
    @Test(arguments: [
        ["b", "a", "10", "9", "-3", "a0", "A", "~", "007", "2147483648", "z"],
        ["b", "é", "a", "\u{1F600}", "\u{FF5E}", "1"],  // not ASCII: an emoji sorts before U+FF5E in UTF-16
    ])
    func firebaseOrderIsKeyOrder(_ strings: [String]) {
        let keys = strings.map { Key($0) }
        #expect(SortedKeys.firebaseOrder(keys) == keys.sorted())
        for n in [0, 1, 3, 6, 20] {
            #expect(SortedKeys.first(n, of: keys) == Array(keys.sorted().prefix(n)), "first \(n)")
        }
        #expect(SortedKeys.firebaseOrder(keys).map(\.string) != strings)
    }
}
