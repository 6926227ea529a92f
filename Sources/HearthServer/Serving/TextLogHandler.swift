import Foundation
public import Logging

/// Writes log messages as lines of text on standard error (`--log-format text`, the default), in
/// swift-log's `StreamLogHandler` layout: `time level label: metadata [source] message`.
///
/// Why not `StreamLogHandler` itself: it renders its metadata to text every time a field is set,
/// and Hummingbird sets one (the request id) on every request's logger, whether or not anything is
/// logged; that rendering was 3 % of a REST read's time (docs/benchmarks.md, issue 30). This handler
/// renders metadata only when a message is written. See docs/decisions/0017.
///
/// For example:
/// ```swift
/// LoggingSystem.bootstrap { label in TextLogHandler(label: label, level: .info) }
/// // 2026-11-27T10:00:00Z info hearth: port=9000 [HearthServer] Listening
/// ```
public struct TextLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata {
        get { storedMetadata.all }
        set { storedMetadata.all = newValue }
    }
    private var storedMetadata = HandlerMetadata()
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let output: @Sendable (String) -> Void

    /// A handler writing to standard error.
    public init(label: String, level: Logger.Level, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.init(label: label, level: level, metadataProvider: metadataProvider, output: JSONLogHandler.writeToStandardError)
    }

    /// A handler giving each line (without its newline) to `output`.
    init(label: String, level: Logger.Level, metadataProvider: Logger.MetadataProvider?, output: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { storedMetadata[key] }
        set { storedMetadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = JSONLogHandler.merge(metadata, metadataProvider, event)
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let fields = merged.isEmpty ? "" : " " + merged.keys.sorted().map { "\($0)=\(merged[$0]!)" }.joined(separator: " ")
        let time = Date().formatted(Self.timeFormat)
        output("\(time) \(event.level) \(label):\(fields) [\(event.source)] \(event.message)")
    }

    static let timeFormat = Date.ISO8601FormatStyle(timeZone: .gmt)
}
