import HearthAccess
@testable import HearthServer
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// The shortcut to the database's catch-all answers exactly as the router does: the same routes, the
/// same middlewares, the same errors; it only skips the router's walk for first segments the router
/// already sent to the catch-all.
@Suite struct DatabaseShortcutTests {
    /// Stamps every answer, or refuses a request with `x-refuse` as the router's routes would.
    struct StampMiddleware: RouterMiddleware {
        func handle(_ request: Request, context: HearthRequestContext, next: (Request, HearthRequestContext) async throws -> Response) async throws -> Response {
            if request.headers[HTTPField.Name("x-refuse")!] != nil { throw HTTPError(.forbidden, message: "refused") }
            var response = try await next(request, context)
            response.headers[HTTPField.Name("x-stamp")!] = "yes"
            return response
        }
    }

    /// A router shaped like the server's: root routes of other services, one that hands some requests
    /// on to the database (as the console's pages do), and the catch-all.
    static func application() -> (some ApplicationProtocol, DatabaseCatchAll) {
        let router = Router(context: HearthRequestContext.self)
        router.add(middleware: StampMiddleware())
        let database: @Sendable (Request, HearthRequestContext) async -> Response = { request, _ in
            Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "database \(request.method) \(request.uri.path)")))
        }
        router.get("/v0/b/**") { _, _ in "files" }
        router.on("/__/**", method: .get) { request, context in await database(request, context) }
        let catchAll = DatabaseCatchAll.register(on: router, respond: database)
        router.get("/metrics") { _, _ in "metrics" }
        let application = Application(responder: DatabaseShortcutResponder(router: router.buildResponder(), catchAll: catchAll))
        return (application, catchAll)
    }

    @Test func aSegmentTheRouterSentToTheCatchAllGoesStraightThereAfterwardsWithTheSameAnswer() async throws {
        let (application, catchAll) = Self.application()
        try await application.test(.router) { client in
            for _ in 0..<2 {
                let response = try await client.execute(uri: "/users/ada.json", method: .get)
                #expect(String(buffer: response.body) == "database GET /users/ada.json")
                #expect(response.headers[HTTPField.Name("x-stamp")!] == "yes")
            }
            #expect(catchAll.learned.contains(firstSegmentOf: "/users/other.json"))
            let put = try await client.execute(uri: "/users/ada/name.json", method: .put, body: ByteBuffer(string: "1"))
            #expect(String(buffer: put.body) == "database PUT /users/ada/name.json")
            // A middleware's error is answered the same way on both paths.
            let refused = try await client.execute(uri: "/users/ada.json", method: .get, headers: [HTTPField.Name("x-refuse")!: "1"])
            #expect(refused.status == .forbidden)
            let refusedFirst = try await client.execute(uri: "/fresh/a.json", method: .get, headers: [HTTPField.Name("x-refuse")!: "1"])
            #expect(refusedFirst.status == .forbidden)
        }
    }

    @Test func otherServicesRootsAreNeverLearned() async throws {
        let (application, catchAll) = Self.application()
        try await application.test(.router) { client in
            #expect(String(buffer: try await client.execute(uri: "/v0/b/bucket/o/a.json", method: .get).body) == "files")
            // `/v0` is the files service's root: the router does not go back to the catch-all.
            #expect(try await client.execute(uri: "/v0/other.json", method: .get).status == .notFound)
            // A route that hands requests on to the database is not the catch-all.
            #expect(String(buffer: try await client.execute(uri: "/__/x.json", method: .get).body) == "database GET /__/x.json")
            #expect(String(buffer: try await client.execute(uri: "/metrics", method: .get).body) == "metrics")
            #expect(catchAll.learned.count == 0)
            // Learned from the catch-all, `users` does not change how the other roots are answered.
            _ = try await client.execute(uri: "/users/a.json", method: .get)
            #expect(catchAll.learned.count == 1)
            #expect(String(buffer: try await client.execute(uri: "/v0/b/bucket/o/a.json", method: .get).body) == "files")
            #expect(try await client.execute(uri: "/v0/other.json", method: .get).status == .notFound)
            // Methods the catch-all does not answer still go to the router.
            #expect(try await client.execute(uri: "/users/a.json", method: .trace).status == .notFound)
        }
    }

    /// A route shortcut (the Firebase files API's) answers what the route answers, behind the same
    /// middlewares, without the router; other shapes and methods still go through the router.
    @Test func aRouteShortcutAnswersAsItsRouteDoes() async throws {
        let router = Router(context: HearthRequestContext.self)
        router.add(middleware: StampMiddleware())
        let taken = Mutex<[String]>([])
        let files: @Sendable (String) -> @Sendable (Request, HearthRequestContext) async -> Response = { via in
            { request, _ in
                taken.withLock { $0.append(via) }
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "files \(request.method) \(request.uri.path)")))
            }
        }
        for method: HTTPRequest.Method in [.get, .put] {
            router.on("/v0/b/**", method: method) { request, context in await files("router")(request, context) }
        }
        let shortcut = router.middlewares.constructResponder(finalResponder: CallbackResponder(callback: files("shortcut")))
        let catchAll = DatabaseCatchAll.register(on: router) { request, _ in Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "database \(request.uri.path)"))) }
        let responder = DatabaseShortcutResponder(
            router: router.buildResponder(), catchAll: catchAll, activity: nil,
            shortcuts: [RouteShortcut(prefix: "/v0/b/", methods: [.get, .put], responder: shortcut)]
        )
        try await Application(responder: responder).test(.router) { client in
            let get = try await client.execute(uri: "/v0/b/bucket/o/a%2Fb?alt=media", method: .get)
            #expect(String(buffer: get.body) == "files GET /v0/b/bucket/o/a%2Fb")
            #expect(get.headers[HTTPField.Name("x-stamp")!] == "yes")
            let refused = try await client.execute(uri: "/v0/b/bucket/o/a", method: .get, headers: [HTTPField.Name("x-refuse")!: "1"])
            #expect(refused.status == .forbidden)
            #expect(taken.withLock { $0 } == ["shortcut"])
            // Shapes and methods the shortcut does not take go through the router, as before.
            #expect(try await client.execute(uri: "/v0/b/bucket/o/a", method: .delete).status == .notFound)
            _ = try await client.execute(uri: "/v0/b/", method: .get)
            // The router drops the empty segment and answers from the route itself.
            #expect(String(buffer: try await client.execute(uri: "/v0/b//x", method: .get).body) == "files GET /v0/b//x")
            #expect(taken.withLock { $0.filter { $0 == "shortcut" }.count } == 1)
            #expect(taken.withLock { $0.last } == "router")
        }
        let probe = { (path: String, method: HTTPRequest.Method) in
            RouteShortcut(prefix: "/v0/b/", methods: [.get], responder: shortcut)
                .takes(Request(head: HTTPRequest(method: method, scheme: nil, authority: nil, path: path), body: .init(buffer: ByteBuffer())))
        }
        #expect(probe("/v0/b/bucket/o", .get))
        #expect(!probe("/v0/b/", .get))
        #expect(!probe("/v0/b//x", .get))
        #expect(!probe("/v0/bucket", .get))
        #expect(!probe("/v0/b/bucket/o", .post))
        #expect(!probe("/v0/b/\u{301}bucket/o", .get))
        #expect(probe("/v0/b/b\u{fc}cket/o", .get))
    }

    @Test func onlyPathsWithOneLeadingSlashAndAFirstSegmentAreShortcut() {
        #expect(DatabaseCatchAll.firstSegment(of: "/users/ada.json") == "users")
        #expect(DatabaseCatchAll.firstSegment(of: "/users.json") == "users.json")
        #expect(DatabaseCatchAll.firstSegment(of: "/.json") == ".json")
        #expect(DatabaseCatchAll.firstSegment(of: "/a%C3%A9/x") == "a%C3%A9")
        #expect(DatabaseCatchAll.firstSegment(of: "/aé/x") == "aé")
        // The router splits on characters: a non-ASCII byte right after a `/` may be a combining mark
        // that joins the `/` to the segment before, so those paths go through the router.
        #expect(DatabaseCatchAll.firstSegment(of: "/é%2F/x") == nil)
        #expect(DatabaseCatchAll.firstSegment(of: "/healthz/\u{301}") == nil)
        #expect(DatabaseCatchAll.firstSegment(of: "/healthz/\u{301}x/y") == nil)
        #expect(DatabaseCatchAll.firstSegment(of: "/\u{301}healthz") == nil)
        #expect(DatabaseCatchAll.firstSegment(of: "/users/x\u{301}") == "users")
        #expect(DatabaseCatchAll.firstSegment(of: "//users/ada.json") == nil)
        #expect(DatabaseCatchAll.firstSegment(of: "/") == nil)
        #expect(DatabaseCatchAll.firstSegment(of: "") == nil)
        #expect(DatabaseCatchAll.firstSegment(of: "users/ada.json") == nil)
    }

    /// A client inventing segments cannot keep the real ones out: the set is emptied when full and they
    /// are learned again; segments longer than a key could be are never kept.
    @Test func aFullSetStartsAgainSoInventedSegmentsCannotKeepRealOnesOut() async throws {
        let (application, catchAll) = Self.application()
        try await application.test(.router) { client in
            for index in 0..<DatabaseCatchAll.capacity {
                let response = try await client.execute(uri: "/s\(index)/a.json", method: .get)
                #expect(String(buffer: response.body) == "database GET /s\(index)/a.json")
            }
            #expect(catchAll.learned.count == DatabaseCatchAll.capacity)
            _ = try await client.execute(uri: "/users/a.json", method: .get)
            #expect(catchAll.learned.count == 1)
            #expect(catchAll.learned.contains(firstSegmentOf: "/users/b.json"))
            #expect(!catchAll.learned.contains(firstSegmentOf: "/s1/a.json"))
            let long = String(repeating: "k", count: DatabaseCatchAll.longestSegment + 1)
            #expect(String(buffer: try await client.execute(uri: "/\(long)/a.json", method: .get).body) == "database GET /\(long)/a.json")
            #expect(!catchAll.learned.contains(firstSegmentOf: "/\(long)/a.json"))
        }
    }

    /// `/metrics/\u{301}` is one segment to the router (the mark joins the `/`), so it reaches the
    /// catch-all; it must not teach it `metrics`.
    @Test func aCombiningMarkAfterASlashTeachesNoOtherServicesRoot() async throws {
        let (application, catchAll) = Self.application()
        try await application.test(.router) { client async throws in
            #expect(String(buffer: try await client.execute(uri: "/metrics/\u{301}", method: .get).body).hasPrefix("database GET"))
            #expect(catchAll.learned.count == 0)
            #expect(String(buffer: try await client.execute(uri: "/metrics", method: .get).body) == "metrics")
        }
    }
}
