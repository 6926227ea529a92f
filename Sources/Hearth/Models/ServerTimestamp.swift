import Foundation

/// Marks an optional `Date` of a `Codable` model as set by the server: a `nil` date is written as
/// ``ServerValue/timestamp()``, and the server's milliseconds since 1970 decode back into a date.
///
/// ```swift
/// struct Message: Codable {
///     var text: String
///     @ServerTimestamp var sentAt: Date?
/// }
/// try ref.setValue(from: Message(text: "hi"))   // sentAt: the server's clock
/// ```
@propertyWrapper
public struct ServerTimestamp: Codable, Equatable, Hashable, Sendable {
    public var wrappedValue: Date?

    public init(wrappedValue: Date?) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard !container.decodeNil() else {
            wrappedValue = nil
            return
        }
        let milliseconds = try container.decode(Double.self)
        wrappedValue = Date(timeIntervalSince1970: milliseconds / 1000)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(Int64((wrappedValue.timeIntervalSince1970 * 1000).rounded()))
        } else {
            try container.encode([".sv": "timestamp"])
        }
    }
}

extension KeyedDecodingContainer {
    /// A model read before the server filled its timestamp in (or without one) decodes with `nil`
    /// rather than failing on the missing key.
    public func decode(_ type: ServerTimestamp.Type, forKey key: Key) throws -> ServerTimestamp {
        try decodeIfPresent(type, forKey: key) ?? ServerTimestamp(wrappedValue: nil)
    }
}
