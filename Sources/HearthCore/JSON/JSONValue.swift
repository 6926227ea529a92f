/// A parsed JSON document that keeps object key order and exact key bytes.
///
/// Request bodies and query parameters are parsed into this first; ``Node/init(json:context:)``
/// then validates them and turns them into database nodes.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a.utf8.elementsEqual(b.utf8)
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count
                && zip(a, b).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && $0.value == $1.value }
        default: return false
        }
    }

    /// Parses JSON text.
    ///
    /// For example:
    /// ```swift
    /// let value = try JSONValue(parsing: #"{"a": [1, true, "x"]}"#)
    /// ```
    public init(parsing text: String) throws(JSONError) {
        var text = text
        let result: Result<JSONValue, JSONError> = text.withUTF8 { buffer in
            Result { () throws(JSONError) -> JSONValue in try JSONValue(parsing: UnsafeRawBufferPointer(buffer)) }
        }
        self = try result.get()
    }

    /// Parses JSON from UTF-8 bytes.
    public init(parsing bytes: some Sequence<UInt8>) throws(JSONError) {
        let array = Array(bytes)
        let result: Result<JSONValue, JSONError> = array.withUnsafeBytes { raw in
            Result { () throws(JSONError) -> JSONValue in try JSONValue(parsing: raw) }
        }
        self = try result.get()
    }

    public init(parsing buffer: UnsafeRawBufferPointer) throws(JSONError) {
        var parser = JSONParser(buffer)
        self = try parser.parseDocument()
    }

    /// The JSON text, compact, with numbers printed as JavaScript prints them.
    public var jsonText: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.string
    }

    public var isPrimitive: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }

    /// The value of an object member, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The string, if this is a string: `json["name"]?.stringValue`.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}

/// A JSON syntax error, with the byte offset where it was found.
public struct JSONError: HearthError, Equatable {
    public var message: String
    public var offset: Int

    public init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "\(message) at byte \(offset)" }
}
