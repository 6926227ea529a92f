import Foundation
import HearthCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A file or folder in a bucket, as FirebaseStorage's `StorageReference`: navigate with `child`,
/// `parent` and `root`; upload with `putData`/`putFile` (tasks with progress, pause and cancel, or
/// their `async` forms); download with `getData(maxSize:)`, `write(toFile:)` and `downloadURL()`;
/// read and change metadata; list and delete.
///
/// Every call is an HTTP request to Firebase Storage's `/v0` API with the signed-in user's token;
/// storage rules decide, and a refusal is ``StorageErrorCode/unauthorized``.
///
/// For example:
/// ```swift
/// let report = Storage.storage().reference(withPath: "reports/2024.pdf")
/// _ = try await report.putFileAsync(from: URL(fileURLWithPath: "/tmp/2024.pdf"))
/// let bytes = try await report.getData(maxSize: 10 << 20)
/// for item in try await report.parent()!.listAll().items { print(item.name) }
/// try await report.delete()
/// ```
public final class StorageReference: Sendable, Hashable, CustomStringConvertible {
    /// The storage the reference belongs to.
    public let storage: Storage
    /// The bucket of the object.
    public let bucket: String
    /// The object's path in the bucket, without leading or trailing slashes (`""` for the root).
    public let fullPath: String

    init(storage: Storage, bucket: String, path: String) {
        self.storage = storage
        self.bucket = bucket
        fullPath = path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    /// The last component of the path (`""` for the root).
    public var name: String { fullPath.split(separator: "/").last.map(String.init) ?? "" }

    /// A reference to a path below this one; slashes separate components, empty ones are dropped.
    public func child(_ path: String) -> StorageReference {
        let rest = path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        if rest.isEmpty { return self }
        return StorageReference(storage: storage, bucket: bucket, path: fullPath.isEmpty ? rest : "\(fullPath)/\(rest)")
    }

    /// The reference one level up, or nil for the root.
    public func parent() -> StorageReference? {
        guard !fullPath.isEmpty else { return nil }
        let components = fullPath.split(separator: "/")
        return StorageReference(storage: storage, bucket: bucket, path: components.dropLast().joined(separator: "/"))
    }

    /// The bucket's root.
    public func root() -> StorageReference { StorageReference(storage: storage, bucket: bucket, path: "") }

    /// `gs://bucket/path`.
    public var description: String { "gs://\(bucket)/\(fullPath)" }

    /// The same storage instance, bucket and path.
    public static func == (lhs: StorageReference, rhs: StorageReference) -> Bool {
        lhs.storage === rhs.storage && lhs.bucket == rhs.bucket && lhs.fullPath == rhs.fullPath
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(storage))
        hasher.combine(bucket)
        hasher.combine(fullPath)
    }

    // MARK: Uploads

