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
