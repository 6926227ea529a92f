import Foundation
import Hummingbird
import NIOCore

/// Files the server hands to browsers: `/hearth.js`, the browser client, and `/hearth-auth.js`, its
/// accounts part. Compiled into the binary from
/// `Sources/HearthServer/Web` by the EmbedWebAssets build plugin, so a copied binary serves them too.
enum WebAssets {
    static let files: [(route: String, resource: String, contentType: String)] = [
        ("/hearth.js", "hearth.js", "text/javascript; charset=utf-8"),
        ("/hearth-auth.js", "hearth-auth.js", "text/javascript; charset=utf-8"),
        ("/hearth-storage.js", "hearth-storage.js", "text/javascript; charset=utf-8"),
    ]

    static func register(on router: Router<BasicRequestContext>) {
        for file in files {
            let bytes = EmbeddedWebAssets.files[file.resource]
            let respond: @Sendable (Request, BasicRequestContext) -> Response = { _, _ in
                guard let bytes else { return Response(status: .notFound) }
                let headers: HTTPFields = [
                    .contentType: file.contentType,
                    .accessControlAllowOrigin: "*",
                    .cacheControl: "no-cache",
                    .contentLength: String(bytes.count),
                ]
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            }
            router.get(RouterPath(file.route), use: respond)
            router.head(RouterPath(file.route), use: respond)
        }
    }
}
