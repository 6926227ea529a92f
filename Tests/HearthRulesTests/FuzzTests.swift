import HearthCore
import HearthRules
import Testing

/// Bounded random and mutated input: the rules parser must answer with a value or a diagnostic, never crash.
@Suite struct RulesFuzzTests {
    static let seeds = [
        "auth != null && $uid === auth.uid", "newData.child('a/b').val().matches(/^[a-z]+\\d*$/i)",
        "root.child('users/' + auth.uid).exists() ? data.val() <= now : !data.exists()",
        "query.orderByChild == 'owner' && query.limitToFirst <= 10", "newData.hasChildren(['a', 'b']) || (1 + 2) * 3 % 2 == 1",
    ]
    static let alphabet = Array("()[]{}.,;:?!=<>&|+-*/%'\"\\ $_azAZ09/^i\n\t\u{0}é😀")

    @Test func randomAndMutatedExpressionsNeverCrashTheParser() async {
        var random = SplitMix(seed: 7)
        for round in 0..<20_000 {
            // Long CPU-bound loops yield, so tests that wait on the same thread pool are not starved.
            if round % 100 == 0 { await Task.yield() }
            var text: [Character]
            if round % 2 == 0 {
                text = Array(Self.seeds[Int(random.next() % UInt64(Self.seeds.count))])
                for _ in 0..<(1 + Int(random.next() % 4)) where !text.isEmpty {
                    let index = Int(random.next() % UInt64(text.count))
                    switch random.next() % 3 {
                    case 0: text.remove(at: index)
                    case 1: text.insert(Self.alphabet[Int(random.next() % UInt64(Self.alphabet.count))], at: index)
                    default: text[index] = Self.alphabet[Int(random.next() % UInt64(Self.alphabet.count))]
                    }
                }
            } else {
                text = (0..<Int(random.next() % 40)).map { _ in Self.alphabet[Int(random.next() % UInt64(Self.alphabet.count))] }
            }
            let source = "{\"rules\": {\".write\": \(JSONValue.string(String(text)).jsonText), \"$k\": {\".read\": \(JSONValue.string(String(text)).jsonText)}}}"
            // Either outcome is fine; what matters is getting one.
            if let document = try? RulesDocument(source: source) {
                _ = document.canWrite(try! DatabasePath("/x"), .auth(.null), before: .empty, after: .leaf(.number(1)), now: 0)
            }
        }
    }

    @Test func deeplyNestedExpressionsAreRefusedNotOverflowed() {
        let deep = String(repeating: "(", count: 5000) + "true" + String(repeating: ")", count: 5000)
        #expect(throws: RulesError.self) { try RulesDocument(source: "{\"rules\": {\".read\": \"\(deep)\"}}") }
        let unary = String(repeating: "!", count: 5000) + "true"
        #expect(throws: RulesError.self) { try RulesDocument(source: "{\"rules\": {\".read\": \"\(unary)\"}}") }
    }
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
