import Foundation
import HearthCore

/// FirebaseStorage's error codes (the same raw values), so app code that switches on them ports as is.
///
/// For example:
/// ```swift
/// do { _ = try await reference.getMetadata() }
/// catch let error as StorageError where error.code == .objectNotFound { print("no such file") }
/// catch { if StorageErrorCode(rawValue: (error as NSError).code) == .unauthorized { print("not allowed") } }
/// ```
public enum StorageErrorCode: Int, Error, Sendable, Hashable {
    case unknown = -13000
    case objectNotFound = -13010
    case bucketNotFound = -13011
    case projectNotFound = -13012
    case quotaExceeded = -13013
    case unauthenticated = -13020
    case unauthorized = -13021
    case retryLimitExceeded = -13030
    case nonMatchingChecksum = -13031
    case downloadSizeExceeded = -13032
    case cancelled = -13040
    case invalidArgument = -13050
    case bucketMismatch = -13051
    case internalError = -13052
    case pathError = -13053
}

/// FirebaseStorage's error domain, the `domain` of every ``StorageError`` bridged to `NSError`.
///
/// ```swift
/// if let error = error as NSError?, error.domain == StorageErrorDomain,
///    StorageErrorCode(rawValue: error.code) == .objectNotFound { print("no such file") }
/// ```
public let StorageErrorDomain: String = "FIRStorageErrorDomain"

/// An error from the file service, the network or the client, as FirebaseStorage's `StorageError`:
/// one case per ``StorageErrorCode``, with the details Firebase attaches. It bridges to `NSError` in
/// ``StorageErrorDomain`` with the code's raw value and Firebase's `userInfo` keys (`ResponseErrorCode`
/// for the HTTP status, `bucket`, `object`, `ResponseBody`, `NSLocalizedDescription`).
///
/// For example:
/// ```swift
/// do { try await Storage.storage().reference(withPath: "private/report.pdf").delete() }
/// catch let error as StorageError {
///     switch error {
///     case .objectNotFound(let object, _): print("no \(object)")
///     case .unauthorized: print("not allowed")
///     default: print(error.code, error.message)
///     }
/// }
/// ```
public enum StorageError: Error, @unchecked Sendable, CustomStringConvertible, CustomNSError {
    // The `[String: Any]` payloads hold only strings and integers this file puts there: safe to share.
    case unknown(message: String, serverError: [String: Any])
    case objectNotFound(object: String, serverError: [String: Any])
    case bucketNotFound(bucket: String)
    case projectNotFound(project: String)
    case quotaExceeded(bucket: String, serverError: [String: Any])
    case unauthenticated(serverError: [String: Any])
    case unauthorized(bucket: String, object: String, serverError: [String: Any])
    case retryLimitExceeded
    case nonMatchingChecksum
    case downloadSizeExceeded(total: Int64, maxSize: Int64)
    case cancelled
    case invalidArgument(message: String)
    case internalError(message: String)
    case bucketMismatch(message: String)
    case pathError(message: String)

    /// An error with a code and a message, for the code's case (the HTTP status it came with, if any,
    /// and the bucket and object it concerns go into `serverError`).
    public init(_ code: StorageErrorCode, _ message: String, httpStatus: Int? = nil, bucket: String = "", object: String = "") {
        var info: [String: Any] = ["message": message]
        if let httpStatus { info["ResponseErrorCode"] = httpStatus }
        if !bucket.isEmpty { info["bucket"] = bucket }
        if !object.isEmpty { info["object"] = object }
        self = switch code {
        case .unknown: .unknown(message: message, serverError: info)
        case .objectNotFound: .objectNotFound(object: object, serverError: info)
        case .bucketNotFound: .bucketNotFound(bucket: bucket)
        case .projectNotFound: .projectNotFound(project: message)
        case .quotaExceeded: .quotaExceeded(bucket: bucket, serverError: info)
        case .unauthenticated: .unauthenticated(serverError: info)
        case .unauthorized: .unauthorized(bucket: bucket, object: object, serverError: info)
        case .retryLimitExceeded: .retryLimitExceeded
        case .nonMatchingChecksum: .nonMatchingChecksum
        case .downloadSizeExceeded: .downloadSizeExceeded(total: 0, maxSize: 0)
        case .cancelled: .cancelled
        case .invalidArgument: .invalidArgument(message: message)
        case .internalError: .internalError(message: message)
        case .bucketMismatch: .bucketMismatch(message: message)
        case .pathError: .pathError(message: message)
        }
    }

    /// Maps a failed response to a code as the official SDKs do (401 unauthenticated, 402 quota,
    /// 403 unauthorized, 404 object not found, else unknown), taking the message from Firebase's
    /// envelope `{"error": {"code": 403, "message": "…"}}` (the whole body goes under `ResponseBody`)
    /// and the bucket and object from the request's URL (`/v0/b/<bucket>/o/<object>` or
    /// `…/o?name=<object>`) unless given.
    init(status: Int, body: Data, url: URL? = nil, bucket: String? = nil, object: String? = nil) {
        var message = "HTTP \(status)"
        if let json = try? JSONValue(parsing: body), let text = json["error"]?["message"]?.stringValue ?? json["error"]?.stringValue {
            message = text
        }
        let code: StorageErrorCode = switch status {
        case 401: .unauthenticated
        case 402: .quotaExceeded
        case 403: .unauthorized
        case 404: .objectNotFound
        default: .unknown
        }
        let named: (bucket: String, object: String) = url.map(Self.location) ?? ("", "")
        self.init(code, message, httpStatus: status, bucket: bucket ?? named.bucket, object: object ?? named.object)
        guard let text = String(data: body, encoding: .utf8), !text.isEmpty else { return }
        switch self {
        case .unknown(let message, var info):
            info["ResponseBody"] = text
            self = .unknown(message: message, serverError: info)
        case .objectNotFound(let object, var info):
            info["ResponseBody"] = text
            self = .objectNotFound(object: object, serverError: info)
        case .quotaExceeded(let bucket, var info):
            info["ResponseBody"] = text
            self = .quotaExceeded(bucket: bucket, serverError: info)
        case .unauthenticated(var info):
            info["ResponseBody"] = text
            self = .unauthenticated(serverError: info)
        case .unauthorized(let bucket, let object, var info):
            info["ResponseBody"] = text
            self = .unauthorized(bucket: bucket, object: object, serverError: info)
        default:
            break
        }
    }

