import AsyncHTTPClient
import Foundation
import HearthCore
import HearthEngine
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Sends forwarded writes to a database's owner node (`POST /.cluster/v1/write`), over pooled HTTP/1.1
/// keep-alive connections.
///
/// For example:
/// ```swift
/// let answer = try await client.forward([request], namespace: "demo", to: "http://10.0.0.2:9000", secret: secret)
/// ```
final class OwnerClient: Sendable {
    /// Why a forward failed, and whether the owner may have applied it.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// False when the request surely did not reach an owner that applied it (refused connection, or
        /// the node is not the owner): safe to send again.
        var mayHaveArrived: Bool
    }

    struct Answer {
        var outcomes: [Result<WriteOutcome, WriteError>]
        var sequence: Int64
    }

    let http: HTTPClient

    init(tls: TLSConfiguration) {
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = tls
        // A dead owner refuses at once on a LAN; a hung one is given up on quickly and the lease decides.
        configuration.timeout = .init(connect: .milliseconds(250), read: .seconds(10))
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func shutdown() async {
        try? await http.shutdown()
    }

    func forward(_ requests: [WriteRequest], namespace: String, to address: String, secret: String) async throws -> Answer {
        let encodedNamespace = PercentEncoding.component(namespace)
        var request = HTTPClientRequest(url: "\(address)/.cluster/v1/write?ns=\(encodedNamespace)")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(secret)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: ForwardedWrites.encode(requests)))
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .seconds(10))
        } catch {
            throw Failure(description: "\(error)", mayHaveArrived: !OwnerClient.isConnectFailure(error))
        }
        let body = try await response.body.collect(upTo: 512 * 1024 * 1024)
        let text = String(buffer: body)
        switch response.status {
        case .ok:
            let decoded = try ForwardedWrites.decodeOutcomes(text)
            guard decoded.outcomes.count == requests.count else {
                throw Failure(description: "The owner answered \(decoded.outcomes.count) outcomes for \(requests.count) writes", mayHaveArrived: true)
            }
            return Answer(outcomes: decoded.outcomes, sequence: decoded.sequence)
        case .conflict, .serviceUnavailable:
            // Not the owner (any more), or shutting down: it applied nothing.
            throw Failure(description: "The node is not the database's owner", mayHaveArrived: false)
        default:
            throw Failure(description: "The owner answered \(response.status.code)", mayHaveArrived: true)
        }
    }

    /// Errors raised before a connection was made: the request was never sent.
    static func isConnectFailure(_ error: any Error) -> Bool {
        if error is NIOConnectionError { return true }
        if let client = error as? HTTPClientError, client == .connectTimeout || client == .getConnectionFromPoolTimeout {
            return true
        }
        if let io = error as? IOError, io.errnoCode == ECONNREFUSED { return true }
        if let channel = error as? ChannelError, case .connectTimeout = channel { return true }
        return false
    }
}
