// FirebaseStorage's Swift API, used the way Firebase declares it, against `import Hearth` alone.
//
// Never-called functions that only have to type-check, then offline tests. Each use of a `same` row of
// docs/compatibility.md follows a `// API: <ID>` line (checked by scripts/check-api-inventory.py).

import Foundation
import Hearth
import Testing

/// Synchronous code: the instance, references, every completion-handler and `Result` form, tasks.
func storageAPIs(fileURL: URL) throws {
    // API: Storage
    // API: Storage.storage()
    var storage: Storage = Storage.storage()
    // API: Storage.storage(url:)
    storage = Storage.storage(url: "gs://demo.appspot.com")
    // API: Storage.maxUploadRetryTime
    storage.maxUploadRetryTime = storage.maxUploadRetryTime + 1
    // API: Storage.maxDownloadRetryTime
    storage.maxDownloadRetryTime = storage.maxDownloadRetryTime + 1
    // API: Storage.maxOperationRetryTime
    storage.maxOperationRetryTime = storage.maxOperationRetryTime + 1
    // API: Storage.uploadChunkSizeBytes
    storage.uploadChunkSizeBytes = 1 << 20
    // API: Storage.callbackQueue
    let queue: DispatchQueue = storage.callbackQueue
    storage.callbackQueue = queue
    // API: Storage.useEmulator(withHost:port:)
    storage.useEmulator(withHost: "127.0.0.1", port: 9199)
    // API: Storage.reference()
    var ref: StorageReference = storage.reference()
    // API: Storage.reference(forURL:)
    ref = storage.reference(forURL: "gs://demo.appspot.com/images/a.jpg")
    // API: Storage.reference(for:)
    ref = try storage.reference(for: URL(string: "gs://demo.appspot.com/images/a.jpg")!)
    // API: Storage.reference(withPath:)
    ref = storage.reference(withPath: "images/a.jpg")

    // API: StorageReference.storage
    let _: Storage = ref.storage
    // API: StorageReference.bucket
    let _: String = ref.bucket
    // API: StorageReference.fullPath
    let _: String = ref.fullPath
    // API: StorageReference.name
    let _: String = ref.name
    // API: StorageReference.description
    let _: String = ref.description
    // API: StorageReference.root()
    ref = ref.root()
    // API: StorageReference.child(_:)
    ref = ref.child("images/b.jpg")
    // API: StorageReference.parent()
    if let parent = ref.parent() { ref = parent.child("c.jpg") }

    // API: StorageMetadata
    // API: StorageMetadata.init()
    let metadata = StorageMetadata()
    // API: StorageMetadata.contentType
    metadata.contentType = "image/jpeg"
    // API: StorageMetadata.customMetadata
    metadata.customMetadata = ["owner": "ada"]
    let data = Data("hello".utf8)

    // API: StorageReference.putData(_:metadata:)
    // API: StorageUploadTask
    let upload: StorageUploadTask = ref.putData(data)
    // API: StorageReference.putData(_:metadata:)
    ref.putData(data, metadata: metadata)
    // API: StorageReference.putData(_:metadata:completion:)
    ref.putData(data, metadata: metadata) { metadata, error in
        let _: StorageMetadata? = metadata
        let _: (any Error)? = error
    }
    // API: StorageReference.putData(_:metadata:completion:) Result
    _ = ref.putData(data, metadata: metadata) { (result: Result<StorageMetadata, any Error>) in
        switch result {
        case .success(let metadata): _ = metadata.size
        case .failure(let error): _ = error
        }
    }
    // API: StorageReference.putData(_:metadata:completion:) Result
    ref.putData(data) { result in
        if case .success(let metadata) = result { _ = metadata.name }
    }
    // API: StorageReference.putFile(from:metadata:)
    ref.putFile(from: fileURL)
    // API: StorageReference.putFile(from:metadata:)
    ref.putFile(from: fileURL, metadata: metadata)
    // API: StorageReference.putFile(from:metadata:completion:)
    ref.putFile(from: fileURL, metadata: nil) { metadata, error in
        let _: StorageMetadata? = metadata
        let _: (any Error)? = error
    }
    // API: StorageReference.putFile(from:metadata:completion:) Result
    ref.putFile(from: fileURL, metadata: metadata) { (result: Result<StorageMetadata, any Error>) in
        _ = result
    }
    // API: StorageReference.getData(maxSize:completion:)
    // API: StorageDownloadTask
    let download: StorageDownloadTask = ref.getData(maxSize: 1 << 20) { data, error in
        let _: Data? = data
        let _: (any Error)? = error
    }
    // API: StorageReference.getData(maxSize:completion:) Result
    ref.getData(maxSize: 1 << 20) { (result: Result<Data, any Error>) in
        _ = result
    }
    // API: StorageReference.write(toFile:)
    ref.write(toFile: fileURL)
    // API: StorageReference.write(toFile:completion:)
    ref.write(toFile: fileURL) { url, error in
        let _: URL? = url
        let _: (any Error)? = error
    }
    // API: StorageReference.write(toFile:completion:) Result
    ref.write(toFile: fileURL) { (result: Result<URL, any Error>) in
        _ = result
    }
    // API: StorageReference.downloadURL(completion:)
    ref.downloadURL { url, error in
        let _: URL? = url
        let _: (any Error)? = error
    }
    // API: StorageReference.downloadURL(completion:) Result
    ref.downloadURL { (result: Result<URL, any Error>) in
        _ = result
    }
    // API: StorageReference.listAll(completion:)
    ref.listAll { result, error in
        let _: (any Error)? = error
        guard let result else { return }
        listResultAPIs(result)
    }
    // API: StorageReference.listAll(completion:) Result
    ref.listAll { (result: Result<StorageListResult, any Error>) in
        _ = result
    }
    // API: StorageReference.list(maxResults:completion:)
    ref.list(maxResults: 10) { result, error in
        let _: StorageListResult? = result
        let _: (any Error)? = error
    }
    // API: StorageReference.list(maxResults:completion:) Result
    ref.list(maxResults: 10) { (result: Result<StorageListResult, any Error>) in
        _ = result
    }
    // API: StorageReference.list(maxResults:pageToken:completion:)
    ref.list(maxResults: 10, pageToken: "token") { result, error in
        let _: StorageListResult? = result
        let _: (any Error)? = error
    }
    // API: StorageReference.list(maxResults:pageToken:completion:) Result
    ref.list(maxResults: 10, pageToken: "token") { (result: Result<StorageListResult, any Error>) in
        _ = result
    }
    // API: StorageReference.getMetadata(completion:)
    ref.getMetadata { metadata, error in
        let _: StorageMetadata? = metadata
        let _: (any Error)? = error
    }
    // API: StorageReference.getMetadata(completion:) Result
    ref.getMetadata { (result: Result<StorageMetadata, any Error>) in
        _ = result
    }
    // API: StorageReference.updateMetadata(_:completion:)
    ref.updateMetadata(metadata) { metadata, error in
        let _: StorageMetadata? = metadata
        let _: (any Error)? = error
    }
    // API: StorageReference.updateMetadata(_:completion:) Result
    ref.updateMetadata(metadata) { (result: Result<StorageMetadata, any Error>) in
        _ = result
    }
    // API: StorageReference.delete(completion:)
    ref.delete { error in
        let _: (any Error)? = error
    }
    // API: StorageReference.delete(completion:)
    ref.delete(completion: nil)

    uploadTaskAPIs(upload)
    downloadTaskAPIs(download)
}

