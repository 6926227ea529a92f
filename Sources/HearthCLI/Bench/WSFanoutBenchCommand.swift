import ArgumentParser
import Foundation
import HearthRealtimeClient
import NIOCore

/// Many WebSocket listeners on one location and one writer: how many pushes per second reach them.
struct WSFanoutBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws-fanout",
        abstract: "Event deliveries per second to WebSocket listeners of one location."
    )

    @OptionGroup var options: RealtimeBenchOptions

    @Option(help: "Listening connections.")
    var listeners = 1000

    @Option(help: "Writes (each delivered to every listener).")
    var writes = 500

    func run() async throws {
        _ = OpenFileLimit.raiseToMaximum()
        let path = "/fanout"
        let writer = try await options.connectWriter(listeners)
        try await writer.send(RealtimeBenchOptions.request(1, "p", #"{"p":"\#(path)","d":{"n":-1}}"#))
        _ = try await writer.receive()
        print("Opening \(listeners) listeners…")
        let expected = writes
        let ready = AsyncStream<Void>.makeStream()
        let result = try await withThrowingTaskGroup(of: (count: Int, last: Int64).self) { group in
            for index in 0..<listeners {
                group.addTask {
                    let connection = try await options.connect(index)
                    try await connection.send(RealtimeBenchOptions.request(1, "q", #"{"p":"\#(path)","h":""}"#))
                    _ = try await connection.receive()   // the current value
                    _ = try await connection.receive()   // ok
                    ready.continuation.yield()
                    var count = 0
                    var last: Int64 = 0
                    while count < expected, let _ = try await connection.receiveBuffer() {
                        count += 1
                        last = wallMicroseconds()
                    }
                    await connection.close()
                    return (count, last)
                }
            }
            var connected = 0
            for await _ in ready.stream {
                connected += 1
                if connected == listeners { break }
            }
            print("Writing \(writes) values…")
            let started = wallMicroseconds()
            let sender = writer.sender
            for n in 0..<writes {
                try await sender.send(RealtimeBenchOptions.request(n + 2, "p", #"{"p":"\#(path)/n","d":\#(n)}"#))
            }
            var total = 0
            var last: Int64 = started
            for try await listener in group {
                total += listener.count
                last = max(last, listener.last)
            }
            return (total: total, seconds: Double(last - started) / 1e6)
        }
        await writer.close()
        let rate = Double(result.total) / result.seconds
        print("Delivered \(result.total) of \(listeners * writes) events in \(String(format: "%.2f", result.seconds)) s: \(Int(rate)) deliveries/s.")
        if result.total < listeners * writes { throw CLIError("some listeners missed events") }
    }
}
