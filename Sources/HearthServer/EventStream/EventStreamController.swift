import HearthAccess
import HearthCore
import HearthEngine
import HearthProtocol

import Hummingbird
import NIOCore
import ServiceLifecycle

/// REST streaming (`Accept: text/event-stream`): `put` and `patch` events for a location or a query.
///
/// The first event is `put "/"` with the current data; then one event per change, in commit order,
/// plus `keep-alive` on a timer and `cancel` when read access is lost. The stream's buffer is bounded
/// (``ServerConfiguration/eventStreamBufferLimit``): a client that cannot keep up is disconnected and
/// resyncs when it reconnects.
enum EventStreamController {
    static func stream(
        path: DatabasePath,
        _ parameters: RESTParameters,
        _ authentication: Authentication,
        _ database: DatabaseInstance,
        _ configuration: ServerConfiguration,
        isRevoked: (Identity) -> Bool = { _ in false }
    ) throws -> Response {
        let identity = authentication.identity
        try RESTController.authorizeRead(path, identity, database, query: parameters.query)
        if let query = parameters.query {
            try RESTController.checkIndex(query, at: path, database, enforce: configuration.enforceIndexes)
        }
        let key = ListenKey(path: path, query: parameters.query ?? .all, format: parameters.format, shallow: parameters.shallow)
        // The rules again, on the tree the first event is taken from, against a rules change in between.
        let query = parameters.query
        guard
            let subscription = database.hub.subscribe(
                key, identity: identity, consoleSession: authentication.consoleSession, snapshot: { database.snapshot() },
                canRead: { root in database.canRead(path, identity, query: query, root: root) }
            )
        else { throw RESTError.permissionDenied() }
        // Revoked while the request waited (for the database, or its tree): the revocation's sweep of
        // the streams ran before this one was there to end.
        if isRevoked(identity) { database.hub.finish(subscription, with: .authRevoked) }
        // A stream opened with an ID token ends with auth_revoked when the token expires.
        let clock = configuration.clock
        let expiry: Duration? = authentication.expires.map { clock.elapsed + clock.duration(untilWallSeconds: $0) }
        let headers: HTTPFields = [
            .contentType: "text/event-stream",
            .cacheControl: "no-cache",
            .accessControlAllowOrigin: "*",
        ]
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                // On graceful shutdown the stream ends, so the server can finish its open responses. (A
                // handler registered once; wrapping the sequence would cost a merge per event.)
                try await withGracefulShutdownHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        if let expiry {
                            group.addTask {
                                try await clock.sleep(untilElapsed: expiry)
                                database.hub.finish(subscription, with: .authRevoked)
                            }
                        }
                        for await buffer in subscription.events {
                            try await writer.write(buffer)
                        }
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    database.hub.finish(subscription)
                }
                try await writer.finish(nil)
            }
        )
    }
}
