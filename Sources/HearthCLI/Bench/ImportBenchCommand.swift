import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Generates a large JSON file, imports it with `hearth import`, then restarts `hearth serve` on the data
/// and times how long until the data answers.
struct ImportBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import throughput of a large JSON file, then restart time and memory with that data."
    )

    @Option(help: "Size of the generated file in MB.")
    var sizeMb = 100

    @Option(help: "Work directory (default: a new temporary one, removed afterwards).")
    var workDirectory: String?

    @Option(help: "Port for the restart measurement.")
    var port = 9390

    @Option(help: ArgumentHelp("Serve the data with this --memory-limit (e.g. 256MB) instead of holding the whole tree.", valueName: "size"))
    var memoryLimit: ByteCount?

    @Option(help: "After the restart, measure REST reads, writes and write→listener latency for this long each (0: skip).")
    var serveSeconds = 0.0

    @Option(help: "Requests in flight at once during --serve-seconds.")
    var concurrency = 16

    @Flag(help: "Skip generating and importing: reuse the data in --work-directory from an earlier run.")
    var reuse = false

    func run() async throws {
        let work = URL(fileURLWithPath: workDirectory ?? NSTemporaryDirectory() + "hearth-import-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if workDirectory == nil { try? FileManager.default.removeItem(at: work) } }
        let file = work.appendingPathComponent("data.json")
        let data = work.appendingPathComponent("data")
        let bytes: Int, users: Int, importSeconds: Double
        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        if reuse {
            guard workDirectory != nil, let saved = try? String(contentsOf: work.appendingPathComponent("generated.txt"), encoding: .utf8),
                case let numbers = saved.split(separator: " ").compactMap({ Double($0) }), numbers.count == 3
            else { throw CLIError("--reuse needs the --work-directory of an earlier run of this bench") }
            (bytes, users, importSeconds) = (Int(numbers[0]), Int(numbers[1]), numbers[2])
        } else {
            (bytes, users) = try generate(file, targetBytes: sizeMb * 1_000_000)
            try? FileManager.default.removeItem(at: data)
            FileHandle.standardError.write(Data("Generated \(String(format: "%.1f", Double(bytes) / 1_000_000)) MB (\(users) users)\n".utf8))
            let importStart = ContinuousClock.now
            try runProcess(executable, ["import", file.path, "--data", data.path])
            importSeconds = seconds(since: importStart)
            try "\(bytes) \(users) \(importSeconds)".write(to: work.appendingPathComponent("generated.txt"), atomically: true, encoding: .utf8)
        }
        let megabytes = Double(bytes) / 1_000_000

        try? FileManager.default.removeItem(at: work.appendingPathComponent("empty"))
        let empty = try await restart(work.appendingPathComponent("empty"), probe: "/.json?shallow=true", expectingData: false)
        var served: ServedLoadBench.Result?
        let restarted = try await restart(data, probe: "/users/u\(String(format: "%07d", users - 1))/name.json", expectingData: true) { base in
            guard serveSeconds > 0 else { return }
            let bench = ServedLoadBench(base: base, users: users, seconds: serveSeconds, concurrency: concurrency)
            served = try await bench.run { FileHandle.standardError.write(Data("\($0)\n".utf8)) }
        }
        let mode = memoryLimit.map { "with --memory-limit \(String(format: "%.0f", Double($0.bytes) / 1_048_576)) MiB (served from the file)" }
            ?? "whole tree in memory"
        print("\nMode: \(mode)")
        print("""

            Import: \(String(format: "%.1f", megabytes)) MB JSON (\(users) users) in \(String(format: "%.2f", importSeconds)) s = \
            \(String(format: "%.1f", megabytes / importSeconds)) MB/s (hearth import of the whole database: bulk load into a new file)
            Restart: first answer (read from the file while the tree loads) \(String(format: "%.2f", restarted.firstAnswer)) s \
            after process start; whole tree loaded (first write acknowledged) after \(String(format: "%.2f", restarted.loaded)) s
            Memory: server RSS \(String(format: "%.0f", restarted.rss)) MB with the tree loaded, \(String(format: "%.0f", empty.rss)) MB \
            empty: the tree costs \(String(format: "%.0f", restarted.rss - empty.rss)) MB = \
            \(String(format: "%.2f", (restarted.rss - empty.rss) / megabytes))× its JSON size
            """)
        if let served {
            print("""
                Served (\(concurrency) requests at a time, \(served.seconds) s each): \
                reads \(String(format: "%.0f", Double(served.reads) / served.seconds))/s (\(served.readLatency.summary)); \
                writes \(String(format: "%.0f", Double(served.writes) / served.seconds))/s (\(served.writeLatency.summary)); \
                write→listener during the writes: \(served.delivery.samples.count) events, \(served.delivery.summary); \
                server RSS after: \(String(format: "%.0f", restarted.rssAfterLoad ?? .nan)) MB
                """)
        }
    }

    /// Starts `hearth serve` on `data` and times, from the process start, the first answer to `probe`
    /// and the first acknowledged write (writes wait for the whole tree); then reads the server's RSS.
    func restart(
        _ data: URL, probe: String, expectingData: Bool, whileRunning: (String) async throws -> Void = { _ in }
    ) async throws -> (firstAnswer: Double, loaded: Double, rss: Double, rssAfterLoad: Double?) {
        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        let start = ContinuousClock.now
        let server = Process()
        server.executableURL = URL(fileURLWithPath: executable)
        server.arguments = ["serve", "--data", data.path, "--port", String(port), "--emulator", "--log-level", "warning"]
            + (memoryLimit.map { ["--memory-limit", String($0.bytes)] } ?? [])
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let client = HTTPClient.shared
        let base = "http://127.0.0.1:\(port)"
        var firstAnswer: Double?
        while firstAnswer == nil, seconds(since: start) < 120 {
            if let response = try? await client.execute(HTTPClientRequest(url: base + probe), timeout: .seconds(5)),
                response.status == .ok,
                let body = try? await response.body.collect(upTo: 1 << 20), !expectingData || String(buffer: body) != "null"
            {
                firstAnswer = seconds(since: start)
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let firstAnswer else { throw CLIError("the restarted server did not answer within 120 s") }
        var write = HTTPClientRequest(url: base + "/bench-restart/probe.json")
        write.method = .PUT
        write.body = .bytes(ByteBuffer(string: "1"))
        // Acknowledged once the whole tree is loaded; a client gives up on a quiet connection after a
        // while, so a long load is waited out by asking again (the write is idempotent).
        var acknowledged = false
        while !acknowledged, seconds(since: start) < 900 {
            guard let response = try? await client.execute(write, timeout: .seconds(60)) else { continue }
            guard response.status == .ok else { throw CLIError("the restarted server refused a write: \(response.status)") }
            acknowledged = true
        }
        guard acknowledged else { throw CLIError("the restarted server did not acknowledge a write within 900 s") }
        let loaded = seconds(since: start)
        // Settle: the loader's temporary memory is given back before RSS is read.
        try await Task.sleep(for: .seconds(1))
        guard let rss = residentMegabytes(pid: server.processIdentifier) else { throw CLIError("cannot read the server's RSS") }
        try await whileRunning(base)
        return (firstAnswer, loaded, rss, residentMegabytes(pid: server.processIdentifier))
    }

    /// Writes `{"users": {"u0000000": {...}, ...}}` of about `targetBytes`, deterministically.
    func generate(_ file: URL, targetBytes: Int) throws -> (bytes: Int, users: Int) {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        var buffer = #"{"users":{"#
        var written = 0
        var users = 0
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
        while written + buffer.utf8.count < targetBytes {
            let id = String(format: "%07d", users)
            let bio = (0..<12).map { words[($0 * 7 + users) % words.count] }.joined(separator: " ")
            if users > 0 { buffer += "," }
            buffer += """
                "u\(id)":{"name":"User \(id)","email":"user\(id)@example.com","age":\(18 + users % 60),\
                "score":\(Double(users % 1000) / 8),"active":\(users % 3 == 0),"bio":"\(bio)",\
                "tags":{"t\(users % 5)":true,"t\(users % 7 + 5)":true},"joined":\(1_600_000_000_000 + users * 1000)}
                """
            users += 1
            if buffer.utf8.count > 1 << 20 {
                handle.write(Data(buffer.utf8))
                written += buffer.utf8.count
                buffer = ""
            }
        }
        buffer += "}}"
        handle.write(Data(buffer.utf8))
        written += buffer.utf8.count
        return (written, users)
    }

    func runProcess(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIError("\(arguments.first ?? "") failed with status \(process.terminationStatus)")
        }
    }

    func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    func residentMegabytes(pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        let kb = line.split(separator: " ").compactMap { Double($0) }.first
        return kb.map { $0 / 1024 }
    }
}