func uploadTaskAPIs(_ task: StorageUploadTask) {
    // API: StorageUploadTask.observe(_:handler:)
    let handle: String = task.observe(.progress) { snapshot in
        let _: Double? = snapshot.progress?.fractionCompleted
    }
    // API: StorageUploadTask.observe(_:handler:)
    task.observe(.success) { snapshot in
        taskSnapshotAPIs(snapshot)
    }
    // API: StorageUploadTask.removeObserver(withHandle:)
    task.removeObserver(withHandle: handle)
    // API: StorageUploadTask.removeAllObservers(for:)
    task.removeAllObservers(for: .progress)
    // API: StorageUploadTask.removeAllObservers()
    task.removeAllObservers()
    // API: StorageUploadTask.pause()
    task.pause()
    // API: StorageUploadTask.resume()
    task.resume()
    // API: StorageUploadTask.cancel()
    task.cancel()
    // API: StorageUploadTask.snapshot
    taskSnapshotAPIs(task.snapshot)
}

func downloadTaskAPIs(_ task: StorageDownloadTask) {
    // API: StorageDownloadTask.observe(_:handler:)
    let handle: String = task.observe(.pause) { _ in }
    // API: StorageDownloadTask.observe(_:handler:)
    task.observe(.failure) { snapshot in
        let _: (any Error)? = snapshot.error
    }
    // API: StorageDownloadTask.removeObserver(withHandle:)
    task.removeObserver(withHandle: handle)
    // API: StorageDownloadTask.removeAllObservers(for:)
    task.removeAllObservers(for: .success)
    // API: StorageDownloadTask.removeAllObservers()
    task.removeAllObservers()
    // API: StorageDownloadTask.pause()
    task.pause()
    // API: StorageDownloadTask.resume()
    task.resume()
    // API: StorageDownloadTask.cancel()
    task.cancel()
    // API: StorageDownloadTask.snapshot
    let _: StorageTaskSnapshot = task.snapshot
}