    /// The bucket and object a Firebase Storage URL names.
    private static func location(_ url: URL) -> (bucket: String, object: String) {
        let parts = url.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let b = parts.firstIndex(of: "b"), b + 1 < parts.count else { return ("", "") }
        let bucket = parts[b + 1]
        if let o = parts.firstIndex(of: "o"), o + 1 < parts.count {
            return (bucket, parts[(o + 1)...].joined(separator: "/"))
        }
        let name = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "name" }?.value
        return (bucket, name ?? "")
    }

    /// FirebaseStorage's code for this error.
    public var code: StorageErrorCode {
        switch self {
        case .unknown: .unknown
        case .objectNotFound: .objectNotFound
        case .bucketNotFound: .bucketNotFound
        case .projectNotFound: .projectNotFound
        case .quotaExceeded: .quotaExceeded
        case .unauthenticated: .unauthenticated
        case .unauthorized: .unauthorized
        case .retryLimitExceeded: .retryLimitExceeded
        case .nonMatchingChecksum: .nonMatchingChecksum
        case .downloadSizeExceeded: .downloadSizeExceeded
        case .cancelled: .cancelled
        case .invalidArgument: .invalidArgument
        case .internalError: .internalError
        case .bucketMismatch: .bucketMismatch
        case .pathError: .pathError
        }
    }

    /// The server's message (`Permission denied. No WRITE permission.`, `Not Found.`) or the client's.
    public var message: String {
        switch self {
        case .unknown(let message, _), .invalidArgument(let message), .internalError(let message),
            .bucketMismatch(let message), .pathError(let message):
            message
        case .objectNotFound(let object, let info):
            info["message"] as? String ?? "Object \(object) does not exist."
        case .quotaExceeded(let bucket, let info):
            info["message"] as? String ?? "Quota for bucket \(bucket) exceeded, please view quota on firebase.google.com."
        case .unauthenticated(let info):
            info["message"] as? String ?? "User is not authenticated, please authenticate using Firebase Authentication and try again."
        case .unauthorized(let bucket, let object, let info):
            info["message"] as? String ?? "User does not have permission to access gs://\(bucket)/\(object)."
        case .bucketNotFound(let bucket): "Bucket \(bucket) does not exist."
        case .projectNotFound(let project): "Project \(project) does not exist."
        case .retryLimitExceeded: "Max retry time for operation exceeded, please try again."
        case .nonMatchingChecksum: "Uploaded/downloaded object has a checksum which does not match the server's. Please retry the upload/download."
        case .downloadSizeExceeded(let total, let maxSize):
            "Attempted to download object with size of \(total) bytes, which exceeds the maximum size of \(maxSize) bytes. Consider raising the maximum download size, or using StorageReference.write(toFile:)"
        case .cancelled: "User cancelled the operation."
        }
    }

    /// The HTTP status the server answered with, when the error came from a response.
    public var httpStatus: Int? { serverError["ResponseErrorCode"] as? Int }

    private var serverError: [String: Any] {
        switch self {
        case .unknown(_, let info), .objectNotFound(_, let info), .quotaExceeded(_, let info), .unauthenticated(let info),
            .unauthorized(_, _, let info):
            info
        default: [:]
        }
    }

    public var description: String { "StorageError(\(code), \(message))" }

    // MARK: CustomNSError

    public static var errorDomain: String { StorageErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info = serverError
        info.removeValue(forKey: "message")
        info[NSLocalizedDescriptionKey] = firebaseDescription
        switch self {
        case .objectNotFound(let object, _): info["object"] = object
        case .unauthorized(let bucket, let object, _): info["bucket"] = bucket; info["object"] = object
        case .quotaExceeded(let bucket, _), .bucketNotFound(let bucket): info["bucket"] = bucket
        case .downloadSizeExceeded(let total, let maxSize): info["totalSize"] = total; info["maxAllowedSize"] = maxSize
        default: break
        }
        return info
    }

    /// FirebaseStorage's description of the error (its `NSLocalizedDescription`): for a refusal, its
    /// own sentence naming the object (the server's words are in ``message``).
    private var firebaseDescription: String {
        switch self {
        case .objectNotFound(let object, _): "Object \(object) does not exist."
        case .quotaExceeded(let bucket, _): "Quota for bucket \(bucket) exceeded, please view quota on firebase.google.com."
        case .unauthenticated: "User is not authenticated, please authenticate using Firebase Authentication and try again."
        case .unauthorized(let bucket, let object, _): "User does not have permission to access gs://\(bucket)/\(object)."
        case .cancelled: "User cancelled the upload/download."
        default: message
        }
    }
}

extension StorageError: Equatable {
    /// Errors of the same code with the same message are equal.
    public static func == (lhs: StorageError, rhs: StorageError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }
}
