import Foundation
import Hearth
import HearthTestSupport
import TimelineCore

/// The shared loopback server, on the Timeline app's namespace (the server installs the app's
/// database rules there) with the file service and the app's storage rules — as `hearth serve`
/// sets them on a fresh server — so these tests run against the real rules.
typealias TestServer = LoopbackServer

extension LoopbackServer {
    static func run(isolation: isolated (any Actor)? = #isolation, _ test: (LoopbackServer) async throws -> Void) async throws {
        try await run(namespace: "timeline", files: true, isolation: isolation) { server in
            try await server.setStorageRules(try String(contentsOf: webApp.appendingPathComponent("storage.rules"), encoding: .utf8))
            try await test(server)
        }
    }

    /// The web app's folder (its rules files and script).
    static let webApp = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/HearthWeb/Web/apps/timeline")

    /// An app on its own client (connection, session and storage), not signed in yet.
    func app() throws -> TimelineApp {
        TimelineApp(database: try client())
    }

    /// An app signed up as `username` (email `<username>@example.com`).
    func signedUp(_ username: String, bio: String = "", url: String = "") async throws -> (app: TimelineApp, user: TimelineUser) {
        let app = try app()
        let user = try await app.users.signUp(
            email: "\(username)@example.com", password: TimelineApp.password, profile: ProfileForm(username: username, bio: bio, url: url)
        )
        return (app, user)
    }
}

/// One copy of the app: what a Swift app would make at launch.
struct TimelineApp {
    static let password = "correct horse battery"
    let database: Database
    let auth: Auth
    let users: UserController
    let posts: PostController
    let images: ImageController

    init(database: Database) {
        self.database = database
        auth = Auth.auth(database: database)
        users = UserController(database: database, auth: auth)
        images = ImageController(storage: Storage.storage(database: database))
        posts = PostController(database: database, auth: auth, images: images)
    }

    /// Shares a small photo with `caption`.
    func share(_ caption: String, as author: TimelineUser) async throws -> TimelinePost {
        try await posts.share(photo: Photo.png, contentType: "image/png", fileExtension: "PNG", caption: caption, as: author)
    }
}

enum Photo {
    /// A 1×1 PNG.
    static let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPj/HwADAgH/XRQd3AAAAABJRU5ErkJggg==")!
}
