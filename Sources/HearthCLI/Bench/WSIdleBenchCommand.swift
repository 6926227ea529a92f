import ArgumentParser
import Foundation
import HearthRealtimeClient
import Synchronization

/// Opens many WebSocket connections that then sit idle, each with one listen, and reports the server's
/// resident memory per connection.
struct WSIdleBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws-idle",
        abstract: "Server memory per idle WebSocket connection (RSS growth / connections)."
    )

    @OptionGroup var options: RealtimeBenchOptions

    @Option(help: "Connections to open.")
    var connections = 19_000

    @Option(help: "The server's process id (its memory is read from /proc).")
    var serverPid: Int32

    @Option(help: "Connections opened at the same time.")
    var concurrency = 200

    func run() async throws {
        if let raised = OpenFileLimit.raiseToMaximum() { print("Raised this process's open-file limit from \(raised.from) to \(raised.to)") }
        guard connections + 64 <= OpenFileLimit.current else {
            throw CLIError("this process may open \(OpenFileLimit.current) files; lower --connections")
        }
        guard let before = residentBytes(of: serverPid) else { throw CLIError("cannot read /proc/\(serverPid)/status") }
        print("Server RSS before: \(before / 1024) KiB. Opening \(connections) connections…")
        let started = ContinuousClock.now
        var open: [WireConnection] = []
        open.reserveCapacity(connections)
        var next = 0
        while next < connections {
            let batch = next..<min(connections, next + concurrency)
            let opened = try await withThrowingTaskGroup(of: Handoff<WireConnection>.self) { group in
                for index in batch {
                    group.addTask {
                        let connection = try await options.connect(index)
                        // Idle, but listening, as an app's connection would be.
                        try await connection.send(RealtimeBenchOptions.request(1, "q", #"{"p":"/idle/\#(index)","h":""}"#))
                        guard let reply = try await connection.receive(), reply.contains(#""s":"ok""#) else {
                            throw CLIError("listen \(index) failed")
                        }
                        return Handoff(connection)
                    }
                }
                var opened: [WireConnection] = []
                for try await handoff in group { opened.append(handoff.value) }
                return opened
            }
            open += opened
            next = batch.upperBound
            if next % 2000 == 0 || next == connections {
                print("  \(next) connections, server RSS \((residentBytes(of: serverPid) ?? 0) / 1024) KiB")
            }
        }
        let elapsed = ContinuousClock.now - started
        // Let the server settle (allocator caches, deferred frees) before reading its memory.
        try await Task.sleep(for: .seconds(3))
        guard let after = residentBytes(of: serverPid) else { throw CLIError("the server exited") }
        // Every connection still works: a ping on each gets its pong.
        var alive = 0
        for connection in open {
            try await connection.send(#"{"t":"c","d":{"t":"p","d":{}}}"#)
        }
        for connection in open {
            if let pong = try await connection.receive(), pong.contains(#""t":"o""#) { alive += 1 }
        }
        let perConnection = Double(after - before) / Double(connections) / 1024
        print("Opened \(connections) connections in \(String(format: "%.1f", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)) s; \(alive) answered a ping afterwards.")
        print("Server RSS after: \(after / 1024) KiB; growth \((after - before) / 1024) KiB = \(String(format: "%.2f", perConnection)) KiB per connection.")
        for connection in open { await connection.close() }
    }
}
