import ArgumentParser
import AsyncHTTPClient
import Foundation
import HearthCore
import NIOCore
import NIOHTTP1
import Synchronization

/// Many SSE listeners on one path, a steady stream of durable writes: how long from a write's request
/// to each listener's delivery.
struct SSEBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sse",
        abstract: "Write-to-delivery latency with many event-stream listeners on one path."
    )

    @Option(help: "The server to measure.")
    var url = "http://127.0.0.1:9000"

    @Option(help: "The admin secret (default: $HEARTH_ADMIN_SECRET).")
    var secret: String?

    @Option(help: "Event-stream listeners on the path.")
    var listeners = 1000

    @Option(help: "Writes per second.")
    var rate = 100

    @Option(help: "Seconds of writing.")
    var seconds = 10

    @Option(help: "The location written and listened to.")
    var path = "/bench/sse"

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: listeners + 16)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(Int64(seconds + 60)))
        try await HTTPClient.withClient(configuration: configuration) { client in try await measure(client) }
    }

    func measure(_ client: HTTPClient) async throws {
        let secret = self.secret ?? ProcessInfo.processInfo.environment["HEARTH_ADMIN_SECRET"] ?? ""

        let location = "\(url)\(path).json"
        var put = HTTPClientRequest(url: location)
        put.method = .PUT
        put.headers.add(name: "Authorization", value: "Bearer \(secret)")
        put.body = .bytes(ByteBuffer(string: #"{"seq":0,"t":0}"#))
        let reset = try await client.execute(put, timeout: .seconds(10))
        guard reset.status == .ok else {
            throw CLIError("PUT \(location) answered \(reset.status.code); is the server running and is --secret right?")
        }

        let shared = Shared()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<listeners {
                group.addTask {
                    var request = HTTPClientRequest(url: location)
                    request.headers.add(name: "Accept", value: "text/event-stream")
                    request.headers.add(name: "Authorization", value: "Bearer \(secret)")
                    let response = try await client.execute(request, timeout: .seconds(Int64(seconds + 60)))
                    var connected = false
                    var pending: [UInt8] = []
                    for try await chunk in response.body {
                        let arrived = wallMicroseconds()
                        // Each write's event carries "t":<microseconds>; the initial snapshot has t = 0 and
                        // the stop marker t = -1. Scan bytes (strings would load the client), and keep an
                        // event split across chunks until its end ("\n\n") arrives.
                        pending.append(contentsOf: chunk.readableBytesView)
                        guard let end = SSEBenchCommand.lastEventEnd(pending) else { continue }
                        let complete = Array(pending[..<end])
                        pending.removeFirst(end)
                        for sent in SSEBenchCommand.timestamps(in: complete) {
                            if sent < 0 { return }
                            if sent == 0 {
                                if !connected {
                                    connected = true
                                    shared.connected.add(1, ordering: .relaxed)
                                }
                                continue
                            }
                            shared.latencies.withLock { $0.add(arrived - sent) }
                        }
                    }
                }
            }
            // Wait until every listener has its initial snapshot.
            let deadline = ContinuousClock.now + .seconds(60)
            while shared.connected.load(ordering: .relaxed) < listeners {
                guard ContinuousClock.now < deadline else {
                    throw CLIError("only \(shared.connected.load(ordering: .relaxed)) of \(listeners) listeners connected")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            FileHandle.standardError.write(Data("\(listeners) listeners connected; writing \(rate)/s for \(seconds) s\n".utf8))
            var writes = LatencyStatistics()
            let interval = Duration.nanoseconds(1_000_000_000 / Int64(rate))
            var next = ContinuousClock.now
            for seq in 1...(rate * seconds) {
                next += interval
                var request = put
                let sent = wallMicroseconds()
                request.body = .bytes(ByteBuffer(string: "{\"seq\":\(seq),\"t\":\(sent)}"))
                let response = try await client.execute(request, timeout: .seconds(10))
                guard response.status == .ok else { throw CLIError("a write answered \(response.status.code)") }
                _ = try await response.body.collect(upTo: 1 << 16)
                writes.add(wallMicroseconds() - sent)
                if seq % rate == 0 { FileHandle.standardError.write(Data("\r\(seq / rate) s".utf8)) }
                try await Task.sleep(until: next, clock: .continuous)
            }
            var stop = put
            stop.body = .bytes(ByteBuffer(string: #"{"seq":-1,"t":-1}"#))
            _ = try await client.execute(stop, timeout: .seconds(10))
            try await group.waitForAll()
            let delivered = shared.latencies.withLock { $0 }
            let expected = listeners * rate * seconds
            print("""

                SSE fan-out: \(listeners) listeners on \(path), \(rate) durable writes/s for \(seconds) s
                  write acknowledged:   \(writes.summary)
                  write-to-delivery:    \(delivered.summary)
                  deliveries:           \(delivered.samples.count) of \(expected) expected \
                (\(delivered.samples.count * 100 / max(expected, 1))%), \
                \(delivered.samples.count / max(seconds, 1)) events/s
                """)
        }
    }

    /// What the listener tasks report to the coordinator.
    final class Shared: Sendable {
        let latencies = Mutex(LatencyStatistics())
        let connected = Atomic<Int>(0)
    }

    /// The index just past the last `\n\n` (the end of the last complete event), if any.
    static func lastEventEnd(_ bytes: [UInt8]) -> Int? {
        var i = bytes.count - 1
        while i > 0 {
            if bytes[i] == 0x0A, bytes[i - 1] == 0x0A { return i + 1 }
            i -= 1
        }
        return nil
    }

    /// Every `"t":<integer>` in complete events of the stream.
    static func timestamps(in events: [UInt8]) -> [Int64] {
        events.withUnsafeBytes { bytes in
            var found: [Int64] = []
            var i = 0
            let pattern: [UInt8] = Array(#""t":"#.utf8)
            while i + pattern.count < bytes.count {
                if bytes[i] == pattern[0], bytes[i + 1] == pattern[1], bytes[i + 2] == pattern[2], bytes[i + 3] == pattern[3] {
                    i += pattern.count
                    var negative = false
                    if i < bytes.count, bytes[i] == UInt8(ascii: "-") {
                        negative = true
                        i += 1
                    }
                    var value: Int64 = 0
                    while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                        value = value * 10 + Int64(bytes[i] - UInt8(ascii: "0"))
                        i += 1
                    }
                    found.append(negative ? -value : value)
                } else {
                    i += 1
                }
            }
            return found
        }
    }
}
