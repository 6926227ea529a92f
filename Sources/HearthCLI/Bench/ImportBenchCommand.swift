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
        abstract: "Import throughput of a large JSON file, and restart time with that data."
    )

    @Option(help: "Size of the generated file in MB.")
    var sizeMb = 100

    @Option(help: "Work directory (default: a new temporary one, removed afterwards).")
    var workDirectory: String?

    @Option(help: "Port for the restart measurement.")
    var port = 9390

    func run() async throws {
        let work = URL(fileURLWithPath: workDirectory ?? NSTemporaryDirectory() + "hearth-import-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if workDirectory == nil { try? FileManager.default.removeItem(at: work) } }
        let file = work.appendingPathComponent("data.json")
        let data = work.appendingPathComponent("data")
        let (bytes, users) = try generate(file, targetBytes: sizeMb * 1_000_000)
        let megabytes = Double(bytes) / 1_000_000
        FileHandle.standardError.write(Data("Generated \(String(format: "%.1f", megabytes)) MB (\(users) users)\n".utf8))

        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        let importStart = ContinuousClock.now
        try runProcess(executable, ["import", file.path, "--data", data.path])
        let importSeconds = seconds(since: importStart)

        let restartStart = ContinuousClock.now
        let server = Process()
        server.executableURL = URL(fileURLWithPath: executable)
        server.arguments = ["serve", "--data", data.path, "--port", String(port), "--emulator", "--log-level", "warning"]
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let client = HTTPClient.shared
        let probe = "http://127.0.0.1:\(port)/users/u\(String(format: "%07d", users - 1))/name.json"
        var ready = false
        while seconds(since: restartStart) < 60 {
            if let response = try? await client.execute(HTTPClientRequest(url: probe), timeout: .seconds(5)),
                response.status == .ok,
                let body = try? await response.body.collect(upTo: 1024), String(buffer: body) != "null"
            {
                ready = true
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let restartSeconds = seconds(since: restartStart)
        guard ready else { throw CLIError("the restarted server did not serve the imported data within 60 s") }
        let rss = residentMegabytes(pid: server.processIdentifier)
        print("""

            Import: \(String(format: "%.1f", megabytes)) MB JSON (\(users) users) in \(String(format: "%.2f", importSeconds)) s = \
            \(String(format: "%.1f", megabytes / importSeconds)) MB/s (hearth import of the whole database: bulk load into a new file)
            Restart: ready to serve that data \(String(format: "%.2f", restartSeconds)) s after process start; \
            server RSS \(rss.map { String(format: "%.0f", $0) } ?? "?") MB
            """)
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
