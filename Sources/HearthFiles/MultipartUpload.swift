import HearthCore
import MultipartKit
import NIOCore
import Synchronization

/// The body of a multipart upload (`multipart/related`: a JSON metadata part, then the bytes), read
/// as it streams in: the metadata part is collected up to ``maximumMetadataBytes`` (an upload with a
/// larger one fails with 400 as soon as that much has arrived), the data part is handed on chunk by
/// chunk, so a large upload never sits in memory.
///
/// Firebase's SDKs and `google-cloud-storage` send exactly two parts; anything else is a 400.
///
/// For example:
/// ```swift
/// let upload = MultipartUpload(body: request.body, boundary: "B")
/// let written = try await blobs.write(upload.data)
/// let metadata = try upload.metadata()
/// ```
struct MultipartUpload<Body: AsyncSequence & Sendable>: Sendable where Body.Element == ByteBuffer {
    let body: Body
    let boundary: String
    /// What the parse found: filled in while ``data`` is read.
    let state = SharedState()

    /// The largest metadata part accepted, in bytes. Cloud Storage's metadata is small (custom
    /// metadata at most 8 KiB), so this is generous and still bounds what one request holds in memory.
    static var maximumMetadataBytes: Int { 64 * 1024 }
    /// What may come before the data part in all: the metadata, plus its part's headers and boundaries.
    static var maximumBytesBeforeData: Int { maximumMetadataBytes + 16 * 1024 }

    static var metadataTooLarge: FilesError {
        FilesError(400, "The metadata part of a multipart upload is limited to \(maximumMetadataBytes / 1024) KiB.")
    }

    final class SharedState: Sendable {
        struct Parts: Sendable {
            var count = 0
            var metadata = ByteBuffer()
            var dataContentType: String?
            var finished = false
            /// The metadata part grew past ``maximumMetadataBytes``: the rest of it was dropped.
            var metadataOverflowed = false
            /// The body's bytes before the data part began, counting any the parser still held back
            /// (at most a boundary's worth): set when the first data bytes are handed on.
            var bytesBeforeData: Int?
        }
        let parts = Mutex(Parts())
    }

    /// The boundary of a `multipart/related` (or `multipart/form-data`) content type, unquoted.
    static func boundary(of contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// The second part's bytes, after `check` ran (once, before the first of them is handed on: the
    /// metadata part is complete by then).
    func data(_ check: @escaping @Sendable () async throws -> Void) -> CheckedData {
        CheckedData(data: data, check: check)
    }

    struct CheckedData: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let data: DataPart
        let check: @Sendable () async throws -> Void

        func makeAsyncIterator() -> Iterator { Iterator(base: data.makeAsyncIterator(), check: check) }

        struct Iterator: AsyncIteratorProtocol {
            var base: DataPart.Iterator
            let check: @Sendable () async throws -> Void
            var checked = false

            mutating func next() async throws -> ByteBuffer? {
                let chunk = try await base.next()
                if !checked {
                    checked = true
                    try await check()
                }
                return chunk
            }
        }
    }

    /// The second part's bytes.
    var data: DataPart { DataPart(body: body, boundary: boundary, state: state) }

    /// The metadata part as JSON, and the data part's content type; call after ``data`` was read.
    func metadata() throws(FilesError) -> (json: JSONValue, contentType: String?) {
        let parts = state.parts.withLock { $0 }
        guard parts.count == 2 else {
            throw FilesError(400, "A multipart upload has exactly two parts (metadata, then data); this one has \(parts.count).")
        }
        return try Self.decode(parts)
    }

    /// The same once the data part has begun (``data`` handed on its first chunk), before it is read.
    func metadataBeforeData() throws(FilesError) -> (json: JSONValue, contentType: String?) {
        try Self.decode(state.parts.withLock { $0 })
    }

    private static func decode(_ parts: SharedState.Parts) throws(FilesError) -> (json: JSONValue, contentType: String?) {
        let json: JSONValue
        do {
            json = parts.metadata.readableBytes == 0 ? .object([]) : try JSONValue(parsing: parts.metadata.readableBytesView)
        } catch {
            throw FilesError(400, "The metadata part is not JSON: \(error.message)")
        }
        return (json, parts.dataContentType)
    }

    struct DataPart: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let body: Body
        let boundary: String
        let state: SharedState

        func makeAsyncIterator() -> Iterator {
            Iterator(source: body.makeAsyncIterator(), boundary: boundary, state: state)
        }

        struct Iterator: AsyncIteratorProtocol {
            var source: Body.AsyncIterator
            let parser: MultipartParser
            let state: SharedState
            /// Data bytes parsed but not yet handed on (the parser's callbacks are synchronous).
            let ready: Ready
            /// Bytes read while still before the data part (preamble, headers, metadata).
            var bytesBeforeData = 0
            /// Every byte read from the body so far.
            var bytesRead = 0

            final class Ready {
                var chunks: [ByteBuffer] = []
            }

            init(source: Body.AsyncIterator, boundary: String, state: SharedState) {
                self.source = source
                self.state = state
                let parser = MultipartParser(boundary: boundary)
                let ready = Ready()
                parser.onHeader = { name, value in
                    state.parts.withLock { parts in
                        if parts.count == 1, name.lowercased() == "content-type" { parts.dataContentType = value }
                    }
                }
                parser.onBody = { buffer in
                    let index = state.parts.withLock { parts -> Int in
                        if parts.count == 0 {
                            if parts.metadata.readableBytes + buffer.readableBytes > MultipartUpload.maximumMetadataBytes {
                                parts.metadataOverflowed = true
                            } else {
                                parts.metadata.writeBuffer(&buffer)
                            }
                        }
                        return parts.count
                    }
                    if index == 1 { ready.chunks.append(buffer) }
                }
                parser.onPartComplete = { state.parts.withLock { $0.count += 1 } }
                self.parser = parser
                self.ready = ready
            }

            mutating func next() async throws -> ByteBuffer? {
                while ready.chunks.isEmpty {
                    guard let chunk = try await source.next() else { return nil }
                    bytesRead += chunk.readableBytes
                    do {
                        try parser.execute(chunk)
                    } catch {
                        throw FilesError(400, "The multipart body is malformed.")
                    }
                    if !ready.chunks.isEmpty {
                        let data = ready.chunks.reduce(0) { $0 + $1.readableBytes }
                        let before = bytesRead - data
                        state.parts.withLock { if $0.bytesBeforeData == nil { $0.bytesBeforeData = before } }
                    }
                    let (count, overflowed) = state.parts.withLock { ($0.count, $0.metadataOverflowed) }
                    if overflowed { throw MultipartUpload.metadataTooLarge }
                    if count == 0 {
                        // Still before the data part: headers and metadata only, and never more than the cap.
                        bytesBeforeData += chunk.readableBytes
                        if bytesBeforeData > MultipartUpload.maximumBytesBeforeData { throw MultipartUpload.metadataTooLarge }
                    }
                    if count > 2 {
                        throw FilesError(400, "A multipart upload has exactly two parts (metadata, then data).")
                    }
                }
                return ready.chunks.removeFirst()
            }
        }
    }
}
