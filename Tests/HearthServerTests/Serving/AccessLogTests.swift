import Foundation
import HTTPTypes
import HearthAccess
@testable import HearthFiles
@testable import HearthServer
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// The access log (`--access-log`) and the JSON log format (`--log-format json`).
@Suite struct AccessLogTests {
    /// Keeps every message logged through it.
    final class Captured: Sendable {
        struct Entry: Sendable {
            var level: Logger.Level
            var message: String
            var metadata: [String: String]
        }
        let entries = Mutex<[Entry]>([])
        let lines = Mutex<[String]>([])

        var logger: Logger {
            Logger(label: "hearth.access") { _ in Handler(captured: self) }
        }

        struct Handler: LogHandler {
            let captured: Captured
            var logLevel: Logger.Level = .trace
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                let fields = (event.metadata ?? [:]).mapValues { "\($0)" }
                captured.entries.withLock { $0.append(Entry(level: event.level, message: "\(event.message)", metadata: fields)) }
            }
        }
    }

    @Test func eachRequestIsOneLineWithoutCredentialsOrValues() async throws {
        let captured = Captured()
        let router = Router(context: HearthRequestContext.self)
        router.add(middleware: AccessLogMiddleware<HearthRequestContext>(logger: captured.logger))
        router.get("/users/{id}") { _, _ in "the stored value: alice@example.com" }
        router.post("/v1/accounts:signInWithPassword") { _, _ -> Response in throw HTTPError(.badRequest, message: "INVALID_PASSWORD") }
        let app = Application(router: router)
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/users/u1?auth=SECRET-TOKEN&ns=demo&orderBy=%22email%22&equalTo=%22alice%40example.com%22",
                method: .get, headers: [.authorization: "Bearer SECRET-BEARER"]
            ) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(
                uri: "/v1/accounts:signInWithPassword?key=API-KEY", method: .post,
                body: ByteBuffer(string: #"{"email":"alice@example.com","password":"hunter2-PASSWORD"}"#)
            ) { response in
                #expect(response.status == .badRequest)
            }
        }
        let entries = captured.entries.withLock { $0 }
        try #require(entries.count == 2)
        let read = entries[0]
        #expect(read.level == .info && read.message == "request")
        #expect(read.metadata["method"] == "GET")
        #expect(read.metadata["path"] == "/users/u1")
        #expect(read.metadata["query"] == "auth=…&ns=demo&orderBy=…&equalTo=…")
        #expect(read.metadata["status"] == "200")
        #expect(read.metadata["bytes"] == "\("the stored value: alice@example.com".utf8.count)")
        #expect(Double(read.metadata["duration_ms"] ?? "") != nil)
        #expect(read.metadata["client"] != nil)
        let failed = entries[1]
        #expect(failed.metadata["status"] == "400")
        #expect(failed.metadata["query"] == "key=…")
        #expect(Int(failed.metadata["bytes"] ?? "") ?? 0 > 0)
        let everything = entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["SECRET", "API-KEY", "alice", "hunter2", "stored value"] {
            #expect(!everything.contains(secret), "\(secret) in \(everything)")
        }
    }

    /// A download sent as a file region writes a token in its place: the line counts the region's bytes.
    @Test func aDownloadSentAsAFileRegionCountsItsBytes() async throws {
        let (blobs, root, blob) = try await FileRegionWriterTests.cachedBlob(150_000)
        defer { try? FileManager.default.removeItem(at: root) }
        guard let region = FileRegionWriterTests.region(of: blob, in: blobs, from: 0, to: 150_000) else { return }
        let downloads = FileRegionDownloads()
        let connection = EmbeddedChannel()
        try connection.pipeline.syncOperations.addHandler(FileRegionWriter(downloads: downloads))
        let token = try #require(downloads.hand(region, to: ObjectIdentifier(connection)))
        let captured = Captured()
        let router = Router(context: HearthRequestContext.self)
        router.add(middleware: AccessLogMiddleware<HearthRequestContext>(logger: captured.logger, fileRegions: downloads))
        router.get("/file") { _, _ in Response(status: .ok, body: ResponseBody(byteBuffer: token)) }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/file", method: .get) { response in #expect(response.status == .ok) }
        }
        #expect(captured.entries.withLock { $0.map { $0.metadata["bytes"] } } == ["150000"])
        _ = try connection.finish()
    }

    @Test func jsonLinesCarryTimeLevelLabelMessageAndEveryField() throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "hearth") { label in
            JSONLogHandler(label: label, level: .info, metadataProvider: nil) { line in lines.withLock { $0.append(line) } }
        }
        logger[metadataKey: "node"] = "a"
        logger.debug("below the level")
        logger.warning(
            "Kept the previous \"TLS\" certificate\nsecond line",
            metadata: ["file": "/etc/hearth/fullchain.pem", "message": "a field named like a key", "nested": ["n": .array(["1", "2"])]]
        )
        let written = lines.withLock { $0 }
        try #require(written.count == 1)
        #expect(!written[0].contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "warning")
        #expect(object["label"] as? String == "hearth")
        #expect(object["message"] as? String == "Kept the previous \"TLS\" certificate\nsecond line")
        #expect(object["file"] as? String == "/etc/hearth/fullchain.pem")
        #expect(object["node"] as? String == "a")
        #expect(object["field.message"] as? String == "a field named like a key")
        #expect((object["nested"] as? [String: Any])?["n"] as? [String] == ["1", "2"])
        let time = try #require(object["time"] as? String)
        #expect(time.hasSuffix("Z") && time.contains("."))
        #expect(abs(try Date(time, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)).timeIntervalSinceNow) < 60)
    }
}
