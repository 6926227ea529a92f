import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Sends one message to an SMTP server over plain TCP, driving an ``SMTPConversation``. Used by
/// ``MailDelivery``, which retries; this type makes a single attempt.
///
/// For example:
/// ```swift
/// let client = SMTPClient(host: "127.0.0.1", port: 2525)
/// try await client.send(from: "noreply@example.com", to: "ada@example.com", message: text)
/// ```
struct SMTPClient: Sendable {
    var host: String
    var port: Int
    /// The name given in EHLO.
    var clientName = "hearth.localhost"
    /// The longest a whole attempt may take, connection included.
    var timeout: Duration = .seconds(60)
    /// Upgrade with STARTTLS (verifying the server's certificate) before sending anything.
    var requireTLS = false
    /// PEM certificates to trust instead of the system's (a private mail server's CA).
    var trustRootsFile: String?
    /// A login for AUTH PLAIN (implies TLS).
    var credentials: SMTPConversation.Credentials?
    var group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

    func send(from: String, to: String, message: String) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.converse(from: from, to: to, message: message) }
            group.addTask {
                try await Task.sleep(for: self.timeout)
                throw SMTPDeliveryError(phase: "the conversation (timed out)", code: 0, transient: true, text: "")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func converse(from: String, to: String, message: String) async throws {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(15))
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
                }
        } catch {
            throw SMTPDeliveryError(phase: "connect", code: 0, transient: true, text: "\(error)")
        }
        var conversation = SMTPConversation(
            clientName: clientName, from: from, to: to, message: message, requireTLS: requireTLS, credentials: credentials
        )
        do {
            try await exchange(on: channel, &conversation)
        } catch {
            // Accepted is delivered: a connection lost during QUIT must not send the mail twice.
            if conversation.accepted { return }
            if error is SMTPDeliveryError { throw error }
            throw SMTPDeliveryError(phase: "the conversation", code: 0, transient: true, text: "\(error)")
        }
    }

    private func exchange(on channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>, _ conversation: inout SMTPConversation) async throws {
        try await channel.executeThenClose { inbound, outbound in
            var parser = SMTPReplyParser()
            for try await buffer in inbound {
                let replies = try parser.feed(buffer.readableBytesView)
                for (index, reply) in replies.enumerated() {
                    switch conversation.receive(reply) {
                    case .send(let text):
                        try await outbound.write(ByteBuffer(string: text))
                    case .startTLS:
                        // Anything that came with the 220 was sent in the clear and would be read as if
                        // it came through TLS (RFC 3207 §6; CVE-2011-0411): refuse, and start afresh.
                        guard index == replies.count - 1, !parser.hasBufferedBytes else {
                            throw SMTPDeliveryError(phase: "STARTTLS (the server sent more after its 220)", code: 0, transient: false, text: "")
                        }
                        parser = SMTPReplyParser()
                        try await startTLS(on: channel.channel)
                        guard case .send(let text) = conversation.tlsStarted() else { throw SMTPDeliveryError(phase: "STARTTLS", code: 0, transient: false, text: "") }
                        try await outbound.write(ByteBuffer(string: text))
                    case .finished:
                        return
                    case .failed(let error):
                        throw error
                    }
                }
            }
            // The server hung up. After the message was accepted that is only a rude QUIT.
            if !conversation.accepted {
                throw SMTPDeliveryError(phase: "the conversation (the server closed it)", code: 0, transient: true, text: "")
            }
        }
    }

    /// Puts TLS under the conversation: the server's certificate is verified against the system's
    /// roots (or ``trustRootsFile``) and the host name (or, for an IP address, the address).
    private func startTLS(on channel: any Channel) async throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let trustRootsFile { configuration.trustRoots = .file(trustRootsFile) }
        do {
            let context = try NIOSSLContext(configuration: configuration)
            let serverHostname = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
            // The handler is not Sendable: made and added on the channel's own event loop.
            try await channel.eventLoop.submit {
                let handler = try NIOSSLClientHandler(context: context, serverHostname: serverHostname)
                try channel.pipeline.syncOperations.addHandler(handler, position: .first)
            }.get()
        } catch {
            throw SMTPDeliveryError(phase: "STARTTLS", code: 0, transient: false, text: "\(error)")
        }
    }
}