/// The task classes' shared base and protocol, as code typed against them uses them, and the
/// reference types Firebase declares as classes.
func taskBaseAPIs(ref: StorageReference, metadata: StorageMetadata, page: StorageListResult) throws {
    // API: StorageReference
    let same: StorageReference = ref
    let _: Bool = same === ref
    // API: StorageListResult
    let _: AnyObject = page
    // API: StorageTaskSnapshot
    let snapshot: StorageTaskSnapshot = ref.putData(Data()).snapshot
    let _: AnyObject = snapshot
    // API: StorageObservableTask
    let observable: StorageObservableTask = ref.putData(Data(), metadata: metadata)
    // API: StorageObservableTask.observe(_:handler:)
    let handle: String = observable.observe(.progress) { _ in }
    // API: StorageObservableTask.removeObserver(withHandle:)
    observable.removeObserver(withHandle: handle)
    // API: StorageObservableTask.removeAllObservers(for:)
    observable.removeAllObservers(for: .success)
    // API: StorageObservableTask.removeAllObservers()
    observable.removeAllObservers()
    // API: StorageTask
    let task: StorageTask = observable
    // API: StorageTask.snapshot
    let _: StorageTaskSnapshot = task.snapshot
    // API: StorageTaskManagement
    let managed: any StorageTaskManagement = ref.write(toFile: URL(fileURLWithPath: "/tmp/file"))
    // API: StorageTaskManagement.enqueue()
    managed.enqueue()
    // API: StorageUploadTask.enqueue()
    ref.putData(Data()).enqueue()
    // API: StorageDownloadTask.enqueue()
    ref.getData(maxSize: 10) { _, _ in }.enqueue()
    // API: StorageMetadata.dictionaryRepresentation()
    let _: [String: AnyHashable] = metadata.dictionaryRepresentation()
    // API: StorageErrorCode
    let code: StorageErrorCode = .objectNotFound
    if Bool.random() { throw code }
    do { try ref.storage.reference(for: URL(string: "gs://other-bucket/a")!).delete { _ in } } catch let error as StorageErrorCode {
        let _: Int = error.rawValue
    } catch {}
}

func taskSnapshotAPIs(_ snapshot: StorageTaskSnapshot) {
    // API: StorageTaskSnapshot.metadata
    let _: StorageMetadata? = snapshot.metadata
    // API: StorageTaskSnapshot.reference
    let _: StorageReference = snapshot.reference
    // API: StorageTaskSnapshot.progress
    let _: Progress? = snapshot.progress
    // API: StorageTaskSnapshot.error
    let _: (any Error)? = snapshot.error
    // API: StorageTaskSnapshot.status
    // API: StorageTaskStatus
    let _: StorageTaskStatus = snapshot.status
    // API: StorageTaskSnapshot.description
    let _: String = snapshot.description
}

func listResultAPIs(_ result: StorageListResult) {
    // API: StorageListResult.prefixes
    let _: [StorageReference] = result.prefixes
    // API: StorageListResult.items
    let _: [StorageReference] = result.items
    // API: StorageListResult.pageToken
    let _: String? = result.pageToken
}

