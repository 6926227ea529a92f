import HearthCore
import Synchronization
import Testing

@Suite struct NodeTests {
    func node(_ json: String, depth: Int = 0, now: Double = 1000, existing: Node = .empty) throws -> Node {
        try Node(json: try JSONValue(parsing: json), depth: depth, context: ServerValueContext(now: now, existing: existing))
    }

    // Test vectors from the Firebase JS SDK ("These hashes must match what the server generates").
    @Test(arguments: [
        ("4", "eVih19a6ZDz3NL32uVBtg9KSgQY="),
        ("4.5623", "vf1CL0tIRwXXunHcG/irRECk3lY="),
        (#""hey guys""#, "CUNLXWpCVoJE6z7z1vE57lGaKAU="),
        ("true", "E5z61QM0lN/U2WsOnusszCTkR8M="),
        ("false", "aSSNoqcS4oQwJ2xxH20rvpp3zP0="),
        (#"{"intNode":4,"doubleNode":4.5623,"stringNode":"hey guys","boolNode":true}"#, "6Mc4jFmNdrLVIlJJjz2/MakTK9I="),
        (#"{"root":{"c":{".value":99,".priority":"abc"},".priority":"def"}}"#, "Fm6tzN4CVEu5WxFDZUdTtqbTVaA="),
        (#"{"root":{"c":{".value":99,".priority":42},".priority":3.14}}"#, "B15QCqrzCxrI5zz1y00arWqFRFg="),
    ])
    func hashMatchesTheWireProtocol(_ json: String, _ expected: String) throws {
        #expect(try node(json).hash == expected)
    }

    /// -0 renders as `0`, so it hashes as 0 (a client's transaction compares the hash of what it received).
    @Test func negativeZeroHashesAsTheZeroItRendersAs() throws {
        let negative = try node("-0.0")
        #expect(negative.jsonString() == "0")
        #expect(negative.hash == (try node("0")).hash)
        #expect(try node(#"{"a":-0.0}"#).hash == (try node(#"{"a":0}"#)).hash)
        #expect(try node(#"{".value":1,".priority":-0.0}"#).hash == (try node(#"{".value":1,".priority":0}"#)).hash)
    }

    @Test func emptyNodeHasNullETag() {
        #expect(Node.empty.hash == "")
        #expect(Node.empty.etag == "null_etag")
    }

    @Test func nullsAndEmptyObjectsVanish() throws {
        #expect(try node(#"{"a":null,"b":{}}"#).isEmpty)
        #expect(try node("{}").isEmpty)
        #expect(try node("[]").isEmpty)
        #expect(try node(#"{"a":{"b":null},"c":1}"#).jsonString() == #"{"c":1}"#)
    }

    @Test(arguments: [
        (#"["a","b"]"#, #"["a","b"]"#),
        (#"{"1":"x"}"#, #"[null,"x"]"#),
        (#"{"2":"x"}"#, #"{"2":"x"}"#),
        (#"{"0":"a","007":"b"}"#, #"{"0":"a","007":"b"}"#),
        (#"["a",null,"c"]"#, #"["a",null,"c"]"#),
        (#"{"0":"a","2":"c","3":"d"}"#, #"["a",null,"c","d"]"#),
        (#"{"-1":"a","0":"b"}"#, #"{"-1":"a","0":"b"}"#),
    ])
    func arraysRenderByTheHalfFullRule(_ input: String, _ expected: String) throws {
        #expect(try node(input).jsonString() == expected)
    }

    @Test func exportFormatIncludesPriorities() throws {
        let n = try node(#"{"a":{".value":1,".priority":2},"b":{"c":true,".priority":"p"},"0":"z"}"#)
        #expect(n.jsonString(format: .export) == #"{"0":"z","a":{".value":1,".priority":2},"b":{"c":true,".priority":"p"}}"#)
        #expect(n.jsonString() == #"{"0":"z","a":1,"b":{"c":true}}"#)
    }

    @Test func serverValuesResolve() throws {
        #expect(try node(#"{".sv":"timestamp"}"#, now: 1234) == .leaf(.number(1234)))
        #expect(try node(#"{"t":{".sv":"timestamp"},"u":{".sv":"timestamp"}}"#, now: 5).jsonString() == #"{"t":5,"u":5}"#)
        #expect(try node(#"{".sv":{"increment":2}}"#, existing: .leaf(.number(40))) == .leaf(.number(42)))
        #expect(try node(#"{".sv":{"increment":2}}"#, existing: .leaf(.string("x"))) == .leaf(.number(2)))
        #expect(try node(#"{".sv":{"increment":1.5}}"#) == .leaf(.number(1.5)))
        let nested = try node(#"{"n":{".sv":{"increment":1}}}"#, existing: try node(#"{"n":9}"#))
        #expect(nested.jsonString() == #"{"n":10}"#)
        #expect(throws: DataError.self) { try node(#"{".sv":"bogus"}"#) }
        #expect(throws: DataError.self) { try node(#"{".sv":{"increment":"1"}}"#) }
    }

    @Test func invalidDataIsRejected() throws {
        #expect(throws: DataError.self) { try node(#"{"a.b":1}"#) }
        #expect(throws: DataError.self) { try node(#"{"a":{"$x":1}}"#) }
        #expect(throws: DataError.self) { try node(#"{".value":1,"a":2}"#) }
        #expect(throws: DataError.self) { try node(#"{"a":1,".priority":true}"#) }
        #expect(throws: DataError.self) { try node(#"{".value":{"a":1}}"#) }
    }

    @Test func depthIsLimitedTo32Levels() throws {
        func nested(_ levels: Int) -> String {
            String(repeating: #"{"k":"#, count: levels) + "1" + String(repeating: "}", count: levels)
        }
        _ = try node(nested(32))
        #expect(throws: DataError.self) { try node(nested(33)) }
        _ = try node(nested(2), depth: 30)
        #expect(throws: DataError.self) { try node(nested(3), depth: 30) }
    }

    @Test func settingChildrenFollowsFirebaseRules() throws {
        let path = try DatabasePath("/a/b")
        var root = Node.empty.setting(.leaf(.number(1), priority: .number(5)), at: try DatabasePath("/a"))
        // A leaf that gets a child becomes an inner node and keeps its priority.
        root = root.setting(.leaf(.string("x")), at: path)
        #expect(root.child(at: try DatabasePath("/a")).priority == .number(5))
        #expect(root.jsonString() == #"{"a":{"b":"x"}}"#)
        // Deleting the last child removes the parent and its priority.
        root = root.setting(.empty, at: path)
        #expect(root.isEmpty)
    }

    @Test func pushIDsAreTimeOrderedAndMonotonic() {
        let generator = PushIDGenerator(clock: { 1_700_000_000_000 })
        var previous = ""
        for _ in 0..<1000 {
            let id = generator.next()
            #expect(id.utf8.count == 20)
            #expect(id > previous)
            previous = id
        }
        let timeLater = PushIDGenerator(clock: { 1_700_000_000_001 }).next()
        let timeEarlier = PushIDGenerator(clock: { 1_700_000_000_000 }).next()
        #expect(timeEarlier.prefix(8) < timeLater.prefix(8))
        // The first 8 characters encode the time, most significant first.
        #expect(PushIDGenerator(clock: { 0 }).next().prefix(8) == "--------")
    }

    @Test func aPushIDsRandomPartTakesSixBitsAtATimeFromTwoDraws() {
        let random = CountingGenerator(values: [0b111110_000011_000010_000001, 0b000001_111111])
        let id = PushIDGenerator(clock: { 1 }, random: random).next()
        // Characters 8…17 take the first draw's bits, lowest first; 18 and 19 the second's.
        #expect(id == "-------0" + "012y------" + "z0")
        #expect(random.draws.withLock { $0 } == 2)
    }

    @Test func shallowReplacesChildrenWithTrue() throws {
        #expect(try node(#"{"a":{"b":1},"c":2}"#).shallow().jsonString() == #"{"a":true,"c":true}"#)
        #expect(try node("5").shallow().jsonString() == "5")
    }
}

/// Returns `values` in turn and counts the draws.
private final class CountingGenerator: RandomNumberGenerator, Sendable {
    let values: [UInt64]
    let draws = Mutex(0)
    init(values: [UInt64]) { self.values = values }
    func next() -> UInt64 {
        draws.withLock { count in
            defer { count += 1 }
            return values[count % values.count]
        }
    }
}
