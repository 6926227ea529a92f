import ArgumentParser
import AsyncHTTPClient
import Foundation
import HearthCore
import NIOCore
import NIOHTTP1

/// Upload and download throughput of a file service: N clients uploading objects of one size as fast
/// as answers come, then downloading them. Talks to Hearth's Firebase Storage API, or to PocketBase's
/// records API with a file field, so both run in one script with the same client
/// (`scripts/bench/files.sh`).
struct FilesBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "files",
        abstract: "Upload and download throughput of Hearth's files (or PocketBase's, for comparison).",
        discussion: """
            hearth bench files --url http://127.0.0.1:9000 --secret $HEARTH_ADMIN_SECRET --size-kb 1024
            hearth bench files --target pocketbase --url http://127.0.0.1:8090 --collection files --size-kb 64
            hearth bench files --target ceiling --url http://127.0.0.1:9100 --size-kb 1024   (hearth bench ceiling: the same bytes from memory)
            """
    )

    @Option(help: "The server.")
    var url = "http://127.0.0.1:9000"

    @Option(help: "hearth, pocketbase, or ceiling (`hearth bench ceiling`: bytes from memory, the transfer's limit here).")
    var target = "hearth"

    @Option(help: "Hearth: the admin secret (default: $HEARTH_ADMIN_SECRET; not needed in --emulator mode).")
    var secret: String?

    @Option(help: "Hearth: the bucket.")
    var bucket = "hearth.appspot.com"

    @Option(help: "PocketBase: the collection with a `file` field that anyone may create and view.")
    var collection = "files"

    @Option(help: "Object size in KiB.")
    var sizeKb = 1024

    @Option(help: "Concurrent clients.")
    var clients = 16

    @Option(help: "Seconds of uploading (then the same objects are downloaded for as long).")
    var seconds = 10.0

    func validate() throws {
        guard ["hearth", "pocketbase", "ceiling"].contains(target) else { throw ValidationError("--target is hearth, pocketbase or ceiling") }
        guard sizeKb > 0, clients > 0, seconds > 0 else { throw ValidationError("--size-kb, --clients and --seconds must be positive") }
    }

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = clients
        try await HTTPClient.withClient(configuration: configuration) { client in try await measure(client) }
    }

    func measure(_ client: HTTPClient) async throws {
        let payload = ByteBuffer(bytes: (0..<sizeKb * 1024).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let secret = secret ?? ProcessInfo.processInfo.environment["HEARTH_ADMIN_SECRET"]
        say("\(target) at \(url): \(clients) clients, \(sizeKb) KiB objects, \(Int(seconds)) s of uploads then downloads")

        // Uploads: each client uploads objects until time is up; the URLs to fetch them are kept.
        let uploadStart = ContinuousClock.now
        let deadline = uploadStart + .milliseconds(Int(seconds * 1000))
        let uploaded = try await withThrowingTaskGroup(of: [String].self) { group in
            for index in 0..<clients {
                group.addTask {
                    var links: [String] = []
                    var n = 0
                    while ContinuousClock.now < deadline {
                        n += 1
                        links.append(try await upload(client, payload, name: "bench/c\(index)/o\(n).bin", secret: secret))
                    }
                    return links
                }
            }
            var all: [String] = []
            for try await links in group { all += links }
            return all
        }
        let uploadSeconds = Self.seconds(since: uploadStart)
        report("upload", count: uploaded.count, seconds: uploadSeconds)

        // Downloads: the clients fetch the uploaded objects round-robin for as long, checking sizes.
        let downloadStart = ContinuousClock.now
        let downloadDeadline = downloadStart + .milliseconds(Int(seconds * 1000))
        let downloaded = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<clients {
                group.addTask {
                    var count = 0
                    var next = index
                    while ContinuousClock.now < downloadDeadline, !uploaded.isEmpty {
                        var request = HTTPClientRequest(url: uploaded[next % uploaded.count])
                        if target == "hearth", let secret { request.headers.add(name: "Authorization", value: "Bearer \(secret)") }
                        let response = try await client.execute(request, timeout: .seconds(60))
                        let body = try await response.body.collect(upTo: sizeKb * 1024 + 1)
                        guard response.status == .ok, body.readableBytes == sizeKb * 1024 else {
                            throw CLIError("download of \(uploaded[next % uploaded.count]) answered \(response.status.code) with \(body.readableBytes) bytes")
                        }
                        count += 1
                        next += clients
                    }
                    return count
                }
            }
            var total = 0
            for try await count in group { total += count }
            return total
        }
        report("download", count: downloaded, seconds: Self.seconds(since: downloadStart))
    }

    /// Uploads one object; returns the URL that downloads it.
    func upload(_ client: HTTPClient, _ payload: ByteBuffer, name: String, secret: String?) async throws -> String {
        var request: HTTPClientRequest
        if target == "hearth" {
            let encoded = PercentEncoding.component(name)
            let object = "\(url)/v0/b/\(bucket)/o"
            request = HTTPClientRequest(url: "\(object)?name=\(encoded)")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            if let secret { request.headers.add(name: "Authorization", value: "Bearer \(secret)") }
            request.body = .bytes(payload)
            let response = try await client.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok else { throw CLIError("upload answered \(response.status.code): \(String(buffer: body))") }
            return "\(object)/\(encoded)?alt=media"
        }
        if target == "ceiling" {
            request = HTTPClientRequest(url: "\(url)/blob")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.body = .bytes(payload)
            let response = try await client.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok else { throw CLIError("ceiling upload answered \(response.status.code)") }
            return "\(url)/blob/\(sizeKb)"
        }
        // PocketBase: multipart/form-data with the file in a `file` field of a new record.
        let boundary = "hearthbench\(UInt32.random(in: 0...UInt32.max))"
        var body = ByteBuffer(string: "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"o.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
        var copy = payload
        body.writeBuffer(&copy)
        body.writeString("\r\n--\(boundary)--\r\n")
        request = HTTPClientRequest(url: "\(url)/api/collections/\(collection)/records")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "multipart/form-data; boundary=\(boundary)")
        request.body = .bytes(body)
        let response = try await client.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok, let record = try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any],
            let id = record["id"] as? String, let file = record["file"] as? String
        else { throw CLIError("PocketBase upload answered \(response.status.code): \(String(buffer: answer))") }
        return "\(url)/api/files/\(collection)/\(id)/\(file)"
    }

    func report(_ what: String, count: Int, seconds: Double) {
        let megabytes = Double(count * sizeKb) / 1024
        say("\(target) \(what): \(count) objects of \(sizeKb) KiB in \(String(format: "%.1f", seconds)) s = "
            + "\(String(format: "%.0f", Double(count) / seconds)) objects/s, \(String(format: "%.1f", megabytes / seconds)) MiB/s")
    }

    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
