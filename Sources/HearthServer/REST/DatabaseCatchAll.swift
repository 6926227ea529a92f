import HearthAccess
import Hummingbird
import Synchronization

/// The database's catch-all route (`/**`, every path no other service claims), and a way to reach it
/// without the router.
///
/// Hummingbird's router compares a path's first segment with every root route (the console, the
/// apps, identity, files, health…) before it falls back to `**`: about 2.6 µs of a 43 µs read here
/// (`docs/benchmarks.md`, "what bounds a durable REST write, and the read path's own work"). The router
/// picks the root route from the first segment alone and never goes back once one matched, so a first
/// segment it once sent to `**` always goes there. The catch-all learns such segments as the router
/// hands it requests, and ``DatabaseShortcutResponder`` sends later requests starting with one of them
/// straight to it, through the same middlewares.
///
/// For example:
/// ```swift
/// let catchAll = rest.register(on: router)   // learns `users` from `GET /users/ada.json`
/// let responder = DatabaseShortcutResponder(router: router.buildResponder(), catchAll: catchAll)
/// ```
public struct DatabaseCatchAll: Sendable {
    /// The methods the catch-all answers; others always go through the router.
    static let methods: [HTTPRequest.Method] = [.get, .put, .post, .patch, .delete, .options]
    /// At most this many segments are learned: a client inventing segments only slows its own requests
    /// (they go through the router, as before), and memory stays bounded.
    static let capacity = 1024

    /// Adds the catch-all route `**` for every method in ``methods``, answered by `respond`.
    static func register(
        on router: Router<HearthRequestContext>,
        respond: @escaping @Sendable (Request, HearthRequestContext) async -> Response
    ) -> DatabaseCatchAll {
        let learned = LearnedSegments()
        for method in methods {
            router.on("**", method: method) { request, context in
                learned.learn(request.uri.path)
                return await respond(request, context)
            }
        }
        // The middlewares the router wraps a route in when it is added (`Router.on`), so the shortcut runs
        // exactly what the route runs.
        let responder = router.middlewares.constructResponder(finalResponder: CallbackResponder(callback: respond))
        return DatabaseCatchAll(responder: responder, learned: learned)
    }

    /// The catch-all behind the router's middlewares, as the router calls it.
    let responder: any HTTPResponder<HearthRequestContext>
    let learned: LearnedSegments

    final class LearnedSegments: Sendable {
        private let segments = Mutex(Set<String>())

        func learn(_ path: String) {
            guard let segment = DatabaseCatchAll.firstSegment(of: path) else { return }
            segments.withLock { segments in
                if segments.count < DatabaseCatchAll.capacity { segments.insert(String(segment)) }
            }
        }

        func contains(firstSegmentOf path: String) -> Bool {
            guard let segment = DatabaseCatchAll.firstSegment(of: path) else { return false }
            let key = String(segment)
            return segments.withLock { $0.contains(key) }
        }

        var count: Int { segments.withLock { $0.count } }
    }

    /// `users` of `/users/ada.json`; nil unless the path starts with one `/` and a non-empty segment
    /// (the only shape whose first segment the router reads the same way).
    static func firstSegment(of path: String) -> Substring? {
        let utf8 = path.utf8
        guard utf8.first == UInt8(ascii: "/") else { return nil }
        let start = utf8.index(after: utf8.startIndex)
        let end = utf8[start...].firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
        guard start < end else { return nil }
        return Substring(utf8[start..<end])
    }
}

/// The server's responder: requests whose first segment the router has sent to the database's
/// catch-all before go straight to it; everything else goes through the router. See
/// ``DatabaseCatchAll``.
///
/// For example:
/// ```swift
/// let responder = DatabaseShortcutResponder(router: router.buildResponder(), catchAll: catchAll)
/// ```
public struct DatabaseShortcutResponder: HTTPResponder {
    public typealias Context = HearthRequestContext

    let router: RouterResponder<HearthRequestContext>
    let catchAll: DatabaseCatchAll
    /// Records what the router answers; the shortcut's requests are recorded by the database's handler.
    let activity: ActivityMiddleware<HearthRequestContext>?

    public init(router: RouterResponder<HearthRequestContext>, catchAll: DatabaseCatchAll) {
        self.init(router: router, catchAll: catchAll, activity: nil)
    }

    init(router: RouterResponder<HearthRequestContext>, catchAll: DatabaseCatchAll, activity: ActivityMiddleware<HearthRequestContext>?) {
        self.router = router
        self.catchAll = catchAll
        self.activity = activity
    }

    public func respond(to request: Request, context: HearthRequestContext) async throws -> Response {
        guard DatabaseCatchAll.methods.contains(request.method), catchAll.learned.contains(firstSegmentOf: request.uri.path) else {
            guard let activity else { return try await router.respond(to: request, context: context) }
            return try await activity.handle(request, context: context) { request, context in
                try await router.respond(to: request, context: context)
            }
        }
        // As the router does with what its routes throw.
        do {
            return try await catchAll.responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
    }
}
