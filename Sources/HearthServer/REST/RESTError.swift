import HearthCore
import HearthEngine
import HearthProtocol
import HearthRules
import HearthStorage
public import Hummingbird
import NIOCore

/// An error answered in Firebase's shape: `{"error" : "<message>"}` with its status code.
///
/// Hummingbird's own `HTTPError` renders `{"error":{"message":…}}`, which Firebase clients do not parse.
public struct RESTError: Error, Hummingbird.HTTPResponseError, Sendable {
    public var status: HTTPResponse.Status
    public var message: String

    public init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    public var headers: HTTPFields { [:] }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        errorResponse()
    }

    func errorResponse() -> Response {
        var writer = JSONWriter(pretty: true)
        writer.write(.object([(key: "error", value: .string(message))]))
        var headers = RESTController.jsonHeaders
        headers[.contentLength] = String(writer.bytes.count)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: writer.bytes)))
    }

    static func permissionDenied() -> RESTError { .init(.unauthorized, "Permission denied") }

    /// The one place engine and storage errors become HTTP statuses.
    static func from(_ error: any Error) -> RESTError {
        switch error {
        case let error as RESTError: return error
        case let error as WriteError:
            switch error.code {
            case .invalidData, .tooLarge: return .init(.badRequest, error.message)
            case .permissionDenied: return .permissionDenied()
            case .unavailable: return .init(.serviceUnavailable, error.message)
            }
        case let error as RESTParameterError: return .init(.badRequest, error.message)
        case let error as RulesError: return .init(.badRequest, error.message)
        case let error as DatabaseStorageError:
            switch error.code {
            case .invalidNamespace: return .init(.badRequest, "Invalid namespace: use letters, digits, '-' and '_'")
            default: return .init(.serviceUnavailable, "The database is unavailable; try again")
            }
        default: return .init(.internalServerError, "Internal error")
        }
    }
}

