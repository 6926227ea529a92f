import Foundation
import HearthCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A running download, as FirebaseStorage's `StorageDownloadTask`: `getData(maxSize:completion:)`
/// and `write(toFile:)` return one. Observe `.progress`, `.success` and `.failure`; `pause()` and
/// `resume()` act between ranges of a file download; `cancel()` stops it (``StorageErrorCode/cancelled``).
///
/// For example:
/// ```swift
/// let task = ref.write(toFile: URL(fileURLWithPath: "/tmp/talk.mp4"))
/// task.observe(.progress) { print($0.completedUnitCount, "of", $0.totalUnitCount) }
/// task.observe(.success) { _ in print("saved") }
/// ```
public final class StorageDownloadTask: StorageObservableTask, StorageTaskManagement, @unchecked Sendable {
    // @unchecked: immutable after init; the state is in `core`.
    enum Target: Sendable {
        /// Into memory, failing with `downloadSizeExceeded` beyond `maxSize` bytes.
        case memory(maxSize: Int64)
        /// Into a file, by ranges.
        case file(URL)
    }

    enum Output: Sendable {
        case data(Data)
        case file(URL)
    }

    /// A file download asks for ranges of this many bytes.
    static let rangeSize: Int64 = 8 << 20

    let core: StorageTaskCore<Output>
    let target: Target

    init(reference: StorageReference, target: Target) {
        let core = StorageTaskCore<Output>(reference: reference, queue: reference.storage.callbackQueue, total: -1)
        self.core = core
        self.target = target
        super.init(control: core)
    }

    /// The object being read.
    public var reference: StorageReference { core.reference }

    /// Pauses before the next range.
    public func pause() { core.pause() }
    /// Continues a paused download.
    public func resume() { core.resume() }
    /// Stops the download; the task fails with `cancelled` (a partial file is removed).
    public func cancel() { core.cancel() }

    /// Starts the task; the SDK's calls that return a task have started it already (a second call does nothing).
    public func enqueue() {
        let target = target, core = core
        core.start(metadataOf: { _ in nil }) {
            switch target {
            case .memory(let maxSize): return .data(try await Self.download(maxSize: maxSize, core))
            case .file(let url): return .file(try await Self.download(to: url, core))
            }
        }
    }

    /// One request for `bytes=0-maxSize`: more than `maxSize` bytes in the object is `downloadSizeExceeded`.
    static func download(maxSize: Int64, _ core: StorageTaskCore<Output>) async throws -> Data {
        let reference = core.reference
        try reference.requireObject("A download")
        guard maxSize >= 0 else { throw StorageError(.invalidArgument, "maxSize must not be negative.") }
        let client = reference.storage.client
        let url = client.url(bucket: reference.bucket, path: reference.fullPath, query: [("alt", "media")])
        let response = try await client.send(
            "GET", url, headers: ["Range": "bytes=0-\(maxSize)"], budget: .download,
            accept: { (200..<300).contains($0) || $0 == 416 }, cancelCheck: core.checkpoint
        )
        let total = Self.total(response) ?? Int64(response.body.count)
        if response.status == 416 {
            // An empty object has no byte 0 to start a range at.
            guard total == 0 else { throw StorageError(status: 416, body: response.body) }
            core.progress(completed: 0, total: 0)
            return Data()
        }
        if total > maxSize || Int64(response.body.count) > maxSize {
            throw StorageError.downloadSizeExceeded(total: total, maxSize: maxSize)
        }
        core.progress(completed: Int64(response.body.count), total: total)
        return response.body
    }

    /// Ranges of ``rangeSize`` appended to a temporary file beside `destination`, moved into place at
    /// the end; if the object changes meanwhile (another generation), the download starts over.
    static func download(to destination: URL, _ core: StorageTaskCore<Output>) async throws -> URL {
        let reference = core.reference
        try reference.requireObject("A download")
        let client = reference.storage.client
        let url = client.url(bucket: reference.bucket, path: reference.fullPath, query: [("alt", "media")])
        let directory = destination.deletingLastPathComponent()
        let partial = directory.appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).download")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: partial.path, contents: nil) else {
                throw StorageError(.unknown, "Cannot create \(partial.path).")
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.unknown, "Cannot create \(directory.path): \(error.localizedDescription)")
        }
        var done = false
        defer { if !done { try? FileManager.default.removeItem(at: partial) } }
        let handle: FileHandle
        do { handle = try FileHandle(forWritingTo: partial) } catch { throw StorageError(.unknown, "Cannot write \(partial.path).") }
        defer { try? handle.close() }
        var offset: Int64 = 0
        var generation: String?
        var total: Int64?
        while total == nil || offset < total! {
            try await core.pausePoint()
            let end = offset + rangeSize - 1
            let response = try await client.send(
                "GET", url, headers: ["Range": "bytes=\(offset)-\(end)"], budget: .download,
                accept: { (200..<300).contains($0) || $0 == 416 }, cancelCheck: core.checkpoint
            )
            if response.status == 416 {
                guard Self.total(response) == 0 else { throw StorageError(status: 416, body: response.body) }
                total = 0
                break
            }
            let current = response.header("x-goog-generation")
            if let generation, let current, generation != current {
                // The object was replaced: start again.
                offset = 0
                total = nil
                do {
                    try handle.truncate(atOffset: 0)
                } catch {
                    throw StorageError(.unknown, "Cannot write \(partial.path).")
                }
                continue
            }
            generation = current
            let size = Self.total(response) ?? Int64(response.body.count)
            do {
                try handle.seek(toOffset: UInt64(offset))
                try handle.write(contentsOf: response.body)
            } catch {
                throw StorageError(.unknown, "Cannot write \(partial.path): \(error.localizedDescription)")
            }
            offset += Int64(response.body.count)
            total = size
            core.progress(completed: offset, total: size)
            if response.status == 200 || response.body.isEmpty { break }  // the whole object came at once
        }
        do {
            try handle.synchronize()
            if FileManager.default.fileExists(atPath: destination.path) { try FileManager.default.removeItem(at: destination) }
            try FileManager.default.moveItem(at: partial, to: destination)
        } catch {
            throw StorageError(.unknown, "Cannot move the download to \(destination.path): \(error.localizedDescription)")
        }
        done = true
        return destination
    }

    /// The object's size from `Content-Range: bytes a-b/size` (or `bytes */size`).
    static func total(_ response: StorageResponse) -> Int64? {
        guard let range = response.header("Content-Range"), let slash = range.lastIndex(of: "/") else { return nil }
        return Int64(range[range.index(after: slash)...].trimmingCharacters(in: .whitespaces))
    }
}