    /// Uploads bytes: up to 256 KiB in one multipart request, more in resumable chunks (256 KiB,
    /// doubling up to ``Storage/uploadChunkSizeBytes``). Returns the running task; `completion`
    /// gets the stored object's metadata or the error, on the callback queue.
    ///
    /// ```swift
    /// let task = ref.putData(data, metadata: nil) { metadata, error in print(metadata?.size ?? 0, error ?? "") }
    /// task.observe(.progress) { print($0.progress?.fractionCompleted ?? 0) }
    /// ```
    @discardableResult
    public func putData(
        _ uploadData: Data, metadata: StorageMetadata? = nil, completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)? = nil
    ) -> StorageUploadTask {
        let task = StorageUploadTask(reference: self, source: .data(uploadData), metadata: metadata)
        if let completion { task.core.onCompletion { result in completion(try? result.get(), result.failure) } }
        task.enqueue()
        return task
    }

    /// Uploads a file, read in chunks (never whole into memory when it is over 256 KiB). Without a
    /// content type in `metadata`, one is inferred from the file's extension.
    @discardableResult
    public func putFile(
        from fileURL: URL, metadata: StorageMetadata? = nil, completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)? = nil
    ) -> StorageUploadTask {
        let task = StorageUploadTask(reference: self, source: .file(fileURL), metadata: metadata)
        if let completion { task.core.onCompletion { result in completion(try? result.get(), result.failure) } }
        task.enqueue()
        return task
    }

    /// Uploads bytes and returns the stored object's metadata; `onProgress` hears the progress on the
    /// callback queue. Cancelling the awaiting task cancels the upload.
    ///
    /// ```swift
    /// let metadata = try await ref.putDataAsync(data) { progress in print(progress?.fractionCompleted ?? 0) }
    /// ```
    public func putDataAsync(
        _ uploadData: Data, metadata: StorageMetadata? = nil, onProgress: (@Sendable (Progress?) -> Void)? = nil
    ) async throws -> StorageMetadata {
        try await Self.await(StorageUploadTask(reference: self, source: .data(uploadData), metadata: metadata), onProgress)
    }

    /// Uploads a file and returns the stored object's metadata (see ``putDataAsync(_:metadata:onProgress:)``).
    public func putFileAsync(
        from url: URL, metadata: StorageMetadata? = nil, onProgress: (@Sendable (Progress?) -> Void)? = nil
    ) async throws -> StorageMetadata {
        try await Self.await(StorageUploadTask(reference: self, source: .file(url), metadata: metadata), onProgress)
    }

    private static func await(_ task: StorageUploadTask, _ onProgress: (@Sendable (Progress?) -> Void)?) async throws -> StorageMetadata {
        if let onProgress { task.observe(.progress) { onProgress($0.progress) } }
        task.enqueue()
        return try await withTaskCancellationHandler {
            try await task.core.value()
        } onCancel: {
            task.cancel()
        }
    }

    // MARK: Downloads

    /// The object's bytes; fails with ``StorageErrorCode/downloadSizeExceeded`` when the object is
    /// larger than `maxSize` (at most `maxSize + 1` bytes are transferred to find out).
    public func data(maxSize: Int64) async throws -> Data {
        let task = StorageDownloadTask(reference: self, target: .memory(maxSize: maxSize))
        task.enqueue()
        return try await withTaskCancellationHandler {
            guard case .data(let data) = try await task.core.value() else { return Data() }
            return data
        } onCancel: {
            task.cancel()
        }
    }

    /// The object's bytes, as ``data(maxSize:)``.
    ///
    /// ```swift
    /// let bytes = try await ref.getData(maxSize: 1 << 20)
    /// ```
    public func getData(maxSize: Int64) async throws -> Data { try await data(maxSize: maxSize) }

    /// Downloads the object's bytes (see ``data(maxSize:)``) as a task; `completion` runs on the callback queue.
    @discardableResult
    public func getData(maxSize: Int64, completion: @escaping @Sendable (Data?, (any Error)?) -> Void) -> StorageDownloadTask {
        let task = StorageDownloadTask(reference: self, target: .memory(maxSize: maxSize))
        task.core.onCompletion { result in
            switch result {
            case .success(.data(let data)): completion(data, nil)
            case .success: completion(Data(), nil)
            case .failure(let error): completion(nil, error)
            }
        }
        task.enqueue()
        return task
    }

    /// Downloads the object into a file, in ranges of up to 8 MiB (never whole into memory), written
    /// to a temporary file beside it and moved into place at the end. Returns the running task.
    @discardableResult
    public func write(toFile fileURL: URL) -> StorageDownloadTask {
        write(toFile: fileURL, completion: nil)
    }

    /// As ``write(toFile:)``, with a completion handler on the callback queue.
    @discardableResult
    public func write(toFile fileURL: URL, completion: (@Sendable (URL?, (any Error)?) -> Void)?) -> StorageDownloadTask {
        let task = StorageDownloadTask(reference: self, target: .file(fileURL))
        if let completion {
            task.core.onCompletion { result in
                switch result {
                case .success: completion(fileURL, nil)
                case .failure(let error): completion(nil, error)
                }
            }
        }
        task.enqueue()
        return task
    }

    /// Downloads the object into a file (see ``write(toFile:)``) and returns its URL; `onProgress`
    /// hears the progress on the callback queue.
    ///
    /// ```swift
    /// let file = try await ref.writeAsync(toFile: destination) { print($0?.fractionCompleted ?? 0) }
    /// ```
    public func writeAsync(toFile fileURL: URL, onProgress: (@Sendable (Progress?) -> Void)? = nil) async throws -> URL {
        let task = StorageDownloadTask(reference: self, target: .file(fileURL))
        if let onProgress { task.observe(.progress) { onProgress($0.progress) } }
        task.enqueue()
        _ = try await withTaskCancellationHandler {
            try await task.core.value()
        } onCancel: {
            task.cancel()
        }
        return fileURL
    }

    /// A URL anyone can download the object from without credentials while its download token lasts:
    /// `http(s)://host/v0/b/{bucket}/o/{path}?alt=media&token={token}`. Needs read access.
    public func downloadURL() async throws -> URL {
        let metadata = try await getMetadata()
        guard let token = metadata.downloadTokens.first else {
            throw StorageError(.unknown, "The object has no download token.")
        }
        let client = storage.client
        return URL(string: client.url(bucket: bucket, path: fullPath).absoluteString + "?alt=media&token=\(StorageClient.encode(token))")!
    }

    /// As ``downloadURL()``, with a completion handler on the callback queue.
    public func downloadURL(completion: @escaping @Sendable (URL?, (any Error)?) -> Void) {
        complete(completion) { try await self.downloadURL() }
    }

    // MARK: Metadata

    /// The object's metadata (``StorageErrorCode/objectNotFound`` if there is none).
    public func getMetadata() async throws -> StorageMetadata {
        try requireObject("getMetadata")
        let response = try await storage.client.send("GET", storage.client.url(bucket: bucket, path: fullPath))
        return StorageMetadata(json: response.json, storage: storage)
    }

    /// As ``getMetadata()``, with a completion handler on the callback queue.
    public func getMetadata(completion: @escaping @Sendable (StorageMetadata?, (any Error)?) -> Void) {
        complete(completion) { try await self.getMetadata() }
    }

    /// Changes the object's metadata and returns the result. For metadata read from the server, only
    /// what changed since is sent (fields set to nil are removed); for a new `StorageMetadata()`, the
    /// fields that are set (custom metadata merges key by key).
    ///
    /// ```swift
    /// let metadata = try await ref.getMetadata()
    /// metadata.cacheControl = "public, max-age=300"
    /// metadata.customMetadata?["reviewed"] = "yes"
    /// let updated = try await ref.updateMetadata(metadata)
    /// ```
    public func updateMetadata(_ metadata: StorageMetadata) async throws -> StorageMetadata {
        try requireObject("updateMetadata")
        let body = Data(metadata.patchJSON().jsonText.utf8)
        let response = try await storage.client.send(
            "PATCH", storage.client.url(bucket: bucket, path: fullPath), headers: ["Content-Type": "application/json; charset=utf-8"], body: body
        )
        return StorageMetadata(json: response.json, storage: storage)
    }

    /// As ``updateMetadata(_:)``, with a completion handler on the callback queue.
    public func updateMetadata(_ metadata: StorageMetadata, completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)?) {
        complete(completion) { try await self.updateMetadata(metadata) }
    }

    // MARK: Delete

    /// Deletes the object (``StorageErrorCode/objectNotFound`` if there is none).
    public func delete() async throws {
        try requireObject("delete")
        _ = try await storage.client.send("DELETE", storage.client.url(bucket: bucket, path: fullPath))
    }

    /// As ``delete()``, with a completion handler on the callback queue.
    public func delete(completion: (@Sendable ((any Error)?) -> Void)?) {
        let queue = storage.callbackQueue
        Task {
            do {
                try await self.delete()
                queue.async { completion?(nil) }
            } catch {
                queue.async { completion?(error) }
            }
        }
    }

    // MARK: Listing

    /// Everything directly under this reference: all pages, folded into one result.
    public func listAll() async throws -> StorageListResult {
        var prefixes: [StorageReference] = [], items: [StorageReference] = []
        var token: String?
        repeat {
            let page = try await listPage(maxResults: nil, pageToken: token)
            prefixes += page.prefixes
            items += page.items
            token = page.pageToken
        } while token != nil
        return StorageListResult(prefixes: prefixes, items: items, pageToken: nil)
    }

    /// As ``listAll()``, with a completion handler on the callback queue.
    public func listAll(completion: @escaping @Sendable (StorageListResult?, (any Error)?) -> Void) {
        complete(completion) { try await self.listAll() }
    }

    /// The first page of up to `maxResults` (1…1000) entries, folders and objects together.
    public func list(maxResults: Int64) async throws -> StorageListResult {
        try await listPage(maxResults: maxResults, pageToken: nil)
    }

    /// As ``list(maxResults:)``, with a completion handler on the callback queue.
    public func list(maxResults: Int64, completion: @escaping @Sendable (StorageListResult?, (any Error)?) -> Void) {
        complete(completion) { try await self.list(maxResults: maxResults) }
    }

    /// The page after the one that returned `pageToken`.
    public func list(maxResults: Int64, pageToken: String) async throws -> StorageListResult {
        try await listPage(maxResults: maxResults, pageToken: pageToken)
    }

    /// As ``list(maxResults:pageToken:)``, with a completion handler on the callback queue.
    public func list(maxResults: Int64, pageToken: String, completion: @escaping @Sendable (StorageListResult?, (any Error)?) -> Void) {
        complete(completion) { try await self.list(maxResults: maxResults, pageToken: pageToken) }
    }

    func listPage(maxResults: Int64?, pageToken: String?) async throws(StorageError) -> StorageListResult {
        if let maxResults, !(1...1000).contains(maxResults) {
            throw StorageError(.invalidArgument, "maxResults must be between 1 and 1000, not \(maxResults).")
        }
        var query: [(String, String)] = [("prefix", fullPath.isEmpty ? "" : fullPath + "/"), ("delimiter", "/")]
        if let maxResults { query.append(("maxResults", String(maxResults))) }
        if let pageToken { query.append(("pageToken", pageToken)) }
        let response = try await storage.client.send("GET", storage.client.url(bucket: bucket, path: nil, query: query))
        let json = response.json
        let root = root()
        let prefixes = (json["prefixes"]?.arrayValue ?? []).compactMap { $0.stringValue }.map { root.child($0) }
        let items = (json["items"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }.map { root.child($0) }
        let token = json["nextPageToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        return StorageListResult(prefixes: prefixes, items: items, pageToken: token)
    }

    // MARK: Helpers

    /// Object calls need an object: the root is a folder.
    func requireObject(_ operation: String) throws(StorageError) {
        if fullPath.isEmpty { throw StorageError(.invalidArgument, "\(operation) needs an object; the root reference is a folder.") }
    }

    private func complete<T: Sendable>(_ completion: (@Sendable (T?, (any Error)?) -> Void)?, _ work: @escaping @Sendable () async throws -> T) {
        deliverResult(of: work, on: storage.callbackQueue, to: completion)
    }
}

extension Result {
    /// The error of a failure, or nil.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
