import AsyncHTTPClient
import Foundation
import HearthCore
import HearthEngine
import HearthProtocol
import HearthStorage
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// A node's side of the commit push as a follower: it keeps one streaming connection
/// (`GET /.cluster/v1/push`, with the admin secret) open to every other live node, and hands each entry
/// an owner pushes to that database's writer, which applies it if it is the next one (``PushInbox``).
///
/// Connections follow the members the coordinator last read (``PushPeers``); a broken one is opened
/// again after a pause. Whatever is lost meanwhile comes from the log: a gap in the pushed sequence
/// numbers, a wake-up or a lease check brings the writer to read it.
///
/// For example:
/// ```swift
/// services.append(PushReceiver(context: context, registry: registry, readTimeout: .seconds(2)))
/// ```
package final class PushReceiver: Service, Sendable {
    /// How often the owner writes a heartbeat on a quiet stream.
    static let heartbeat: Duration = .milliseconds(250)
    /// A stream that stays silent this long (several heartbeats) is given up on and opened again.
    package static let defaultReadTimeout: Duration = .seconds(2)

    let context: ClusterContext
    let registry: DatabaseRegistry
    let http: HTTPClient
    private let running = Mutex<Set<String>>([])

    package init(context: ClusterContext, registry: DatabaseRegistry, readTimeout: Duration = defaultReadTimeout) {
        self.context = context
        self.registry = registry
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = context.tls
        // A dead peer refuses at once on a LAN; a hung one goes quiet, and the read timeout ends its stream.
        configuration.timeout = .init(connect: .milliseconds(500), read: TimeAmount(readTimeout))
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 2)
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    package func run() async throws {
        if context.feed.enabled {
            await cancelWhenGracefulShutdown { await self.followPeers() }
        } else {
            try? await gracefulShutdown()
        }
        try? await http.shutdown()
    }

    /// Opens a stream to each wanted peer that has none, every quarter second, until cancelled.
    private func followPeers() async {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                for (name, address) in context.peers.wanted {
                    let key = "\(name) \(address)"
                    let start = running.withLock { $0.insert(key).inserted }
                    guard start else { continue }
                    group.addTask {
                        await self.follow(name, at: address)
                        self.running.withLock { _ = $0.remove(key) }
                    }
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
            group.cancelAll()
        }
    }

    /// Keeps a stream open to one peer while it is a live member at that address.
    private func follow(_ name: String, at address: String) async {
        var failures = 0
        while !Task.isCancelled, context.peers.isWanted(name, at: address) {
            do {
                try await stream(from: name, at: address)
                failures = 0
            } catch {
                failures += 1
                context.logger.debug(
                    "The commit push stream from a node ended", metadata: ["hearth.cluster.node": "\(name)", "hearth.error": "\(error)"]
                )
            }
            context.peers.lost(name)
            // Quickly after a clean end (a restart of the stream), slower while the peer keeps failing.
            try? await Task.sleep(for: .milliseconds(failures == 0 ? 50 : min(2_000, 100 * failures)))
        }
    }

    private func stream(from name: String, at address: String) async throws {
        let me = PercentEncoding.component(context.nodeName)
        var request = HTTPClientRequest(url: "\(address)/.cluster/v1/push?node=\(me)")
        request.headers.add(name: "Authorization", value: "Bearer \(context.secret)")
        let response = try await http.execute(request, deadline: .now() + .seconds(2))
        guard response.status == .ok else {
            throw PushFrameError(message: "The node answered \(response.status.code) to the push subscription")
        }
        var decoder = PushFrameDecoder()
        var greeted = false
        for try await chunk in response.body {
            var entries: [String: [LogEntry]] = [:]
            for frame in try decoder.feed(chunk) {
                switch frame {
                case .hello(let node):
                    // Another node now answers at that address: follow it under its own name.
                    guard node == name else { throw PushFrameError(message: "The node at the address is another one now") }
                    greeted = true
                case .heartbeat:
                    break
                case .entry(let namespace, let entry):
                    guard greeted else { throw PushFrameError(message: "A push stream did not start with its node's name") }
                    entries[namespace, default: []].append(entry)
                }
            }
            if greeted { context.peers.heard(from: name) }
            for (namespace, batch) in entries {
                // A database not open here yet loads a snapshot when it opens: nothing to apply before.
                registry.openDatabase(namespace)?.receivePushed(batch)
            }
        }
    }
}
