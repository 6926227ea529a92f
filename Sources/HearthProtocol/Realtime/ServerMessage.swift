public import HearthCore

/// Messages the server sends, encoded as JSON text (UTF-8).
///
/// Pushes for a listen are encoded once and shared by every connection listening to the same path and
/// query: ``Push/body`` holds everything but the tag, and ``Push/encoded(tag:)`` adds each listener's.
///
/// For example:
/// ```swift
/// let push = ServerMessage.Push.overwrite(path: try DatabasePath("posts/p1"), data: .leaf(.number(3)))
/// #expect(String(decoding: push.encoded(tag: 1), as: UTF8.self)
///     == #"{"t":"d","d":{"a":"d","b":{"p":"posts/p1","d":3,"t":1}}}"#)
/// ```
public enum ServerMessage {
    /// The handshake, sent first on every connection.
    public static func handshake(timestamp: Int64, host: String, session: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.writeRaw(#"{"t":"c","d":{"t":"h","d":{"ts":"#)
        writer.writeRaw(String(timestamp))
        writer.writeRaw(#","v":"5","h":"#)
        writer.writeString(host)
        writer.writeRaw(#","s":"#)
        writer.writeString(session)
        writer.writeRaw("}}}")
        return writer.bytes
    }

    /// The answer to a client ping.
    public static let pong = Array(#"{"t":"c","d":{"t":"o","d":null}}"#.utf8)

    /// A shutdown: the client stops and does not reconnect on its own.
    public static func shutdown(reason: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.writeRaw(#"{"t":"c","d":{"t":"s","d":"#)
        writer.writeString(reason)
        writer.writeRaw("}}")
        return writer.bytes
    }

    /// The payload of a response.
    public enum Payload: Sendable {
        /// `""`: the acknowledgement of writes and most requests.
        case empty
        /// `{}`, or `{"w":["no_index"]}`: the acknowledgement of a listen.
        case listenAcknowledged(noIndexWarning: Bool)
        /// Data in export format (the answer to a get).
        case data(Node)
        /// A string (failure texts, `"unauthenticated"`).
        case text(String)
        /// Any JSON (the answer to auth).
        case json(JSONValue)
    }

    /// The reply to request `number`: `{"t":"d","d":{"r":N,"b":{"s":status,"d":payload}}}`.
    public static func response(_ number: Int, status: String = "ok", _ payload: Payload = .empty) -> [UInt8] {
        var writer = JSONWriter()
        writer.writeRaw(#"{"t":"d","d":{"r":"#)
        writer.writeRaw(String(number))
        writer.writeRaw(#","b":{"s":"#)
        writer.writeString(status)
        writer.writeRaw(#","d":"#)
        switch payload {
        case .empty: writer.writeRaw(#""""#)
        case .listenAcknowledged(let warn): writer.writeRaw(warn ? #"{"w":["no_index"]}"# : "{}")
        case .data(let node): node.write(to: &writer, format: .export)
        case .text(let text): writer.writeString(text)
        case .json(let json): writer.write(json)
        }
        writer.writeRaw("}}}")
        return writer.bytes
    }

    /// `c`: a listen was revoked. Tagged listens carry their query object in an array, as JS expects.
    public static func listenRevoked(path: DatabasePath, query: JSONValue?) -> [UInt8] {
        var writer = JSONWriter()
        writer.writeRaw(#"{"t":"d","d":{"a":"c","b":{"p":"#)
        writer.writeString(Push.wirePath(path))
        if let query {
            writer.writeRaw(#","q":["#)
            writer.write(query)
            writer.writeRaw("]")
        }
        writer.writeRaw("}}}")
        return writer.bytes
    }

    /// `ac`: the connection's credential is no longer valid; it now acts unauthenticated.
    public static func authRevoked(status: String, reason: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.writeRaw(#"{"t":"d","d":{"a":"ac","b":{"s":"#)
        writer.writeString(status)
        writer.writeRaw(#","d":"#)
        writer.writeString(reason)
        writer.writeRaw("}}}")
        return writer.bytes
    }

    /// A data push (`d` overwrite or `m` merge), without its tag.
    public struct Push: Sendable {
        /// `{"t":"d","d":{"a":…,"b":{"p":…,"d":…` — the message up to where the tag goes.
        public let body: [UInt8]

        /// `d`: the data at `path` is now exactly `data`.
        public static func overwrite(path: DatabasePath, data: Node) -> Push {
            var writer = JSONWriter(capacity: 128)
            writer.writeRaw(#"{"t":"d","d":{"a":"d","b":{"p":"#)
            writer.writeString(wirePath(path))
            writer.writeRaw(#","d":"#)
            data.write(to: &writer, format: .export)
            return Push(body: writer.bytes)
        }

        /// `m`: each relative path under `path` now holds its value (`null` deletes).
        public static func merge(path: DatabasePath, items: [(path: String, node: Node)]) -> Push {
            var writer = JSONWriter(capacity: 128)
            writer.writeRaw(#"{"t":"d","d":{"a":"m","b":{"p":"#)
            writer.writeString(wirePath(path))
            writer.writeRaw(#","d":{"#)
            for (i, item) in items.enumerated() {
                if i > 0 { writer.comma() }
                writer.writeKey(item.path)
                item.node.write(to: &writer, format: .export)
            }
            writer.writeRaw("}")
            return Push(body: writer.bytes)
        }

        /// The whole message, for a listen with this tag (nil for default listens).
        public func encoded(tag: Int?) -> [UInt8] {
            var bytes = body
            if let tag {
                bytes.append(contentsOf: #","t":"#.utf8)
                bytes.append(contentsOf: String(tag).utf8)
            }
            bytes.append(contentsOf: "}}}".utf8)
            return bytes
        }

        /// Paths in pushes have no leading slash; the root is `""`.
        static func wirePath(_ path: DatabasePath) -> String {
            path.keys.map(\.string).joined(separator: "/")
        }
    }
}
