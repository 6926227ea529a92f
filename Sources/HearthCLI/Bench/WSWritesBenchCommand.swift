import ArgumentParser
import Foundation
import HearthRealtimeClient
import NIOCore

/// Durable writes per second to one database: writers (spread over the nodes of a cluster with
/// --ports) keep a window of writes in flight each, and count the acknowledgements, each of which
/// means durable (committed to SQLite or PostgreSQL).
struct WSWritesBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws-writes",
        abstract: "Acknowledged (durable) writes per second to one database over WebSockets."
    )

    @OptionGroup var options: RealtimeBenchOptions

    @Option(help: "Writing connections (spread over --ports).")
    var writers = 8

    @Option(help: "Writes each connection keeps in flight.")
    var window = 64

    @Option(help: "Seconds of writing.")
    var seconds = 10

    func run() async throws {
        let writers = self.writers
        let window = self.window
        let deadline = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let counts = try await withThrowingTaskGroup(of: (acknowledged: Int, failed: Int).self) { group in
            for index in 0..<writers {
                group.addTask {
                    let connection = try await options.connect(index)
                    let sender = connection.sender
                    var sent = 0
                    var acknowledged = 0
                    var failed = 0
                    // Fill the window, then send one more write per acknowledgement until the time is up.
                    func send() async throws {
                        sent += 1
                        try await sender.send(
                            RealtimeBenchOptions.request(sent + 1, "p", #"{"p":"/writes/w\#(index)/\#(sent % 256)","d":\#(sent)}"#)
                        )
                    }
                    for _ in 0..<window { try await send() }
                    while acknowledged + failed < sent, let frame = try await connection.receiveBuffer() {
                        let text = String(buffer: frame)
                        guard text.contains(#""r":"#) else { continue }
                        if text.contains(#""s":"ok""#) { acknowledged += 1 } else { failed += 1 }
                        if ContinuousClock.now < deadline { try await send() }
                    }
                    await connection.close()
                    return (acknowledged, failed)
                }
            }
            var total = (acknowledged: 0, failed: 0)
            for try await count in group {
                total.acknowledged += count.acknowledged
                total.failed += count.failed
            }
            return total
        }
        let elapsed = ContinuousClock.now - started
        let secondsTaken = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let ports = options.portList.map(String.init).joined(separator: ",")
        print(
            "\(counts.acknowledged) writes acknowledged in \(String(format: "%.2f", secondsTaken)) s by \(writers) connections "
                + "(window \(window), ports \(ports)): \(Int(Double(counts.acknowledged) / secondsTaken)) durable writes/s; \(counts.failed) failed."
        )
        if counts.failed > 0 { throw CLIError("\(counts.failed) writes failed") }
    }
}
