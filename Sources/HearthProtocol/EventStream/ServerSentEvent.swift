public import HearthCore

/// One Server-Sent Event of the Firebase REST streaming protocol.
///
/// For example:
/// ```swift
/// let event = ServerSentEvent.put(path: .root, data: .leaf(.number(1)))
/// #expect(String(decoding: event.encoded(), as: UTF8.self) == "event: put\ndata: {\"path\":\"/\",\"data\":1}\n\n")
/// ```
public enum ServerSentEvent: Sendable, Equatable {
    /// Replace the data at `path` (relative to the listened location).
    case put(path: DatabasePath, data: Node, format: RenderFormat = .normal)
    /// Replace each named child under `path`; keys may contain `/`.
    case patch(path: DatabasePath, data: [(key: String, value: Node)], format: RenderFormat = .normal)
    /// Sent on idle streams so proxies keep them open.
    case keepAlive
    /// Read permission was lost; the stream ends.
    case cancel
    /// The credential expired; the client should reconnect with a new one.
    case authRevoked

    public static func == (lhs: ServerSentEvent, rhs: ServerSentEvent) -> Bool {
        lhs.encoded() == rhs.encoded()
    }

    /// The event's bytes: `event: <name>\ndata: <one line of JSON>\n\n`.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter()
        let name: StaticString
        switch self {
        case .put(let path, let data, let format):
            name = "put"
            writer.writeRaw("{\"path\":")
            writer.writeString(path.description)
            writer.writeRaw(",\"data\":")
            // A query's or a shallow view's own value is an object; what it holds renders as usual.
            data.write(to: &writer, format: path.isRoot ? format : format.forChildren)
            writer.writeRaw("}")
        case .patch(let path, let data, let format):
            name = "patch"
            writer.writeRaw("{\"path\":")
            writer.writeString(path.description)
            writer.writeRaw(",\"data\":{")
            for (i, entry) in data.enumerated() {
                if i > 0 { writer.comma() }
                writer.writeKey(entry.key)
                entry.value.write(to: &writer, format: format.forChildren)
            }
            writer.writeRaw("}}")
        case .keepAlive:
            name = "keep-alive"
            writer.writeRaw("null")
        case .cancel:
            name = "cancel"
            writer.writeRaw("null")
        case .authRevoked:
            name = "auth_revoked"
            // Sent unquoted: the Python client compares the raw data with this text.
            writer.writeRaw("credential is no longer valid")
        }
        var out: [UInt8] = Array("event: ".utf8)
        out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        out.append(contentsOf: "\ndata: ".utf8)
        out.append(contentsOf: writer.bytes)
        out.append(contentsOf: "\n\n".utf8)
        return out
    }
}
