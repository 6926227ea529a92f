import Foundation
import HearthCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A running upload, as FirebaseStorage's `StorageUploadTask`: observe its progress and outcome,
/// pause and resume it (between chunks), or cancel it (the upload fails with
/// ``StorageErrorCode/cancelled`` and nothing is stored).
///
/// Up to 256 KiB go in one multipart request. Larger uploads use the resumable protocol: a `start`
/// request, then chunks of 256 KiB doubling up to ``Storage/uploadChunkSizeBytes`` (the last one
/// with `finalize`); after a dropped connection or a server failure the task asks the server how
/// much it has (`query`) and continues from there, until ``Storage/maxUploadRetryTime`` is spent.
/// Files are read chunk by chunk.
///
/// For example:
/// ```swift
/// let task = Storage.storage().reference(withPath: "videos/talk.mp4").putFile(from: file)
/// task.observe(.progress) { snapshot in print(Int((snapshot.progress?.fractionCompleted ?? 0) * 100), "%") }
/// task.observe(.success) { snapshot in print("stored", snapshot.metadata?.size ?? 0, "bytes") }
/// task.observe(.failure) { snapshot in print("failed:", snapshot.error ?? "") }
/// // later: task.pause(); task.resume(); task.cancel()
/// ```
public final class StorageUploadTask: StorageObservableTask, StorageTaskManagement, @unchecked Sendable {
    // @unchecked: immutable after init; the state is in `core`.
    enum Source: Sendable {
        case data(Data)
        case file(URL)
    }

    /// Uploads of at most this many bytes go in one multipart request; it is also the first chunk's size.
    static let multipartLimit: Int64 = 256 << 10

    let core: StorageTaskCore<StorageMetadata>
    let source: Source
    let metadata: StorageMetadata?

    init(reference: StorageReference, source: Source, metadata: StorageMetadata?) {
        let core = StorageTaskCore<StorageMetadata>(reference: reference, queue: reference.storage.callbackQueue, total: -1)
        self.core = core
        self.source = source
        // The caller's object may change after the call: the upload sends it as it was then.
        self.metadata = metadata?.copied()
        super.init(control: core)
    }

    /// The object being written.
    public var reference: StorageReference { core.reference }

    /// Pauses before the next chunk (a chunk in flight completes).
    public func pause() { core.pause() }
    /// Continues a paused upload.
    public func resume() { core.resume() }
    /// Stops the upload: the server discards what it received, and the task fails with `cancelled`.
    public func cancel() { core.cancel() }

    /// Starts the task; the SDK's calls that return a task have started it already (a second call does nothing).
    public func enqueue() {
        let source = source, metadata = metadata, core = core
        core.start(metadataOf: { $0 }) {
            try await Self.upload(source, metadata: metadata, core)
        }
    }

    // MARK: The upload

    static func upload(_ source: Source, metadata: StorageMetadata?, _ core: StorageTaskCore<StorageMetadata>) async throws -> StorageMetadata {
        let reference = core.reference
        let storage = reference.storage
        try reference.requireObject("An upload")
        let reader = try ChunkReader(source)
        defer { reader.close() }
        let metadata = metadata ?? StorageMetadata()
        if metadata.contentType == nil {
            if case .file(let url) = source { metadata.contentType = Self.contentType(forExtension: url.pathExtension) }
            metadata.contentType = metadata.contentType ?? "application/octet-stream"
        }
        let size = reader.size
        core.progress(completed: 0, total: size)
        if size <= multipartLimit {
            let bytes = try reader.read(at: 0, count: Int(size))
            let stored = try await multipart(bytes, metadata: metadata, reference, core)
            core.progress(completed: size)
            return stored
        }
        return try await resumable(reader, metadata: metadata, reference, storage, core)
    }

