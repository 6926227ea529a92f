import ArgumentParser
import Foundation
import HearthRealtimeClient
import NIOCore

/// A steady rate of durable writes over a WebSocket, each seen by several listeners: how long from
/// sending a write to each listener receiving it.
struct WSLatencyBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws-latency",
        abstract: "Write-to-listener latency over WebSockets at a steady write rate."
    )

    @OptionGroup var options: RealtimeBenchOptions

    @Option(help: "Listening connections (each sees every write).")
    var listeners = 10

    @Option(help: "Writes per second.")
    var rate = 1000

    @Option(help: "Seconds of writing.")
    var seconds = 10

    func run() async throws {
        let path = "/latency"
        let writer = try await options.connectWriter(listeners)
        try await writer.send(RealtimeBenchOptions.request(1, "p", #"{"p":"\#(path)","d":{"t":0}}"#))
        _ = try await writer.receive()
        let total = rate * seconds
        let ready = AsyncStream<Void>.makeStream()
        let sender = writer.sender
        let replies = Handoff(writer)
        let samples = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for index in 0..<listeners {
                group.addTask {
                    let connection = try await options.connect(index)
                    try await connection.send(RealtimeBenchOptions.request(1, "q", #"{"p":"\#(path)","h":""}"#))
                    _ = try await connection.receive()
                    _ = try await connection.receive()
                    ready.continuation.yield()
                    var latencies: [Int64] = []
                    latencies.reserveCapacity(total)
                    while latencies.count < total, let frame = try await connection.receiveBuffer() {
                        let arrived = wallMicroseconds()
                        guard let sent = WSLatencyBenchCommand.sentTime(in: frame) else { continue }
                        latencies.append(arrived - sent)
                    }
                    await connection.close()
                    return latencies
                }
            }
            // The writer's replies are read (and ignored) so its socket never backs up.
            group.addTask {
                var acknowledged = 0
                while acknowledged < total, try await replies.value.receiveBuffer() != nil { acknowledged += 1 }
                return []
            }
            var connected = 0
            for await _ in ready.stream {
                connected += 1
                if connected == listeners { break }
            }
            print("Writing \(rate)/s for \(seconds) s to \(listeners) listeners…")
            let start = ContinuousClock.now
            let interval = Duration.seconds(1) / rate
            for n in 0..<total {
                let due = start + interval * n
                if due > ContinuousClock.now { try await Task.sleep(until: due, clock: .continuous) }
                try await sender.send(RealtimeBenchOptions.request(n + 2, "p", #"{"p":"\#(path)/t","d":\#(wallMicroseconds())}"#))
            }
            var all = LatencyStatistics()
            for try await latencies in group { for sample in latencies { all.add(sample) } }
            return all
        }
        await writer.close()
        print("Write-to-listener latency over \(samples.samples.count) deliveries: \(samples.summary)")
        if samples.samples.count < total * listeners { throw CLIError("some listeners missed events") }
    }

    /// The microseconds a write was sent at: the number after `"d":` in `{"t":"d","d":{"a":"d","b":{"p":"latency/t","d":123}}}`.
    static func sentTime(in frame: ByteBuffer) -> Int64? {
        let bytes = frame.readableBytesView
        let marker = Array(#""d":"#.utf8)
        guard let start = bytes.lastRange(of: marker)?.upperBound else { return nil }
        var value: Int64 = 0
        var index = start
        var digits = 0
        while index < bytes.endIndex, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            value = value * 10 + Int64(bytes[index] - 0x30)
            index += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}
