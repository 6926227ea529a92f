import HearthCore

/// A failed files request, answered in Firebase Storage's envelope
/// (`{"error": {"code": 403, "message": "Permission denied. No WRITE permission."}}`), or Cloud
/// Storage's, which adds an `errors` array with a `reason`.
///
/// For example:
/// ```swift
/// throw FilesError.notFound
/// ```
struct FilesError: HearthError, Equatable {
    var code: Int
    var message: String
    /// Cloud Storage's `reason` (`notFound`, `forbidden`, `invalid`, …).
    var reason: String
    /// For a request to a resumable upload: whether the upload is over after this error (its session
    /// gone or unusable), which Firebase's protocol tells the client as `X-Goog-Upload-Status: final`;
    /// nil when not known.
    var endsUpload: Bool?

    init(_ code: Int, _ message: String, reason: String? = nil, endsUpload: Bool? = nil) {
        self.code = code
        self.message = message
        self.reason = reason ?? Self.reason(for: code)
        self.endsUpload = endsUpload
    }

    static let notFound = FilesError(404, "Not Found.")
    static let noRead = FilesError(403, "Permission denied. No READ permission.")
    static let noWrite = FilesError(403, "Permission denied. No WRITE permission.")
    static let noList = FilesError(403, "Permission denied. No LIST permission.")
    static let adminRequired = FilesError(403, "Missing admin credentials.")
    static let conditionNotMet = FilesError(412, "At least one of the pre-conditions you specified did not hold.")
    /// A read whose "if not match" condition failed: answered 304 with no body.
    static let notModified = FilesError(304, "Not Modified")
    static let unauthenticated = FilesError(401, "Invalid credentials: send the admin secret as 'Authorization: Bearer <secret>'.", reason: "required")

    static func reason(for code: Int) -> String {
        switch code {
        case 400: "invalid"
        case 401: "required"
        case 403: "forbidden"
        case 404: "notFound"
        case 409: "conflict"
        case 412: "conditionNotMet"
        case 413: "uploadTooLarge"
        case 416: "requestedRangeNotSatisfiable"
        case 429: "rateLimitExceeded"
        case 501: "notImplemented"
        default: "backendError"
        }
    }

    var firebaseBody: JSONValue {
        .object([("error", .object([("code", .number(Double(code))), ("message", .string(message))]))])
    }

    var cloudStorageBody: JSONValue {
        let detail: JSONValue = .object([("message", .string(message)), ("domain", .string("global")), ("reason", .string(reason))])
        return .object([("error", .object([("code", .number(Double(code))), ("message", .string(message)), ("errors", .array([detail]))]))])
    }
}
