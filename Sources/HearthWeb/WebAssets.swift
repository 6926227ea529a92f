import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Files the server hands to browsers: `/hearth.js`, the browser client (its modules under
/// `/hearth/`), `/hearth-auth.js` and `/hearth-storage.js`, its accounts and files parts; the start
/// page (`/`), the shared stylesheet
/// (`/ui/…`), the reference apps (`/apps/<name>/…`) and the console (`/console/`). Compiled into the binary from
/// `Sources/HearthWeb/Web` by the EmbedWebAssets build plugin, so a copied binary serves them too.
package enum WebAssets {
    static let files: [(route: String, resource: String, contentType: String)] = [
        ("/hearth.js", "hearth.js", "text/javascript; charset=utf-8"),
        ("/hearth-auth.js", "hearth-auth.js", "text/javascript; charset=utf-8"),
        ("/hearth-storage.js", "hearth-storage.js", "text/javascript; charset=utf-8"),
    ]

    /// Registers the files; `database` answers what is not a file under the page routes (the REST
    /// API's `/apps/….json`, so database paths named `apps` or `ui` stay reachable).
    package static func register<Context: RequestContext>(
        on router: Router<Context>,
        referenceApps: Bool = true,
        database: @escaping @Sendable (Request, Context) async -> Response = { _, _ in Response(status: .notFound) }
    ) {
        for file in files {
            let respond: @Sendable (Request, Context) -> Response = { _, _ in
                guard let (_, bytes) = WebAssets.file(file.resource) else { return Response(status: .notFound) }
                return clientModule(bytes, contentType: file.contentType)
            }
            router.get(RouterPath(file.route), use: respond)
            router.head(RouterPath(file.route), use: respond)
        }
        // The modules `/hearth.js` imports (`Web/hearth/*.js`), served like it: other origins' pages
        // import them too. Every method, and what is not one of them goes to `database`, so a database
        // location named `hearth` stays reachable (this route takes `/hearth/…` from the REST API's catch-all).
        let module: @Sendable (Request, Context) async -> Response = { request, context in
            guard request.method == .get || request.method == .head, request.uri.path.hasSuffix(".js"),
                let (_, bytes) = WebAssets.file(request.uri.path)
            else {
                return await database(request, context)
            }
            return clientModule(bytes, contentType: "text/javascript; charset=utf-8")
        }
        for method: HTTPRequest.Method in [.get, .head, .put, .post, .patch, .delete, .options] {
            router.on("/hearth/**", method: method, use: module)
            // The action pages below take `/__/…` and `/emulator/…` from the REST API's catch-all too
            // (the router does not go back to it once a segment matched), so the rest goes to `database`.
            router.on("/__/**", method: method, use: database)
            router.on("/emulator/**", method: method, use: database)
        }
        // Account email links (Firebase Hosting's handler path, and the Auth emulator's).
        for route in ["/__/auth/action", "/emulator/action"] {
            router.get(RouterPath(route)) { _, _ in serve("/auth/action.html") ?? Response(status: .notFound) }
        }
        router.get("/__/auth/action.js") { _, _ in serve("/auth/action.js") ?? Response(status: .notFound) }
        let page: @Sendable (Request, Context) async -> Response = { request, context in
            guard request.method == .get || request.method == .head else { return await database(request, context) }
            if !referenceApps, ReferenceApps.isAppPage(request.uri.path) {
                return Response(status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(
                    string: "The reference apps are off on this server: it listens on a public address (start it with --reference-apps to serve them).\n"
                )))
            }
            if let response = serve(request.uri.path) { return response }
            // `/apps/profiles` → `/apps/profiles/`, so the page's relative links resolve inside its folder.
            let path = request.uri.path
            if (path == "/console" || (path.hasPrefix("/apps/") && !path.dropFirst(6).contains("/"))), !path.contains("."),
                serve(path + "/") != nil
            {
                return Response(status: .movedPermanently, headers: [.location: path + "/"])
            }
            return await database(request, context)
        }
        // Every method: a route here takes its path from the REST API's catch-all, so writes to
        // database locations named `apps` or `ui` must be handed on.
        for route in ["/", "/index.html", "/ui/**", "/apps/**", "/console", "/console/**"] {
            for method: HTTPRequest.Method in [.get, .head, .put, .post, .patch, .delete, .options] {
                router.on(RouterPath(route), method: method, use: page)
            }
        }
    }

    /// A client module's response: no page policy (other origins' pages import it), any origin may read it.
    static func clientModule(_ bytes: Data, contentType: String) -> Response {
        let headers: HTTPFields = [
            .contentType: contentType,
            .accessControlAllowOrigin: "*",
            .cacheControl: "no-cache",
            .contentLength: String(bytes.count),
            contentTypeOptions: "nosniff",
        ]
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// For development only: `HEARTH_WEB_DIR=Sources/HearthWeb/Web` serves the pages (start page,
    /// `/ui`, `/apps`, `/console`) and the browser client (`/hearth.js` and its modules) from that
    /// folder on disk, so editing them needs no rebuild. Unset
    /// (the default), only the files compiled into the binary are served.
    static let developmentDirectory: String? = ProcessInfo.processInfo.environment["HEARTH_WEB_DIR"].flatMap { $0.isEmpty ? nil : $0 }

    /// The file at `path` (a folder means its `index.html`) and its name, or nil: read from
    /// `directory` (see ``developmentDirectory``) when one is given and has it, else embedded.
    static func file(_ path: String, from directory: String? = developmentDirectory) -> (name: String, bytes: Data)? {
        var name = String(path.drop { $0 == "/" })
        if name.isEmpty || name.hasSuffix("/") { name += "index.html" }
        guard !name.split(separator: "/").contains("..") else { return nil }
        let onDisk = directory.flatMap { FileManager.default.contents(atPath: $0 + "/" + name) }
        guard let bytes = onDisk ?? EmbeddedWebAssets.files[name] else { return nil }
        return (name, bytes)
    }

    /// The policy of every page and asset served from `Web` (start page, console, apps, account
    /// action page): scripts and styles only as files from this origin (no inline script or style
    /// element; the pages set styles through the CSSOM, which the policy allows), images also from
    /// `data:`, `blob:` (previews of files being uploaded or downloaded) and any http(s) URL (a
    /// profile's image URL is any address), connections to this origin over HTTP and WebSocket
    /// (`'self'` does not cover `ws:` in every browser), no plugins, no `<base>` elsewhere, forms only
    /// to this origin, and never framed.
    ///
    /// For example, a script in a stored file opened from `/v0/b/…` cannot use the console's session:
    /// files get their own sandboxing policy (`FilesHTTP.downloadContentSecurityPolicy`).
    static let contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https: http:; "
        + "connect-src 'self' ws: wss:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    /// The bytes of an embedded file, by its path under `Web` (`apps/posts/database.rules.json`).
    package static func embeddedFile(_ name: String) -> Data? {
        EmbeddedWebAssets.files[name]
    }

    /// The file at `path` as a response, or nil.
    static func serve(_ path: String) -> Response? {
        guard let (name, bytes) = file(path) else { return nil }
        let headers: HTTPFields = [
            .contentType: contentType(of: name),
            .cacheControl: "no-cache",
            .contentLength: String(bytes.count),
            contentTypeOptions: "nosniff",
            .contentSecurityPolicy: contentSecurityPolicy,
        ]
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last.map({ $0.lowercased() }) {
        case "html": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "json", "rules": "application/json; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "webp": "image/webp"
        case "ico": "image/x-icon"
        default: "application/octet-stream"
        }
    }
}
