import Foundation
import HearthCore

/// FirebaseStorage's error codes (the same raw values), so app code that switches on them ports as is.
///
/// For example:
/// ```swift
/// do { _ = try await reference.getMetadata() }
/// catch let error as StorageError where error.code == .objectNotFound { print("no such file") }
/// ```
public enum StorageErrorCode: Int, Sendable, Hashable {
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

/// An error from the file service, the network or the client, with FirebaseStorage's code and a
/// message (the server's, when it sent one). Bridged to `NSError` in FirebaseStorage's domain,
/// `FIRStorageErrorDomain`, with the code's raw value.
///
/// For example:
/// ```swift
/// do { try await Storage.storage().reference(withPath: "private/report.pdf").delete() }
/// catch let error as StorageError { print(error.code, error.message) }   // unauthorized, "Permission denied. No WRITE permission."
/// ```
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible, CustomNSError {
    public var code: StorageErrorCode
    /// The server's message (`Permission denied. No WRITE permission.`, `Not Found.`) or the client's.
    public var message: String
    /// The HTTP status the server answered with, when the error came from a response.
    public var httpStatus: Int?

    /// An error with a code and a message (and the HTTP status it came with, if any).
    public init(_ code: StorageErrorCode, _ message: String, httpStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
    }

    /// FirebaseStorage's error domain.
    public static let domain = "FIRStorageErrorDomain"

    /// Maps a failed response to a code as the official SDKs do (401 unauthenticated, 402 quota,
    /// 403 unauthorized, 404 object not found — or bucket, when the message says so — else unknown), taking the message
    /// from Firebase's envelope `{"error": {"code": 403, "message": "…"}}`.
    init(status: Int, body: Data) {
        var message = "HTTP \(status)"
        if let json = try? JSONValue(parsing: body), let text = json["error"]?["message"]?.stringValue ?? json["error"]?.stringValue {
            message = text
        }
        let code: StorageErrorCode = switch status {
        case 401: .unauthenticated
        case 402: .quotaExceeded
        case 403: .unauthorized
        case 404: message.lowercased().contains("bucket") ? .bucketNotFound : .objectNotFound
        default: .unknown
        }
        self.init(code, message, httpStatus: status)
    }

    public var description: String { "StorageError(\(code), \(message))" }

    // MARK: CustomNSError

    public static var errorDomain: String { domain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let httpStatus { info["ResponseErrorCode"] = httpStatus }
        return info
    }
}
