import HearthCore
import Testing

@Suite struct JSONTests {
    @Test(arguments: [
        (25.0, "25"), (0.6, "0.6"), (2.1, "2.1"), (-70_000_000, "-70000000"), (0, "0"), (-0.0, "0"),
        (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"), (1e-6, "0.000001"),
        (123.456, "123.456"), (1.5e300, "1.5e+300"), (-2.5e-10, "-2.5e-10"), (9007199254740993, "9007199254740992"),
        (0.1 + 0.2, "0.30000000000000004"), (5e-324, "5e-324"),
    ])
    func numbersPrintAsJavaScriptDoes(_ value: Double, _ expected: String) {
        #expect(JavaScriptNumber.format(value) == expected)
    }

    @Test func parsesAndWritesRoundTrip() throws {
        let text = #"{"a":[1,true,null,"x\n\"y\""],"b":{"c":-0.5,"d":1e+21},"é":"\u00e9😀"}"#
        let value = try JSONValue(parsing: text)
        #expect(value.jsonText == #"{"a":[1,true,null,"x\n\"y\""],"b":{"c":-0.5,"d":1e+21},"é":"é😀"}"#)
    }

    @Test(arguments: ["{", "[1,]", "{\"a\":}", "tru", "01", "1.", "\"\\x\"", "\"\\ud800\"", "{} x", "", "\"a\u{1}\"", "NaN"])
    func malformedJSONIsRejected(_ text: String) {
        #expect(throws: JSONError.self) { try JSONValue(parsing: text) }
    }

    @Test func invalidUTF8IsRejected() {
        #expect(throws: JSONError.self) { try JSONValue(parsing: [0x22, 0xFF, 0x22]) }
    }

    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONError.self) { try JSONValue(parsing: deep) }
    }

    @Test func surrogatePairEscapesDecode() throws {
        #expect(try JSONValue(parsing: #""\ud83d\ude00""#) == .string("😀"))
    }

    /// Half of a pair is refused unless asked to be replaced (U+FFFD), where a whole pair still decodes.
    @Test(arguments: [
        (#""a\ud83d""#, "a\u{FFFD}"), (#""\ude00b""#, "\u{FFFD}b"), (#""\ud83d\u0041""#, "\u{FFFD}A"),
        (#""\ud83d\ud83d\ude00""#, "\u{FFFD}😀"), (#""\ud83d\ude00""#, "😀"),
    ])
    func unpairedSurrogatesAreReplacedOnlyWhenAsked(_ text: String, _ expected: String) throws {
        var bytes = Array(text.utf8)
        let lenient = try bytes.withUnsafeMutableBytes { raw throws(JSONError) in
            var parser = JSONParser(UnsafeRawBufferPointer(raw))
            parser.replacesUnpairedSurrogates = true
            return try parser.parseDocument()
        }
        #expect(lenient == .string(expected))
        if expected.unicodeScalars.contains("\u{FFFD}") {
            #expect(throws: JSONError.self) { try JSONValue(parsing: text) }
        }
    }
}
