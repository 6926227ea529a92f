import HearthCore
import Testing

@Suite struct KeyAndPathTests {
    @Test(arguments: ["a.b", "a$b", "a#b", "a[b", "a]b", "a/b", "a\u{0}b", "a\u{1F}b", "a\u{7F}b", ""])
    func forbiddenKeysAreRejected(_ key: String) {
        #expect(throws: PathError.self) { try Key(validating: key) }
    }

    @Test func keyLengthLimitIs768Bytes() throws {
        _ = try Key(validating: String(repeating: "a", count: 768))
        #expect(throws: PathError.self) { try Key(validating: String(repeating: "a", count: 769)) }
        // Counted in UTF-8 bytes: 256 three-byte characters is 768 bytes.
        _ = try Key(validating: String(repeating: "€", count: 256))
        #expect(throws: PathError.self) { try Key(validating: String(repeating: "€", count: 257)) }
    }

    @Test func integerKeysFollowTheJavaScriptRule() {
        #expect(Key("7").integerValue == 7)
        #expect(Key("007").integerValue == 7)
        #expect(Key("-12").integerValue == -12)
        #expect(Key("2147483647").integerValue == Int32.max)
        #expect(Key("2147483648").integerValue == nil)
        #expect(Key("-2147483648").integerValue == Int32.min)
        #expect(Key("12345678901").integerValue == nil)
        #expect(Key("1.5").integerValue == nil)
        #expect(Key("a1").integerValue == nil)
        #expect(Key("-").integerValue == nil)
        #expect(Key("0").integerValue == 0)
        #expect(Key("-0").integerValue == 0)
        #expect(Key("-007").integerValue == -7)
        // Any number of leading zeros, then at most ten digits.
        #expect(Key("00000000000001").integerValue == 1)
        #expect(Key(" 7").integerValue == nil)
        #expect(Key("7 ").integerValue == nil)
        #expect(Key("--7").integerValue == nil)
    }

    @Test func keysCompareByBytesNotCanonicalEquivalence() {
        let precomposed = Key("\u{E9}")
        let decomposed = Key("e\u{301}")
        #expect(precomposed != decomposed)
        #expect(Set([precomposed, decomposed]).count == 2)
        // Small (inline) and large strings, the same bytes from different storage, one byte apart.
        for text in ["a", "-NjT0aa1xQ9zXyZ", "-NjT0aa1xQ9zXyZ0123456789", String(repeating: "é", count: 40)] {
            let copy = String(decoding: Array(text.utf8), as: UTF8.self)
            #expect(Key(text) == Key(copy))
            #expect(Key(text) != Key(text + "x"))
            #expect(Key(text) != Key(String(text.dropLast()) + "#"))
        }
        #expect(Key("ab") != Key("ba"))
    }

    @Test func stringsCompareByUTF16CodeUnits() {
        // U+1F600 is a surrogate pair (0xD83D…), which sorts before U+FF5E in UTF-16, unlike scalar order.
        #expect(UTF16Order.compare("\u{1F600}", "\u{FF5E}") < 0)
        #expect(UTF16Order.compare("\u{E000}", "\u{10000}") > 0)
        #expect(UTF16Order.compare("a", "b") < 0)
        #expect(UTF16Order.compare("ab", "a") > 0)
        #expect(UTF16Order.compare("Z", "a") < 0)
        #expect(UTF16Order.compare("é", "é") == 0)
    }

    @Test func pathsIgnoreEmptySegmentsAndLimitDepth() throws {
        #expect(try DatabasePath("//a///b/").description == "/a/b")
        #expect(try DatabasePath("/").isRoot)
        let deep32 = (1...32).map { "k\($0)" }.joined(separator: "/")
        #expect(try DatabasePath(deep32).count == 32)
        #expect(throws: PathError.self) { try DatabasePath(deep32 + "/k33") }
        #expect(try DatabasePath("").isRoot)
        #expect(try DatabasePath("a").keys == [Key("a")])
        #expect(try DatabasePath("/naïve/日本/🔥x/").keys == [Key("naïve"), Key("日本"), Key("🔥x")])
        // Split on the code unit, as Firebase's SDKs do, even where a combining mark follows the slash
        // (one grapheme cluster "/\u{301}").
        #expect(try DatabasePath("a/\u{301}b").keys == [Key("a"), Key("\u{301}b")])
        #expect(throws: PathError.self) { try DatabasePath("/a/b.c") }
        #expect(DatabasePath.segments(of: "//users//ada/") == ["users", "ada"])
        #expect(DatabasePath.segments(of: "///").isEmpty)
    }

    @Test func pathContainmentAndRelativePaths() throws {
        let a = try DatabasePath("/a")
        let ab = try DatabasePath("/a/b")
        #expect(a.contains(ab))
        #expect(!ab.contains(a))
        #expect(a.relativePath(to: ab)?.description == "/b")
        #expect(DatabasePath.root.contains(a))
        #expect(!(try DatabasePath("/ab")).contains(ab))
    }
}

/// Query strings and form bodies: `+` is a space, escapes are decoded once, a bad escape is refused.
@Test(arguments: [
    ("a+b%2Bc", "a b+c"), ("caf%C3%A9", "café"), ("plain", "plain"), ("", ""), ("%zz", nil), ("%C3", nil), ("++", "  "),
] as [(String, String?)])
func formComponentsAreDecoded(text: String, decoded: String?) {
    #expect(PercentDecoding.decodeFormComponent(Substring(text)) == decoded)
}
