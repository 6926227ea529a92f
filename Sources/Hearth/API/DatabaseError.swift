import Foundation

/// An error from the database, with Firebase's error codes.
///
/// It bridges to `NSError` as FirebaseDatabase's are: domain `com.firebase`, code 1 (permission
/// denied), 2 (unavailable) or 3 (write cancelled), else 9999 as Firebase gives every other status,
/// and the server's reason as the localized description.
///
/// For example:
/// ```swift
/// do { try await ref.setValue(1) } catch let error as DatabaseError where error.code == .permissionDenied {
///     print("not allowed")
/// }
/// ```
public struct DatabaseError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError, CustomNSError {
    /// Firebase's codes (`FIRDatabaseErrorCode` / the server's status strings).
    public enum Code: Int, Sendable, Hashable {
        case permissionDenied = 1
        case unavailable = 2
        case writeCanceled = 3
        case invalidToken = 4
        case expiredToken = 5
        case dataStale = 6
        case maxRetries = 7
        case overriddenBySet = 8
        case disconnected = 9
        case networkError = 10
        case invalidData = 11
        case invalidQuery = 12
        case other = 999

        /// The server's status text for this code.
        public var status: String {
            switch self {
            case .permissionDenied: "permission_denied"
            case .unavailable: "unavailable"
            case .writeCanceled: "write_canceled"
            case .invalidToken: "invalid_token"
            case .expiredToken: "expired_token"
            case .dataStale: "datastale"
            case .maxRetries: "maxretry"
            case .overriddenBySet: "overriddenbyset"
            case .disconnected: "disconnected"
            case .networkError: "network_error"
            case .invalidData: "invalid_data"
            case .invalidQuery: "invalid_query"
            case .other: "failure"
            }
        }

        init(status: String) {
            switch status {
            case "permission_denied": self = .permissionDenied
            case "unavailable": self = .unavailable
            case "write_canceled": self = .writeCanceled
            case "invalid_token": self = .invalidToken
            case "expired_token": self = .expiredToken
            case "datastale": self = .dataStale
            case "maxretry": self = .maxRetries
            case "overriddenbyset", "set": self = .overriddenBySet
            case "disconnect", "disconnected": self = .disconnected
            case "network_error": self = .networkError
            case "invalid_data": self = .invalidData
            default: self = .other
            }
        }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The error for a server status such as `permission_denied`, with the server's text.
    init(status: String, reason: String) {
        self.init(Code(status: status), reason.isEmpty ? status : reason)
    }

    public var description: String { "\(code.status): \(message)" }
    public var errorDescription: String? { description }

    // MARK: CustomNSError

    /// FirebaseDatabase's error domain.
    public static let domain = "com.firebase"

    public static var errorDomain: String { domain }
    public var errorCode: Int {
        switch code {
        case .permissionDenied, .unavailable, .writeCanceled: code.rawValue
        default: 9999
        }
    }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
}
