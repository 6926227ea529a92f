public import Hummingbird
import NIOCore

/// HEAD answered as its GET would be, as RFC 9110 asks of every server: the same status, headers and
/// `Content-Length`, without the body. Clients ask a download's size and type this way, and uptime
/// monitors ask whether a URL answers.
///
/// For example, in a handler:
/// ```swift
/// if request.method == .head {
///     return await respond(to: HeadRequest.get(asking: request), context: context).withoutBody()
/// }
/// ```
package enum HeadRequest {
    /// The GET a HEAD asks about: no body reaches its handler (a HEAD has none), and it never asks for
    /// an event stream (a HEAD's answer ends with its headers).
    package static func get(asking request: Request) -> Request {
        var head = request.head
        head.method = .get
        if head.headerFields[.accept]?.contains("text/event-stream") == true { head.headerFields[.accept] = nil }
        return Request(head: head, body: RequestBody(buffer: ByteBuffer()))
    }
}

extension Response {
    /// This answer to a GET as the answer to its HEAD: the body dropped, its length kept.
    package func withoutBody() -> Response {
        var response = self
        let length = headers[.contentLength] ?? body.contentLength.map(String.init)
        response.body = ResponseBody()
        response.headers[.contentLength] = length
        return response
    }
}