    /// One request: the metadata part, then the bytes (`multipart/related`).
    static func multipart(_ bytes: Data, metadata: StorageMetadata, _ reference: StorageReference, _ core: StorageTaskCore<StorageMetadata>)
        async throws -> StorageMetadata
    {
        let client = reference.storage.client
        let boundary = "hearth-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        var body = Data()
        body.append(Data("--\(boundary)\r\nContent-Type: application/json; charset=utf-8\r\n\r\n".utf8))
        body.append(Data(metadata.uploadJSON(name: reference.fullPath).jsonText.utf8))
        body.append(Data("\r\n--\(boundary)\r\nContent-Type: \(metadata.contentType ?? "application/octet-stream")\r\n\r\n".utf8))
        body.append(bytes)
        body.append(Data("\r\n--\(boundary)--".utf8))
        let response = try await client.send(
            "POST", client.url(bucket: reference.bucket, path: nil, query: [("name", reference.fullPath)]),
            headers: ["X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=\(boundary)"],
            body: body, budget: .upload, cancelCheck: core.checkpoint
        )
        return StorageMetadata(json: response.json, storage: reference.storage)
    }

    /// Start, chunks (doubling), finalize; `query` and continue after failures.
    static func resumable(
        _ reader: ChunkReader, metadata: StorageMetadata, _ reference: StorageReference, _ storage: Storage, _ core: StorageTaskCore<StorageMetadata>
    ) async throws -> StorageMetadata {
        let client = storage.client
        let size = reader.size
        let start = try await client.send(
            "POST", client.url(bucket: reference.bucket, path: nil, query: [("name", reference.fullPath)]),
            headers: [
                "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                "X-Goog-Upload-Header-Content-Length": String(size),
                "X-Goog-Upload-Header-Content-Type": metadata.contentType ?? "application/octet-stream",
                "Content-Type": "application/json; charset=utf-8",
            ],
            body: Data(metadata.uploadJSON(name: reference.fullPath).jsonText.utf8), budget: .upload, cancelCheck: core.checkpoint
        )
        guard let address = start.header("X-Goog-Upload-URL"), let uploadURL = URL(string: address) else {
            throw StorageError(.unknown, "The server did not return an upload URL (X-Goog-Upload-URL).")
        }
        do {
            return try await sendChunks(reader, to: uploadURL, reference, storage, core)
        } catch let error as StorageError where error.code == .cancelled {
            // Tell the server to drop what it has, from a task of its own (this one is cancelled).
            _ = await Task.detached {
                try? await client.sendOnce("POST", uploadURL, headers: ["X-Goog-Upload-Command": "cancel"])
            }.value
            throw error
        }
    }

    static func sendChunks(
        _ reader: ChunkReader, to uploadURL: URL, _ reference: StorageReference, _ storage: Storage, _ core: StorageTaskCore<StorageMetadata>
    ) async throws -> StorageMetadata {
        let client = storage.client
        let size = reader.size
        let largest = max(storage.uploadChunkSizeBytes, multipartLimit)
        var chunk = multipartLimit
        var offset: Int64 = 0
        var backoff = client.retry(.upload)
        while true {
            try await core.pausePoint()
            let length = min(chunk, size - offset)
            let last = offset + length == size
            let bytes = try reader.read(at: offset, count: Int(length))
            let response: StorageResponse?
            do {
                response = try await client.sendOnce(
                    "POST", uploadURL,
                    headers: [
                        "X-Goog-Upload-Command": last ? "upload, finalize" : "upload", "X-Goog-Upload-Offset": String(offset),
                        "Content-Type": "application/octet-stream",
                    ],
                    body: bytes
                )
            } catch let error as StorageError {
                throw error
            } catch {
                // No answer: the chunk may or may not have arrived. Ask (below), and continue from there.
                response = nil
                try await backoff.wait(after: "\(error)")
            }
            if let response {
                if (200..<300).contains(response.status) {
                    if last || response.header("X-Goog-Upload-Status") == "final" {
                        core.progress(completed: size)
                        if case .object = response.json { return StorageMetadata(json: response.json, storage: storage) }
                        return try await reference.getMetadata()
                    }
                    offset += length
                    if let received = response.header("X-Goog-Upload-Size-Received").flatMap({ Int64($0) }), received != offset {
                        offset = received
                    }
                    core.progress(completed: offset)
                    chunk = min(chunk * 2, largest)
                    backoff.reset()
                    continue
                }
                let error = StorageError(status: response.status, body: response.body, bucket: reference.bucket, object: reference.fullPath)
                // A server failure, or an offset the server disagrees with: ask where it is and go on.
                guard StorageClient.isRetryable(response.status) || (response.status == 400 && error.message.lowercased().contains("offset")) else {
                    throw error
                }
                try await backoff.wait(after: error.message)
            }
            chunk = multipartLimit
            switch try await query(uploadURL, client, &backoff, core) {
            case .final: return try await reference.getMetadata()
            case .active(let received):
                offset = received
                core.progress(completed: offset)
            }
        }
    }

