import ArgumentParser
import Foundation
import HearthRealtimeClient
import NIOCore

/// Where the WebSocket benchmarks connect, and as whom.
struct RealtimeBenchOptions: ParsableArguments {
    @Option(help: "The server's address.")
    var host = "127.0.0.1"

    @Option(help: "The server's port.")
    var port = 9000

    @Option(help: "Several nodes of a cluster: listeners (and writers) connect to these ports in turn, comma-separated.")
    var ports: String?

    @Option(help: "The writer's port, when it differs from the listeners' (default: --port).")
    var writerPort: Int?

    @Option(help: "The namespace (database).")
    var namespace = "bench"

    @Option(help: "The admin secret (default: $HEARTH_ADMIN_SECRET; with --emulator servers, 'owner').")
    var secret: String?

    @Option(help: "Local addresses to connect from, comma-separated (one address reaches ~28,000 connections).")
    var sources = "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4"

    var credential: String { secret ?? ProcessInfo.processInfo.environment["HEARTH_ADMIN_SECRET"] ?? "owner" }

    var sourceList: [String] { sources.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }

    var portList: [Int] { ports.map { $0.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } } ?? [port] }

    /// The connection that writes (on --writer-port, else --port).
    func connectWriter(_ index: Int) async throws -> WireConnection {
        try await connect(index, port: writerPort ?? port)
    }

    /// Connection number `index`: opened from a source address in turn, to the ports in turn, handshake
    /// read, authenticated as the admin.
    func connect(_ index: Int, port chosen: Int? = nil) async throws -> WireConnection {
        let sources = sourceList
        let ports = portList
        let port = chosen ?? ports[index % ports.count]
        let connection = try await WireConnection.connect(
            host: host,
            port: port,
            path: "/.ws?v=5&ns=\(namespace)",
            localAddress: sources.isEmpty ? nil : sources[index % sources.count]
        )
        guard let handshake = try await connection.receive(), handshake.contains(#""t":"h""#) else {
            throw CLIError("no handshake from \(host):\(port); is hearth serve running there?")
        }
        try await connection.send(RealtimeBenchOptions.request(0, "gauth", #"{"cred":"\#(credential)"}"#))
        guard let reply = try await connection.receive(), reply.contains(#""s":"ok""#) else {
            throw CLIError("the server refused the admin credential; pass --secret or set HEARTH_ADMIN_SECRET")
        }
        return connection
    }

    static func request(_ number: Int, _ action: String, _ body: String) -> String {
        #"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#
    }
}

/// The resident memory of a process, from /proc (Linux).
func residentBytes(of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.split(separator: " ").compactMap { Int($0) }
        return digits.first.map { $0 * 1024 }
    }
    return nil
}

/// Moves a value that one task owns to another task, which owns it from then on (a connection opened
/// in a child task and kept by its parent).
struct Handoff<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
