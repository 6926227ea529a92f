import Foundation

/// FirebaseStorage's `Result` callbacks: the same calls as the `(value, error)` forms, with one
/// `Result` instead (Swift picks the form by the closure's parameter count).
///
/// ```swift
/// ref.getMetadata { result in
///     switch result {
///     case .success(let metadata): print(metadata.size)
///     case .failure(let error): print(error)
///     }
/// }
/// ```
extension StorageReference {
    /// The `(value, error)` callback that calls `completion` with the matching `Result`.
    private static func pair<T>(_ completion: @escaping @Sendable (Result<T, any Error>) -> Void) -> @Sendable (T?, (any Error)?) -> Void {
        { value, error in
            if let value {
                completion(.success(value))
            } else {
                completion(.failure(error ?? StorageError.unknown(message: "No value and no error", serverError: [:])))
            }
        }
    }

    /// As ``downloadURL(completion:)-(_)``, with a `Result`.
    public func downloadURL(completion: @escaping @Sendable (Result<URL, any Error>) -> Void) {
        downloadURL(completion: Self.pair(completion))
    }

    /// As ``getData(maxSize:completion:)-(_,_)``, with a `Result`.
    @discardableResult
    public func getData(maxSize: Int64, completion: @escaping @Sendable (Result<Data, any Error>) -> Void) -> StorageDownloadTask {
        getData(maxSize: maxSize, completion: Self.pair(completion))
    }

    /// As ``getMetadata(completion:)-(_)``, with a `Result`.
    public func getMetadata(completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void) {
        getMetadata(completion: Self.pair(completion))
    }

    /// As ``list(maxResults:pageToken:completion:)-(_,_,_)``, with a `Result`.
    public func list(maxResults: Int64, pageToken: String, completion: @escaping @Sendable (Result<StorageListResult, any Error>) -> Void) {
        list(maxResults: maxResults, pageToken: pageToken, completion: Self.pair(completion))
    }

    /// As ``list(maxResults:completion:)-(_,_)``, with a `Result`.
    public func list(maxResults: Int64, completion: @escaping @Sendable (Result<StorageListResult, any Error>) -> Void) {
        list(maxResults: maxResults, completion: Self.pair(completion))
    }

    /// As ``listAll(completion:)-(_)``, with a `Result`.
    public func listAll(completion: @escaping @Sendable (Result<StorageListResult, any Error>) -> Void) {
        listAll(completion: Self.pair(completion))
    }

    /// As ``putData(_:metadata:completion:)-(_,_,_)``, with a `Result`.
    @discardableResult
    public func putData(
        _ uploadData: Data, metadata: StorageMetadata? = nil, completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void
    ) -> StorageUploadTask {
        putData(uploadData, metadata: metadata, completion: Self.pair(completion))
    }

    /// As ``putFile(from:metadata:completion:)-(_,_,_)``, with a `Result`.
    @discardableResult
    public func putFile(
        from fileURL: URL, metadata: StorageMetadata? = nil, completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void
    ) -> StorageUploadTask {
        putFile(from: fileURL, metadata: metadata, completion: Self.pair(completion))
    }

    /// As ``updateMetadata(_:completion:)-(_,_)``, with a `Result`.
    public func updateMetadata(_ metadata: StorageMetadata, completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void) {
        updateMetadata(metadata, completion: Self.pair(completion))
    }

    /// As ``write(toFile:completion:)-(_,_)``, with a `Result`.
    @discardableResult
    public func write(toFile fileURL: URL, completion: @escaping @Sendable (Result<URL, any Error>) -> Void) -> StorageDownloadTask {
        write(toFile: fileURL, completion: Self.pair(completion))
    }
}
