import AsyncHTTPClient
import Foundation
import HearthAccess
import HearthCore
import HearthEngine
@testable import HearthServer
import HearthStorage
import HearthTestSupport
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import Testing

/// Several Hearth nodes in this process on real loopback ports, sharing an ``InMemorySharedCluster``
/// (PostgreSQL's stand-in), for tests of forwarding, replication and failover. A node is stopped by
/// cancelling its service task; a crash is a ``InMemorySharedCluster/kill(_:)`` of its session first.
final class ClusterTestNodes: Sendable {
    static let secret = "cluster-test-secret"
    let cluster = InMemorySharedCluster()
    /// Set: every node serves TLS with this certificate, advertises `https://`, and trusts its CA for
    /// the others (`--tls-cert`, `--advertise https://…`, `--cluster-ca`).
    let tls: TestCertificates?
    /// The process-wide client (it needs no shutdown, so a test that fails before it stops its nodes
    /// cannot end the whole test process with the client's "not shut down" trap); with TLS, one that
    /// trusts the test CA, shut down by ``run(tls:_:)``.
    let http: HTTPClient

    init(tls: TestCertificates? = nil) {
        self.tls = tls
        if let tls {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(tls.caFile.path)
            http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: configuration))
        } else {
            http = HTTPClient.shared
        }
    }

    var scheme: String { tls == nil ? "http" : "https" }
    let nodes = Mutex<[String: (port: Int, task: Task<Void, any Error>, group: ServiceGroup, registry: DatabaseRegistry)]>([:])

    /// Runs `body` with a new set of nodes and stops them all afterwards, also when it throws.
    static func run(tls: TestCertificates? = nil, _ body: (ClusterTestNodes) async throws -> Void) async throws {
        let nodes = ClusterTestNodes(tls: tls)
        do {
            try await body(nodes)
        } catch {
            await nodes.stopAll()
            if tls != nil { try? await nodes.http.shutdown() }
            throw error
        }
        await nodes.stopAll()
        if tls != nil { try await nodes.http.shutdown() }
    }

    /// Starts a node and waits until it answers.
    ///
    /// An owner hands a database to the node the rendezvous hash prefers once that node has been up
    /// for `handOffSettling`: ten minutes unless a test is about the hand-off, so that on a machine the
    /// whole suite starves, starting the next nodes cannot take long enough to move a database.
    @discardableResult
    func start(
        _ name: String, tick: Duration = .milliseconds(20), pushGrace: Duration? = nil, pushReadTimeout: Duration? = nil,
        handOffSettling: Duration = .seconds(600)
    ) async throws -> Int {
        let port = try ClusterTestNodes.freePort()
        var configuration = ServerConfiguration()
        // Test clients reuse kept-alive connections across gaps that a starved machine stretches past any
        // short timeout, and a close racing a reuse fails the request: only RequestLimitTests tests the timeout.
        configuration.requestReadTimeout = .seconds(600)
        configuration.port = port
        if let tls {
            configuration.tls = try ServerCertificate(certificateFile: tls.chainFile.path, keyFile: tls.keyFile.path)
        }
        var logger = Logger(label: "hearth.cluster-test.\(name)")
        logger.logLevel = .warning
        let built = try await makeApplication(
            configuration: configuration,
            storage: cluster.node(name),
            adminSecret: AdminSecret(hashing: ClusterTestNodes.secret),
            cluster: {
                var options = ClusterOptions(secret: ClusterTestNodes.secret, address: "\(scheme)://127.0.0.1:\(port)", tick: tick)
                options.trustedCertificateAuthorityFile = tls?.caFile.path
                if let pushGrace { options.pushGrace = pushGrace }
                if let pushReadTimeout { options.pushReadTimeout = pushReadTimeout }
                options.handOffSettling = handOffSettling
                return options
            }(),
            logger: logger
        )
        let group = ServiceGroup(
            configuration: .init(services: [built.application], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        )
        let task = Task { try await group.run() }
        nodes.withLock { $0[name] = (port, task, group, built.registry) }
        try await eventually { (try? await self.call(name, .GET, "/.json")).map { $0.status == .ok } ?? false }
        return port
    }

    /// Stops a node as a crash would: its session ends first (it is dead to the others at once), then
    /// the process goes.
    func crash(_ name: String) async {
        cluster.kill(name)
        let node = nodes.withLock { $0.removeValue(forKey: name) }
        // Its process goes (gracefully here, but its session is already gone: it can release nothing).
        await node?.group.triggerGracefulShutdown()
        _ = await node?.task.result
    }

    func registry(_ name: String) throws -> DatabaseRegistry {
        try #require(nodes.withLock { $0[name]?.registry })
    }

    /// Stops every node gracefully (each leaves the cluster).
    func stopAll() async {
        let running = nodes.withLock { nodes in
            let running = nodes.values.map { ($0.task, $0.group) }
            nodes = [:]
            return running
        }
        for (_, group) in running { await group.triggerGracefulShutdown() }
        for (task, _) in running { _ = await task.result }
    }

    struct Reply {
        var status: HTTPResponseStatus
        var body: String
        var etag: String?
        var json: JSONValue? { try? JSONValue(parsing: body) }
    }

    /// A REST call to one node, as the admin unless `auth` says otherwise.
    func call(
        _ name: String, _ method: HTTPMethod, _ path: String, _ body: String? = nil, headers: [(String, String)] = [], admin: Bool = true
    ) async throws -> Reply {
        let port = try #require(nodes.withLock { $0[name]?.port }, "node \(name) is not running")
        let separator = path.contains("?") ? "&" : "?"
        var request = HTTPClientRequest(url: "\(scheme)://127.0.0.1:\(port)\(path)\(separator)ns=demo")
        request.method = method
        if admin { request.headers.add(name: "Authorization", value: "Bearer \(ClusterTestNodes.secret)") }
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 64 * 1024 * 1024)
        return Reply(status: response.status, body: String(buffer: bytes), etag: response.headers.first(name: "ETag"))
    }

    static func freePort() throws -> Int {
        let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).wait()
        let port = channel.localAddress!.port!
        try channel.close().wait()
        return port
    }
}
