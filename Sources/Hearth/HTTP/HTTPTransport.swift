import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends one HTTP request and returns the whole response: the one way the SDK speaks HTTP (Auth's
/// Identity Toolkit calls and Storage's REST calls). ``Database/httpTransport`` picks the default:
/// ``URLSessionHTTPTransport``, or ``NIOHTTPTransport`` for `https` when
/// ``Database/trustedCertificateAuthorityFiles`` names authorities. Tests inject a scripted one (or put
/// one in front of the default) through `Auth.transport` and `Storage.transport`.
///
/// For example:
/// ```swift
/// struct Scripted: HTTPTransport {
///     func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
///         (Data("{}".utf8), HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!)
///     }
/// }
/// storage.transport = Scripted()
/// ```
protocol HTTPTransport: Sendable {
    /// Throws when no answer arrived (a network failure or cancellation); every HTTP answer is returned.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}
