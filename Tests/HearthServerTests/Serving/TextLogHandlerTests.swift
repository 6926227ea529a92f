@testable import HearthServer
import Logging
import Synchronization
import Testing

/// The default log format: swift-log's StreamLogHandler layout, metadata rendered when written.
struct TextLogHandlerTests {
    struct Failure: Error {}

    @Test func writesTheStreamLayoutWithMergedMetadata() throws {
        let lines = Mutex<[String]>([])
        var handler = TextLogHandler(label: "hearth", level: .info, metadataProvider: nil) { line in lines.withLock { $0.append(line) } }
        handler[metadataKey: "request"] = "7"
        handler[metadataKey: "zone"] = "a"
        let logger = Logger(label: "hearth") { _ in handler }
        logger.info("Listening", metadata: ["zone": "b", "port": "9000"])
        logger.debug("below the level")
        let written = lines.withLock { $0 }
        try #require(written.count == 1)
        let line = written[0]
        // `2026-11-27T10:00:00Z info hearth: port=9000 request=7 zone=b [module] Listening`
        #expect(line.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ info hearth: port=9000 request=7 zone=b \[\w+\] Listening/) != nil, "\(line)")
    }

    /// Hummingbird's request id is held apart from the other metadata (HandlerMetadata); it is
    /// still read back, written, replaced and removed like any other field.
    @Test func theRequestIDIsMetadataLikeAnyOther() throws {
        let lines = Mutex<[String]>([])
        var handler = TextLogHandler(label: "hearth", level: .info, metadataProvider: nil) { line in lines.withLock { $0.append(line) } }
        handler[metadataKey: "hb.request.id"] = "41"
        handler[metadataKey: "user"] = "ada"
        #expect(handler[metadataKey: "hb.request.id"] == "41")
        #expect(handler.metadata == ["hb.request.id": "41", "user": "ada"])
        handler.metadata = ["hb.request.id": "42", "zone": "a"]
        #expect(handler[metadataKey: "hb.request.id"] == "42")
        #expect(handler[metadataKey: "user"] == nil)
        let logger = Logger(label: "hearth") { _ in handler }
        logger.info("One")
        handler[metadataKey: "hb.request.id"] = nil
        let without = Logger(label: "hearth") { _ in handler }
        without.info("Two")
        let written = lines.withLock { $0 }
        try #require(written.count == 2)
        #expect(written[0].contains(" info hearth: hb.request.id=42 zone=a ["), "\(written[0])")
        #expect(written[1].contains(" info hearth: zone=a ["), "\(written[1])")
        #expect(handler.metadata == ["zone": "a"])
    }

    @Test func namesAnErrorAndLeavesOutEmptyMetadata() throws {
        let lines = Mutex<[String]>([])
        let handler = TextLogHandler(label: "hearth", level: .trace, metadataProvider: nil) { line in lines.withLock { $0.append(line) } }
        handler.log(event: LogEvent(level: .warning, message: "Plain", metadata: nil, source: "S", file: "f", function: "g", line: 1))
        handler.log(event: LogEvent(level: .error, message: "Failed", error: Failure(), metadata: nil, source: "S", file: "f", function: "g", line: 1))
        let written = lines.withLock { $0 }
        try #require(written.count == 2)
        #expect(written[0].hasSuffix(" warning hearth: [S] Plain"), "\(written[0])")
        #expect(written[1].contains(" error hearth: error.message=Failure() error.type=HearthServerTests.TextLogHandlerTests.Failure [S] Failed"), "\(written[1])")
    }
}