func storageMetadataAPIs(_ metadata: StorageMetadata) {
    // API: StorageMetadata.bucket
    let _: String = metadata.bucket
    // API: StorageMetadata.cacheControl
    metadata.cacheControl = "public, max-age=300"
    // API: StorageMetadata.contentDisposition
    metadata.contentDisposition = "inline"
    // API: StorageMetadata.contentEncoding
    metadata.contentEncoding = "gzip"
    // API: StorageMetadata.contentLanguage
    metadata.contentLanguage = "en"
    // API: StorageMetadata.contentType
    let _: String? = metadata.contentType
    // API: StorageMetadata.md5Hash
    let _: String? = metadata.md5Hash
    // API: StorageMetadata.generation
    let _: Int64 = metadata.generation
    // API: StorageMetadata.customMetadata
    let _: [String: String]? = metadata.customMetadata
    // API: StorageMetadata.metageneration
    let _: Int64 = metadata.metageneration
    // API: StorageMetadata.name
    let _: String? = metadata.name
    // API: StorageMetadata.path
    let _: String? = metadata.path
    // API: StorageMetadata.size
    let _: Int64 = metadata.size
    // API: StorageMetadata.timeCreated
    let _: Date? = metadata.timeCreated
    // API: StorageMetadata.updated
    let _: Date? = metadata.updated
    // API: StorageMetadata.isFile
    let _: Bool = metadata.isFile
    // API: StorageMetadata.isFolder
    let _: Bool = metadata.isFolder
    // API: StorageMetadata.description
    let _: String = metadata.description
    // API: StorageMetadata.init(dictionary:)
    let _ = StorageMetadata(dictionary: ["contentType": "image/png", "metadata": ["owner": "ada"]])
    let dictionary: [String: AnyHashable] = ["contentType": "image/png"]
    // API: StorageMetadata.init(dictionary:)
    let _ = StorageMetadata(dictionary: dictionary)
}

/// Async code: the async forms, and synchronous calls without `await`.
func storageAPIsAsync(ref: StorageReference, fileURL: URL) async throws {
    // Synchronous calls without `await`: none has a same-named async form.
    // API: StorageMetadata.init()
    let metadata = StorageMetadata()
    // API: StorageMetadata.contentType
    metadata.contentType = "image/jpeg"
    // API: StorageReference.child(_:)
    let image = ref.child("images/a.jpg")
    // API: StorageReference.putData(_:metadata:)
    let task = image.putData(Data([1, 2, 3]), metadata: metadata)
    // API: StorageUploadTask.observe(_:handler:)
    task.observe(.progress) { _ in }
    // API: StorageReference.downloadURL(completion:)
    image.downloadURL { _, _ in }
    // API: StorageReference.delete(completion:)
    image.delete { _ in }

    // API: StorageReference.putDataAsync(_:metadata:onProgress:)
    let uploaded: StorageMetadata = try await image.putDataAsync(Data([1, 2, 3]), metadata: metadata) { progress in
        let _: Progress? = progress
    }
    _ = uploaded.size
    // API: StorageReference.putDataAsync(_:metadata:onProgress:)
    _ = try await image.putDataAsync(Data())
    // API: StorageReference.putFileAsync(from:metadata:onProgress:)
    let _: StorageMetadata = try await image.putFileAsync(from: fileURL)
    // API: StorageReference.putFileAsync(from:metadata:onProgress:)
    _ = try await image.putFileAsync(from: fileURL, metadata: metadata) { _ in }
    // API: StorageReference.data(maxSize:)
    let _: Data = try await image.data(maxSize: 1 << 20)
    // API: StorageReference.writeAsync(toFile:onProgress:)
    let _: URL = try await image.writeAsync(toFile: fileURL)
    // API: StorageReference.writeAsync(toFile:onProgress:)
    _ = try await image.writeAsync(toFile: fileURL) { progress in
        let _: Progress? = progress
    }
    // API: StorageReference.downloadURL() async
    let _: URL = try await image.downloadURL()
    // API: StorageReference.listAll() async
    let all: StorageListResult = try await ref.listAll()
    listResultAPIs(all)
    // API: StorageReference.list(maxResults:) async
    let page: StorageListResult = try await ref.list(maxResults: 10)
    if let token = page.pageToken {
        // API: StorageReference.list(maxResults:pageToken:) async
        _ = try await ref.list(maxResults: 10, pageToken: token)
    }
    // API: StorageReference.getMetadata() async
    let current: StorageMetadata = try await image.getMetadata()
    storageMetadataAPIs(current)
    // API: StorageReference.updateMetadata(_:) async
    let _: StorageMetadata = try await image.updateMetadata(metadata)
    // API: StorageReference.delete() async
    try await image.delete()

    // Matching errors.
    do {
        _ = try await image.data(maxSize: 10)
    } catch let error as StorageError {
        // API: StorageError
        switch error {
        // API: StorageError.objectNotFound(object:serverError:)
        case .objectNotFound(let object, _): _ = object
        // API: StorageError.downloadSizeExceeded(total:maxSize:)
        case .downloadSizeExceeded(let total, let maxSize): _ = (total, maxSize)
        // API: StorageError.unauthorized(bucket:object:serverError:)
        case .unauthorized(let bucket, let object, _): _ = (bucket, object)
        default: break
        }
    } catch {
        // API: StorageErrorCode.init(rawValue:)
        // API: StorageErrorCode.objectNotFound
        if let code = StorageErrorCode(rawValue: (error as NSError).code), code == .objectNotFound {}
        // API: StorageErrorDomain
        if (error as NSError).domain == StorageErrorDomain {}
    }
}

