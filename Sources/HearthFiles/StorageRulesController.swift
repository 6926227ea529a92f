import HearthAccess
import HearthCore
import HearthRules
import HearthStorageRules
import HTTPTypes
import Hummingbird
import NIOCore

/// The storage rules over HTTP, for the admin: `GET /.settings/storage.rules` reads the source,
/// `PUT` replaces it (checked first: a 400 lists every diagnostic with line and column) and the new
/// rules apply to the next request.
///
/// For example:
/// ```sh
/// curl -X PUT --data-binary @storage.rules -H "Authorization: Bearer $SECRET" http://127.0.0.1:9000/.settings/storage.rules
/// ```
package struct StorageRulesController: Sendable {
    let files: FileService
    let authenticator: Authenticator
    /// The database's REST API: a route of ours under `/.settings/` would otherwise hide
    /// `/.settings/rules.json` from its catch-all route, so everything else there is handed on.
    let database: @Sendable (Request, HearthRequestContext) async -> Response

    package init(
        files: FileService, authenticator: Authenticator, database: @escaping @Sendable (Request, HearthRequestContext) async -> Response
    ) {
        self.files = files
        self.authenticator = authenticator
        self.database = database
    }

    package func register(on router: Router<HearthRequestContext>) {
        for method: HTTPRequest.Method in [.get, .head, .put, .post, .patch, .delete, .options] {
            router.on("/.settings/**", method: method) { request, context in
                guard request.uri.path == "/.settings/storage.rules", [.get, .head, .put].contains(request.method) else {
                    return await database(request, context)
                }
                if request.method == .head { return await self.respond(to: HeadRequest.get(asking: request)).withoutBody() }
                return await self.respond(to: request)
            }
        }
    }

    func respond(to request: Request) async -> Response {
        do {
            guard try FilesHTTP.identity(FilesHTTP.credential(request), authenticator).isAdmin else { throw FilesError.unauthenticated }
            if request.method == .get {
                return Response(
                    status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: files.rules.source))
                )
            }
            let body = try await request.body.collect(upTo: 1 << 20)
            do {
                _ = try await files.setRules(String(decoding: body.readableBytesView, as: UTF8.self))
            } catch {
                return FilesHTTP.json(.object([("error", .string(error.message))]), status: 400)
            }
            return FilesHTTP.json(.object([("status", .string("ok"))]))
        } catch let error as FilesError {
            return FilesHTTP.json(error.firebaseBody, status: error.code)
        } catch {
            return FilesHTTP.json(FilesError(413, "Rules are limited to 1 MiB.").firebaseBody, status: 413)
        }
    }
}
