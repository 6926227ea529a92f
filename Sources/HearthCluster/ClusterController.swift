import HearthAccess
import HearthCore
import HearthEngine
import HearthProtocol
import HearthStorage
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// The node-to-node API of a cluster, for the admin secret only:
/// - `POST /.cluster/v1/write?ns=NAME`: writes forwarded to this node as the database's owner
///   (``ForwardedWrites``); 409 when it is not the owner, so the sender looks again.
/// - `GET /.cluster/v1/push?node=NAME`: a stream of the log entries this node commits as an owner
///   (``PushFrame``s, ``CommitFeed``), held open by every other node (``PushReceiver``); 404 when the
///   push is turned off here.
/// - `GET /.cluster/v1/status`: this node's view, for `hearth cluster status`.
///
/// For example:
/// ```sh
/// curl -H "Authorization: Bearer $SECRET" http://127.0.0.1:9001/.cluster/v1/status
/// ```
package struct ClusterController: Sendable {
    let context: ClusterContext
    let registry: DatabaseRegistry
    let authenticator: Authenticator
    let address: String

    package init(context: ClusterContext, registry: DatabaseRegistry, authenticator: Authenticator, address: String) {
        self.context = context
        self.registry = registry
        self.authenticator = authenticator
        self.address = address
    }

    package func register(on router: Router<HearthRequestContext>) {
        router.post("/.cluster/v1/write") { request, _ in await self.guarded(request) { try await self.write(request) } }
        router.get("/.cluster/v1/status") { request, _ in await self.guarded(request) { try await self.status() } }
        router.get("/.cluster/v1/push") { request, _ in await self.guarded(request) { self.pushStream() } }
    }

    private func guarded(_ request: Request, _ body: () async throws -> Response) async -> Response {
        let parameters = (try? RESTParameters(query: request.uri.query ?? "")) ?? RESTParameters()
        var identity: Identity?
        if let token = Authenticator.bearerToken(request.headers[.authorization]) ?? parameters.authToken, !token.isEmpty {
            do {
                identity = try authenticator.authenticate(token, override: parameters.authVariableOverride).identity
            } catch .tooManyGuesses {
                return ClusterController.json(.tooManyRequests, JSONValue.object([("error", .string(Authenticator.tooManyGuessesMessage))]).jsonText)
            } catch {
                identity = nil
            }
        }
        guard identity?.isAdmin == true else {
            return ClusterController.json(.unauthorized, #"{"error":"The cluster API needs the admin secret as a Bearer token."}"#)
        }
        do {
            return try await body()
        } catch {
            return ClusterController.json(.badRequest, JSONValue.object([("error", .string("\(error)"))]).jsonText)
        }
    }

    private func write(_ request: Request) async throws -> Response {
        let parameters = try RESTParameters(query: request.uri.query ?? "")
        guard let namespace = parameters.namespace, NamespaceName.isValid(namespace) else {
            return ClusterController.json(.badRequest, #"{"error":"?ns= must name a database"}"#)
        }
        let database = try await registry.database(namespace)
        guard let replica = database.replica, replica.isOwner else {
            return ClusterController.json(.conflict, #"{"error":"This node does not own the database"}"#)
        }
        let body = try await request.body.collect(upTo: 512 * 1024 * 1024)
        let requests = try ForwardedWrites.decodeRequests(String(buffer: body))
        let outcomes = await ClusterController.submitInOrder(requests, to: database)
        let text = ForwardedWrites.encode(outcomes, sequence: replica.visibleSequence)
        return ClusterController.json(.ok, text)
    }

    /// Submits every write at once, in order (so they share group commits), and waits for all.
    static func submitInOrder(_ requests: [WriteRequest], to database: DatabaseInstance) async -> [Result<WriteOutcome, any Error>] {
        guard !requests.isEmpty else { return [] }
        let results = Mutex([Result<WriteOutcome, any Error>?](repeating: nil, count: requests.count))
        let remaining = Mutex(requests.count)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for (index, request) in requests.enumerated() {
                database.submit(request, forwarded: true) { result in
                    results.withLock { $0[index] = result }
                    let left = remaining.withLock { count in
                        count -= 1
                        return count
                    }
                    if left == 0 { continuation.resume() }
                }
            }
        }
        return results.withLock { $0.map { $0! } }
    }

    /// The commit push to one subscriber: this node's name first, then every entry it commits, several
    /// per write when they queue up, and a heartbeat whenever the stream has been quiet for a while.
    private func pushStream() -> Response {
        let feed = context.feed
        guard feed.enabled else {
            return ClusterController.json(.notFound, #"{"error":"This node does not push its commits"}"#)
        }
        let hello = PushFrame.hello(node: context.nodeName).bytes
        let heartbeat = PushFrame.heartbeat.bytes
        let interval = PushReceiver.heartbeat
        return Response(
            status: .ok,
            headers: [.contentType: "application/octet-stream", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                let subscription = feed.subscribe()
                defer { feed.remove(subscription) }
                // On graceful shutdown the stream ends, so the server can finish its open responses; the
                // subscribers read whatever else this node commits from the log.
                try await withGracefulShutdownHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            while true {
                                try await Task.sleep(for: interval)
                                subscription.nudge()
                            }
                        }
                        try await writer.write(hello)
                        var lastWrite = ContinuousClock.now
                        for await _ in subscription.wakeups {
                            guard let pending = subscription.take() else { break }
                            if pending.readableBytes > 0 {
                                try await writer.write(pending)
                                lastWrite = .now
                            } else if ContinuousClock.now - lastWrite >= interval / 2 {
                                try await writer.write(heartbeat)
                                lastWrite = .now
                            }
                        }
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    subscription.finish()
                }
                try await writer.finish(nil)
            }
        )
    }

    private func status() async throws -> Response {
        let members = try await context.storage.members()
        var databases: [JSONValue] = []
        for database in registry.openDatabases.sorted(by: { $0.namespace < $1.namespace }) {
            guard let replica = database.replica else { continue }
            let lease = try? await replica.shared.lease()
            var fields: [(key: String, value: JSONValue)] = [
                ("namespace", .string(database.namespace)),
                ("role", .string(replica.isOwner ? "owner" : "follower")),
                ("applied", .number(Double(replica.applied))),
            ]
            if let lease {
                fields += [
                    ("owner", .string(lease.owner)), ("epoch", .number(Double(lease.epoch))),
                    ("committed", .number(Double(lease.lastSequence))),
                    ("lag", .number(Double(max(0, lease.lastSequence - replica.applied)))),
                ]
            }
            databases.append(.object(fields))
        }
        let body = JSONValue.object([
            ("node", .string(context.nodeName)),
            ("address", .string(address)),
            ("leaseFresh", .bool(context.storage.isLeaseFresh)),
            ("members", .array(members.map { member in
                .object([
                    ("name", .string(member.name)), ("address", .string(member.address)), ("alive", .bool(member.alive)),
                    ("heartbeatAge", .number(member.heartbeatAge)),
                ])
            })),
            ("databases", .array(databases)),
        ])
        return ClusterController.json(.ok, body.jsonText)
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text))
        )
    }
}
