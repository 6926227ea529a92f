import NIOCore
import Synchronization

/// Downloads whose bytes go from the blob's file to the socket without passing through the process: the
/// event loop's `sendfile`, as a NIO `FileRegion`, on connections whose pipeline has a
/// ``FileRegionWriter`` (plain HTTP/1; TLS must encrypt the bytes in the process).
///
/// Why a hand-off: Hummingbird 2's response writer carries only `ByteBuffer`s. So a download hands its
/// open file here and writes a small token as its body; the connection's ``FileRegionWriter``, below
/// Hummingbird in the pipeline, swaps the token for the file region. A token is only taken on the
/// connection it was handed to, and it starts with this process's random marker, so no body a client
/// can choose is ever taken for one. Regions a connection never sent (it closed first) are closed with
/// it. `docs/decisions/0026-downloads-as-file-regions.md` has the measurements.
///
/// For example:
/// ```swift
/// if let token = regions.hand(region, to: context.connection) {
///     return Response(status: .ok, body: ResponseBody(contentLength: count) { writer in
///         try await writer.write(token)
///         try await writer.finish(nil)
///     })
/// }
/// ```
public final class FileRegionDownloads: Sendable {
    /// A token: the marker (16 bytes), the region's number (8) and its length (8).
    static let tokenBytes = 32

    private struct State {
        /// The regions handed to each open connection with a ``FileRegionWriter``, by number.
        var connections: [ObjectIdentifier: [UInt64: FileRegion]] = [:]
        var nextNumber: UInt64 = 1
    }

    private let marker: (UInt64, UInt64)
    private let state = Mutex(State())
    /// Regions swapped in for their tokens so far (the tests check that downloads take this path).
    let sent = Atomic<Int>(0)

    /// A hand-off for one server: its file service hands regions to it, its connections' writers take them.
    public init() {
        var generator = SystemRandomNumberGenerator()
        marker = (generator.next(), generator.next())
    }

    /// Whether `connection` sends file regions: its pipeline has a ``FileRegionWriter``.
    public func sendsRegions(_ connection: ObjectIdentifier) -> Bool {
        state.withLock { $0.connections[connection] != nil }
    }

    /// Hands `region` to `connection` and returns the token to write as the body in its place; nil
    /// when the connection sends no regions (the region is then still the caller's to close).
    func hand(_ region: FileRegion, to connection: ObjectIdentifier) -> ByteBuffer? {
        let number: UInt64? = state.withLock { state in
            guard state.connections[connection] != nil else { return nil }
            let number = state.nextNumber
            state.nextNumber += 1
            state.connections[connection]![number] = region
            return number
        }
        guard let number else { return nil }
        var token = ByteBuffer()
        token.reserveCapacity(Self.tokenBytes)
        token.writeInteger(marker.0)
        token.writeInteger(marker.1)
        token.writeInteger(number)
        token.writeInteger(UInt64(region.readableBytes))
        return token
    }

    /// The region `buffer` stands for, if it is a token handed to `connection` and not yet taken. The
    /// caller owns the region from here: it sends it, or closes its file.
    func take(_ buffer: ByteBuffer, on connection: ObjectIdentifier) -> FileRegion? {
        guard let (number, _) = parse(buffer) else { return nil }
        return state.withLock { $0.connections[connection]?.removeValue(forKey: number) }
    }

    /// The bytes the token in `buffer` stands for; nil if it is no token (an ordinary body piece).
    /// The access log counts a download's bytes with it.
    public func byteCount(ofToken buffer: ByteBuffer) -> Int? {
        parse(buffer).map { Int($0.length) }
    }

    private func parse(_ buffer: ByteBuffer) -> (number: UInt64, length: UInt64)? {
        guard buffer.readableBytes == Self.tokenBytes,
              let first = buffer.getInteger(at: buffer.readerIndex, as: UInt64.self), first == marker.0,
              let second = buffer.getInteger(at: buffer.readerIndex + 8, as: UInt64.self), second == marker.1,
              let number = buffer.getInteger(at: buffer.readerIndex + 16, as: UInt64.self),
              let length = buffer.getInteger(at: buffer.readerIndex + 24, as: UInt64.self)
        else { return nil }
        return (number, length)
    }

    /// A connection with a ``FileRegionWriter`` opened.
    func opened(_ connection: ObjectIdentifier) {
        state.withLock { $0.connections[connection] = [:] }
    }

    /// A connection with a ``FileRegionWriter`` closed: the regions handed to it and never sent, for
    /// the caller to close.
    func closed(_ connection: ObjectIdentifier) -> [FileRegion] {
        state.withLock { Array(($0.connections.removeValue(forKey: connection) ?? [:]).values) }
    }
}
