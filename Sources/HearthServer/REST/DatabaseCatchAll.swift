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
    static let methods: [HTTPRequest.Method] = [.get, .head, .put, .post, .patch, .delete, .options]
    /// At most this many segments are kept; the set is emptied when full and learned again as requests
    /// come, so a client inventing segments can only send requests through the router (slower, as
    /// before the shortcut), never keep the real ones out for good, and memory stays bounded.
    static let capacity = 1024
    /// The longest segment learned: a key's 768 bytes, each percent-encoded.
    static let longestSegment = 3 * 768

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
            guard let segment = DatabaseCatchAll.firstSegment(of: path), segment.utf8.count <= DatabaseCatchAll.longestSegment else { return }
            let key = String(segment)
            segments.withLock { segments in
                guard !segments.contains(key) else { return }
                if segments.count >= DatabaseCatchAll.capacity { segments.removeAll(keepingCapacity: true) }
                segments.insert(key)
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
    /// that starts with an ASCII byte, and the byte after the `/` that ends it (if one does) is ASCII:
    /// the only shape whose first segment the router reads the same way. The router splits on
    /// characters, so a combining mark after a `/` joins it to the segment before (`/healthz/\u{301}`
    /// is one segment to it, `healthz` by the bytes).
    static func firstSegment(of path: String) -> Substring? {
        let utf8 = path.utf8
        guard utf8.first == UInt8(ascii: "/") else { return nil }
        let start = utf8.index(after: utf8.startIndex)
        guard let first = utf8[start...].first, first < 0x80 else { return nil }
        let end = utf8[start...].firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
        guard start < end else { return nil }
        if end < utf8.endIndex {
            let next = utf8.index(after: end)
            if next < utf8.endIndex, utf8[next] >= 0x80 { return nil }
        }
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
    /// Routes reached without the router, recorded by `activity` as the router's are.
    let shortcuts: [RouteShortcut]

    public init(router: RouterResponder<HearthRequestContext>, catchAll: DatabaseCatchAll) {
        self.init(router: router, catchAll: catchAll, activity: nil)
    }

    init(
        router: RouterResponder<HearthRequestContext>, catchAll: DatabaseCatchAll, activity: ActivityMiddleware<HearthRequestContext>?,
        shortcuts: [RouteShortcut] = []
    ) {
        self.router = router
        self.catchAll = catchAll
        self.activity = activity
        self.shortcuts = shortcuts
    }

    public func respond(to request: Request, context: HearthRequestContext) async throws -> Response {
        if DatabaseCatchAll.methods.contains(request.method), catchAll.learned.contains(firstSegmentOf: request.uri.path) {
            return try await Self.answer(request, context, by: catchAll.responder)
        }
        let shortcut = shortcuts.first { $0.takes(request) }
        guard let activity else { return try await Self.answer(request, context, by: shortcut?.responder ?? router) }
        return try await activity.handle(request, context: context) { request, context in
            try await Self.answer(request, context, by: shortcut?.responder ?? router)
        }
    }

    /// `responder`'s answer, with what it throws answered as the router answers what its routes throw.
    static func answer(_ request: Request, _ context: HearthRequestContext, by responder: any HTTPResponder<HearthRequestContext>) async throws -> Response {
        do {
            return try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
    }
}

/// A route the server reaches without the router's walk: every path under `prefix` (with at least one
/// more segment) for the given methods goes to one route, so the router would pick that route anyway.
/// `responder` must be what the route runs, behind the middlewares the router gave it.
///
/// For example:
/// ```swift
/// let files = FirebaseStorageController(…).register(on: router)
/// RouteShortcut(prefix: "/v0/b/", methods: FirebaseStorageController.methods, responder: files)
/// ```
struct RouteShortcut: Sendable {
    let prefix: String
    let methods: [HTTPRequest.Method]
    let responder: any HTTPResponder<HearthRequestContext>

    /// Whether `request` is one the router would send to this route: its method, and a path that goes
    /// on past the prefix with a segment that is not empty and starts with an ASCII byte (the router
    /// splits on characters: a combining mark after the `/` would join it to the segment before, and
    /// it reads other shapes its own way).
    func takes(_ request: Request) -> Bool {
        let path = request.uri.path.utf8
        guard methods.contains(request.method), path.starts(with: prefix.utf8) else { return false }
        let rest = path.dropFirst(prefix.utf8.count)
        return rest.first.map { $0 != UInt8(ascii: "/") && $0 < 0x80 } ?? false
    }
}