@Suite("FirebaseStorage API, offline")
struct StorageAPIOfflineTests {
    @Test("StorageMetadata is a class: a second reference sees the change")
    func metadataReferenceSemantics() {
        // API: StorageMetadata.init()
        let metadata = StorageMetadata()
        let alias = metadata
        // API: StorageMetadata.contentType
        alias.contentType = "image/jpeg"
        // API: StorageMetadata.customMetadata
        alias.customMetadata = ["owner": "ada"]
        #expect(metadata.contentType == "image/jpeg")
        #expect(metadata.customMetadata == ["owner": "ada"])
        // API: StorageMetadata
        #expect(metadata === alias)
    }

    @Test("StorageMetadata(dictionary:) reads Firebase's keys")
    func metadataFromDictionary() {
        // API: StorageMetadata.init(dictionary:)
        let metadata = StorageMetadata(dictionary: ["contentType": "text/plain", "cacheControl": "no-cache", "metadata": ["a": "b"]])
        #expect(metadata.contentType == "text/plain")
        #expect(metadata.cacheControl == "no-cache")
        #expect(metadata.customMetadata == ["a": "b"])
    }

    @Test("dictionaryRepresentation() has Firebase's types and reads back")
    func metadataDictionaryRepresentation() {
        let metadata = StorageMetadata(dictionary: ["name": "a/b.txt", "size": Int64(12), "generation": "7", "contentType": "text/plain"])
        let dictionary = metadata.dictionaryRepresentation()
        #expect(dictionary["size"] as? Int64 == 12)
        #expect(dictionary["generation"] as? String == "7")
        #expect(dictionary["name"] as? String == "a/b.txt")
        let again = StorageMetadata(dictionary: dictionary)
        #expect(again.size == 12 && again.generation == 7 && again.path == "a/b.txt" && again.name == "b.txt")
    }

    @Test("StorageTaskStatus has Firebase's raw values")
    func taskStatusRawValues() {
        // API: StorageTaskStatus.unknown
        #expect(StorageTaskStatus.unknown.rawValue == 0)
        // API: StorageTaskStatus.resume
        #expect(StorageTaskStatus.resume.rawValue == 1)
        // API: StorageTaskStatus.progress
        #expect(StorageTaskStatus.progress.rawValue == 2)
        // API: StorageTaskStatus.pause
        #expect(StorageTaskStatus.pause.rawValue == 3)
        // API: StorageTaskStatus.success
        #expect(StorageTaskStatus.success.rawValue == 4)
        // API: StorageTaskStatus.failure
        #expect(StorageTaskStatus.failure.rawValue == 5)
    }

    @Test("StorageErrorCode has Firebase's raw values")
    func errorCodeRawValues() {
        // API: StorageErrorCode.unknown
        #expect(StorageErrorCode.unknown.rawValue == -13000)
        // API: StorageErrorCode.objectNotFound
        #expect(StorageErrorCode.objectNotFound.rawValue == -13010)
        // API: StorageErrorCode.bucketNotFound
        #expect(StorageErrorCode.bucketNotFound.rawValue == -13011)
        // API: StorageErrorCode.projectNotFound
        #expect(StorageErrorCode.projectNotFound.rawValue == -13012)
        // API: StorageErrorCode.quotaExceeded
        #expect(StorageErrorCode.quotaExceeded.rawValue == -13013)
        // API: StorageErrorCode.unauthenticated
        #expect(StorageErrorCode.unauthenticated.rawValue == -13020)
        // API: StorageErrorCode.unauthorized
        #expect(StorageErrorCode.unauthorized.rawValue == -13021)
        // API: StorageErrorCode.retryLimitExceeded
        #expect(StorageErrorCode.retryLimitExceeded.rawValue == -13030)
        // API: StorageErrorCode.nonMatchingChecksum
        #expect(StorageErrorCode.nonMatchingChecksum.rawValue == -13031)
        // API: StorageErrorCode.downloadSizeExceeded
        #expect(StorageErrorCode.downloadSizeExceeded.rawValue == -13032)
        // API: StorageErrorCode.cancelled
        #expect(StorageErrorCode.cancelled.rawValue == -13040)
        // API: StorageErrorCode.invalidArgument
        #expect(StorageErrorCode.invalidArgument.rawValue == -13050)
        // API: StorageErrorCode.bucketMismatch
        #expect(StorageErrorCode.bucketMismatch.rawValue == -13051)
        // API: StorageErrorCode.internalError
        #expect(StorageErrorCode.internalError.rawValue == -13052)
        // API: StorageErrorCode.pathError
        #expect(StorageErrorCode.pathError.rawValue == -13053)
        // API: StorageErrorCode.init(rawValue:)
        #expect(StorageErrorCode(rawValue: -13010) == .objectNotFound)
    }

