import Foundation
import HearthCore
public import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes every log message as one JSON object on a line of standard error (`--log-format json`), for
/// log collectors: `time` (RFC 3339, UTC, milliseconds), `level`, `label`, `message`, then every
/// metadata field as a key of its own (strings; nested values as JSON).
///
/// For example:
/// ```swift
/// LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: .info) }
/// // {"time":"2026-11-27T10:00:00.000Z","level":"info","label":"hearth","message":"Reloaded the TLS certificate","file":"/etc/hearth/fullchain.pem"}
/// ```
public struct JSONLogHandler: LogHandler {
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
        var fields: [(key: String, value: JSONValue)] = [
            ("time", .string(Date().formatted(Self.timeFormat))),
            ("level", .string(event.level.rawValue)),
            ("label", .string(label)),
            ("message", .string(event.message.description)),
        ]
        let merged = Self.merge(metadata, metadataProvider, event)
        let reserved: Set<String> = ["time", "level", "label", "message"]
        for key in merged.keys.sorted() {
            guard let value = merged[key] else { continue }
            // A field named like one of the line's own keys keeps its value under a prefixed name.
            fields.append((reserved.contains(key) ? "field.\(key)" : key, Self.json(value)))
        }
        var writer = JSONWriter(capacity: 256)
        writer.write(.object(fields))
        output(writer.string)
    }

    static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

    /// A line's fields: the handler's metadata, then the provider's, then the message's (later wins).
    static func merge(_ metadata: Logger.Metadata, _ provider: Logger.MetadataProvider?, _ event: LogEvent) -> Logger.Metadata {
        var merged = metadata
        if let provided = provider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        return merged
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let dictionary): .object(dictionary.keys.sorted().map { ($0, json(dictionary[$0]!)) })
        }
    }

    /// One `write(2)` per line, under a lock: lines from several threads never interleave.
    static let standardErrorLock = Mutex(())

    @Sendable static func writeToStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        standardErrorLock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
                    if written <= 0 {
                        if written < 0, errno == EINTR { continue }
                        return
                    }
                    offset += written
                }
            }
        }
    }
}
