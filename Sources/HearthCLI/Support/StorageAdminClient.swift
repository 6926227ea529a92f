import ArgumentParser
import AsyncHTTPClient
import Foundation
import HearthCore
import HearthProtocol
import HearthRules
import HearthStorageRules
import NIOCore
import NIOHTTP1

/// The Cloud Storage JSON API of a Hearth server, as its admin.
struct StorageAdminClient: Sendable {
    let base: String
    let secret: String?
    var http: HTTPClient { .shared }

    /// Chunks of a resumable upload (a multiple of 256 KiB, as Cloud Storage requires).
    static let chunkSize = 8 << 20

    enum Item {
        case folder(String)
        case object(JSONValue)
    }

    func request(_ path: String, method: HTTPMethod = .GET, body: HTTPClientRequest.Body? = nil, headers: [(String, String)] = []) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let secret { request.headers.add(name: "Authorization", value: "Bearer \(secret)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = body }
        return request
    }

    /// Sends a request and returns status and JSON body; non-2xx/308 becomes a CLIError with the server's message.
    func send(_ request: HTTPClientRequest, allow: Set<UInt> = []) async throws -> (status: UInt, headers: HTTPHeaders, json: JSONValue?) {
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .seconds(300))
        } catch {
            throw CLIError("cannot reach \(base): \(error). Is `hearth serve` running there (see --url)?")
        }
        let body = try await response.body.collect(upTo: 64 << 20)
        let json = body.readableBytes > 0 ? try? JSONValue(parsing: body.readableBytesView) : nil
        let status = response.status.code
        if (200..<300).contains(status) || status == 308 || allow.contains(status) { return (status, response.headers, json) }
        let message = json?["error"]?["message"]?.stringValue ?? json?["error"]?.stringValue ?? String(buffer: body)
        if status == 401 {
            throw CLIError("\(message) (set --secret or HEARTH_ADMIN_SECRET to the server's admin secret)")
        }
        throw CLIError("\(request.method) \(request.url): \(status) \(message)")
    }

    static func encode(_ text: String) -> String { PercentEncoding.component(text) }

    func buckets() async throws -> [String] {
        let (_, _, json) = try await send(request("/storage/v1/b"))
        return json?["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
    }

    func object(_ bucket: String, _ name: String) async throws -> JSONValue? {
        let (status, _, json) = try await send(request("/storage/v1/b/\(Self.encode(bucket))/o/\(Self.encode(name))"), allow: [404])
        return status == 404 ? nil : json
    }

    func list(_ bucket: String, prefix: String, delimiter: String?, _ each: (Item) throws -> Void) async throws {
        var pageToken: String?
        repeat {
            var path = "/storage/v1/b/\(Self.encode(bucket))/o?prefix=\(Self.encode(prefix))"
            if let delimiter { path += "&delimiter=\(Self.encode(delimiter))" }
            if let pageToken { path += "&pageToken=\(Self.encode(pageToken))" }
            let (_, _, json) = try await send(request(path))
            for folder in json?["prefixes"]?.arrayValue ?? [] { if let name = folder.stringValue { try each(.folder(name)) } }
            for item in json?["items"]?.arrayValue ?? [] { try each(.object(item)) }
            pageToken = json?["nextPageToken"]?.stringValue
        } while pageToken != nil
    }

    func delete(_ bucket: String, _ name: String) async throws {
        _ = try await send(request("/storage/v1/b/\(Self.encode(bucket))/o/\(Self.encode(name))", method: .DELETE))
    }

    /// Uploads a file by the resumable protocol in ``chunkSize`` pieces, reading one chunk at a time.
    @discardableResult
    func upload(file: URL, bucket: String, name: String, contentType: String?, progress: (Int64, Int64?) -> Void) async throws -> JSONValue {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: file)
        } catch {
            throw CLIError("cannot read \(file.path): \(error.localizedDescription)")
        }
        defer { try? handle.close() }
        let size = Int64((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)??.int64Value ?? 0)
        let type = contentType ?? Self.guessContentType(file.pathExtension)
        let metadata = JSONValue.object([("name", .string(name)), ("contentType", .string(type))]).jsonText
        let (_, headers, _) = try await send(request(
            "/upload/storage/v1/b/\(Self.encode(bucket))/o?uploadType=resumable", method: .POST, body: .bytes(ByteBuffer(string: metadata)),
            headers: [("Content-Type", "application/json"), ("X-Upload-Content-Length", String(size))]
        ))
        guard let location = headers.first(name: "Location"), let sessionPath = location.range(of: "/upload/").map({ String(location[$0.lowerBound...]) }) else {
            throw CLIError("the server did not start a resumable upload (no Location header)")
        }
        var offset: Int64 = 0
        progress(0, size)
        while true {
            let chunk = try handle.read(upToCount: Self.chunkSize) ?? Data()
            let last = offset + Int64(chunk.count) >= size
            let range = chunk.isEmpty ? "bytes */\(size)" : "bytes \(offset)-\(offset + Int64(chunk.count) - 1)/\(last ? String(size) : "*")"
            let (status, _, json) = try await send(request(
                sessionPath, method: .PUT, body: .bytes(ByteBuffer(bytes: chunk)), headers: [("Content-Range", range)]
            ))
            offset += Int64(chunk.count)
            progress(offset, size)
            if status != 308 {
                guard let json else { throw CLIError("the server finished the upload without describing the object") }
                return json
            }
            if chunk.isEmpty { throw CLIError("the server expects more bytes than \(file.path) has; it changed while uploading?") }
        }
    }

    /// Downloads to `file` through a temporary file renamed at the end, streaming.
    func download(_ bucket: String, _ name: String, to file: URL, progress: (Int64, Int64?) -> Void) async throws {
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request("/download/storage/v1/b/\(Self.encode(bucket))/o/\(Self.encode(name))?alt=media"), timeout: .hours(24))
        } catch {
            throw CLIError("cannot reach \(base): \(error). Is `hearth serve` running there (see --url)?")
        }
        guard response.status == .ok else {
            let body = try await response.body.collect(upTo: 1 << 20)
            let json = try? JSONValue(parsing: body.readableBytesView)
            throw CLIError("gs://\(bucket)/\(name): \(response.status.code) \(json?["error"]?["message"]?.stringValue ?? String(buffer: body))")
        }
        do {
            _ = try await Self.save(response, to: file, progress: progress)
        } catch {
            throw CLIError("downloading gs://\(bucket)/\(name) to \(file.path) failed: \(error)")
        }
    }

    /// Streams a response's body into `file` through `<file>.part`, fsynced and renamed at the end (a
    /// failed transfer leaves no partial file); `trailer` is appended last. Returns the body's size.
    static func save(
        _ response: HTTPClientResponse, to file: URL, trailer: [UInt8] = [], progress: (Int64, Int64?) -> Void
    ) async throws -> Int64 {
        let total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        let partial = file.appendingPathExtension("part")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil), let handle = try? FileHandle(forWritingTo: partial) else {
            throw CLIError("cannot write \(partial.path)")
        }
        var received: Int64 = 0
        do {
            for try await buffer in response.body {
                try handle.write(contentsOf: buffer.readableBytesView)
                received += Int64(buffer.readableBytes)
                progress(received, total)
            }
            try handle.write(contentsOf: trailer)
            try handle.synchronize()
            try handle.close()
            _ = try? FileManager.default.removeItem(at: file)
            try FileManager.default.moveItem(at: partial, to: file)
            return received
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    func rules() async throws -> String {
        let response = try await http.execute(request("/.settings/storage.rules"), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw CLIError("\(response.status.code): \(String(buffer: body)) (set --secret or HEARTH_ADMIN_SECRET)") }
        return String(buffer: body)
    }

    func setRules(_ source: String) async throws {
        _ = try await send(request("/.settings/storage.rules", method: .PUT, body: .bytes(ByteBuffer(string: source))))
    }

    static func guessContentType(_ fileExtension: String) -> String {
        switch fileExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "svg": "image/svg+xml"
        case "txt": "text/plain"
        case "html", "htm": "text/html"
        case "css": "text/css"
        case "js", "mjs": "text/javascript"
        case "json": "application/json"
        case "pdf": "application/pdf"
        case "mp4": "video/mp4"
        case "mp3": "audio/mpeg"
        default: "application/octet-stream"
        }
    }
}