    @Test("StorageError bridges to NSError with Firebase's domain, codes and userInfo")
    func storageErrorBridging() {
        let cases: [(StorageError, StorageErrorCode)] = [
            // API: StorageError.unknown(message:serverError:)
            (.unknown(message: "boom", serverError: [:]), .unknown),
            // API: StorageError.objectNotFound(object:serverError:)
            (.objectNotFound(object: "a/b.txt", serverError: [:]), .objectNotFound),
            // API: StorageError.bucketNotFound(bucket:)
            (.bucketNotFound(bucket: "demo"), .bucketNotFound),
            // API: StorageError.projectNotFound(project:)
            (.projectNotFound(project: "demo"), .projectNotFound),
            // API: StorageError.quotaExceeded(bucket:serverError:)
            (.quotaExceeded(bucket: "demo", serverError: [:]), .quotaExceeded),
            // API: StorageError.unauthenticated(serverError:)
            (.unauthenticated(serverError: [:]), .unauthenticated),
            // API: StorageError.unauthorized(bucket:object:serverError:)
            (.unauthorized(bucket: "demo", object: "a", serverError: [:]), .unauthorized),
            // API: StorageError.retryLimitExceeded
            (.retryLimitExceeded, .retryLimitExceeded),
            // API: StorageError.nonMatchingChecksum
            (.nonMatchingChecksum, .nonMatchingChecksum),
            // API: StorageError.downloadSizeExceeded(total:maxSize:)
            (.downloadSizeExceeded(total: 10, maxSize: 5), .downloadSizeExceeded),
            // API: StorageError.cancelled
            (.cancelled, .cancelled),
            // API: StorageError.invalidArgument(message:)
            (.invalidArgument(message: "bad"), .invalidArgument),
            // API: StorageError.internalError(message:)
            (.internalError(message: "oops"), .internalError),
            // API: StorageError.bucketMismatch(message:)
            (.bucketMismatch(message: "other bucket"), .bucketMismatch),
            // API: StorageError.pathError(message:)
            (.pathError(message: "bad path"), .pathError),
        ]
        for (error, code) in cases {
            let nsError = error as NSError
            // API: StorageErrorDomain
            #expect(nsError.domain == StorageErrorDomain)
            #expect(nsError.code == code.rawValue)
            // API: StorageError.errorCode
            #expect(error.errorCode == code.rawValue)
            #expect(nsError.userInfo[NSLocalizedDescriptionKey] is String)
        }
        // API: StorageErrorDomain
        #expect(StorageErrorDomain == "FIRStorageErrorDomain")
        // API: StorageError.errorDomain
        #expect(StorageError.errorDomain == StorageErrorDomain)
        // API: StorageError.errorUserInfo
        let sizes = StorageError.downloadSizeExceeded(total: 10, maxSize: 5).errorUserInfo
        #expect(sizes["totalSize"] as? Int64 == 10)
        #expect(sizes["maxAllowedSize"] as? Int64 == 5)
        // API: StorageError.errorUserInfo
        let server = StorageError.unknown(message: "boom", serverError: ["ResponseErrorCode": 500]).errorUserInfo
        #expect(server["ResponseErrorCode"] as? Int == 500)
        #expect(server[NSLocalizedDescriptionKey] as? String == "boom")
        let missing = StorageError.objectNotFound(object: "a/b.txt", serverError: [:]) as NSError
        #expect(missing.localizedDescription.contains("a/b.txt"))
    }
}