    enum UploadState {
        case active(Int64)
        case final
    }

    /// `X-Goog-Upload-Command: query`: how many bytes the server has, retried within the budget.
    static func query(_ uploadURL: URL, _ client: StorageClient, _ backoff: inout HTTPRetry, _ core: StorageTaskCore<StorageMetadata>)
        async throws -> UploadState
    {
        while true {
            try core.checkpoint()
            let response: StorageResponse
            do {
                response = try await client.sendOnce("POST", uploadURL, headers: ["X-Goog-Upload-Command": "query"])
            } catch let error as StorageError {
                throw error
            } catch {
                try await backoff.wait(after: "\(error)")
                continue
            }
            if (200..<300).contains(response.status) {
                if response.header("X-Goog-Upload-Status") == "final" { return .final }
                guard let received = response.header("X-Goog-Upload-Size-Received").flatMap({ Int64($0) }) else {
                    throw StorageError(.unknown, "The server's answer to a query lacks X-Goog-Upload-Size-Received.")
                }
                return .active(received)
            }
            if StorageClient.isRetryable(response.status) {
                try await backoff.wait(after: StorageError(status: response.status, body: response.body).message)
                continue
            }
            throw StorageError(status: response.status, body: response.body, bucket: core.reference.bucket, object: core.reference.fullPath)
        }
    }

    /// Content types for common extensions (Firebase infers them from the file's type).
    static func contentType(forExtension ext: String) -> String? {
        switch ext.lowercased() {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "svg": "image/svg+xml"
        case "heic": "image/heic"
        case "txt": "text/plain"
        case "html", "htm": "text/html"
        case "css": "text/css"
        case "csv": "text/csv"
        case "js", "mjs": "text/javascript"
        case "json": "application/json"
        case "xml": "application/xml"
        case "pdf": "application/pdf"
        case "zip": "application/zip"
        case "gz": "application/gzip"
        case "mp3": "audio/mpeg"
        case "wav": "audio/wav"
        case "m4a": "audio/mp4"
        case "mp4": "video/mp4"
        case "mov": "video/quicktime"
        case "webm": "video/webm"
        default: nil
        }
    }
}

/// Reads an upload's bytes by range: from memory, or from a file handle (a chunk at a time).
final class ChunkReader: @unchecked Sendable {
    // Used by one task at a time (the upload's), so no lock.
    private let data: Data?
    private let handle: FileHandle?
    let size: Int64

    init(_ source: StorageUploadTask.Source) throws(StorageError) {
        switch source {
        case .data(let bytes):
            data = bytes
            handle = nil
            size = Int64(bytes.count)
        case .file(let url):
            do {
                let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
                guard (attributes[.type] as? FileAttributeType) != .typeDirectory else {
                    throw StorageError(.invalidArgument, "File at URL: \(url.path) is a directory.")
                }
                size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
                handle = try FileHandle(forReadingFrom: url)
                data = nil
            } catch let error as StorageError {
                throw error
            } catch {
                throw StorageError(.unknown, "File at URL: \(url.path) is not reachable. (\(error.localizedDescription))")
            }
        }
    }

    func read(at offset: Int64, count: Int) throws(StorageError) -> Data {
        if let data {
            let start = data.startIndex + Int(offset)
            return Data(data[start..<(start + count)])
        }
        guard let handle else { return Data() }
        do {
            try handle.seek(toOffset: UInt64(offset))
            var result = Data()
            while result.count < count {
                guard let part = try handle.read(upToCount: count - result.count), !part.isEmpty else { break }
                result.append(part)
            }
            guard result.count == count else {
                throw StorageError(.unknown, "The file is shorter than when the upload started (\(offset + Int64(result.count)) of \(size) bytes).")
            }
            return result
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.unknown, "Cannot read the file: \(error.localizedDescription)")
        }
    }

    func close() { try? handle?.close() }
}
