import AsyncHTTPClient
import Foundation
import HearthCore
import NIOCore
import HearthProtocol
import NIOHTTP1

/// `hearth import` and `hearth export` against a running server (`--url`), as its admin: the JSON
/// streams in and out through the REST API, with progress, so nobody has to stop the server.
extension StorageAdminClient {
    /// Makes the client from `--url` and `--secret` (default `$HEARTH_ADMIN_SECRET`).
    static func forServer(url: String, secret: String?) throws -> StorageAdminClient {
        guard let base = URL(string: url), base.scheme == "http" || base.scheme == "https", base.host != nil else {
            throw CLIError("--url must be an http(s) URL, like http://127.0.0.1:9000")
        }
        let secret = secret ?? ProcessInfo.processInfo.environment["HEARTH_ADMIN_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        return StorageAdminClient(base: url.hasSuffix("/") ? String(url.dropLast()) : url, secret: secret)
    }

    static func databaseURL(_ path: DatabasePath, namespace: String, _ extra: String = "") -> String {
        let encoded = path.keys.map { PercentEncoding.component($0.string) }.joined(separator: "/")
        return "/\(encoded).json?ns=\(PercentEncoding.component(namespace))\(extra)"
    }

    /// Streams `path` of `namespace` (priorities kept) into `file`, through a temporary file renamed at the end.
    func exportJSON(_ path: DatabasePath, namespace: String, to file: URL?, progress: (Int64, Int64?) -> Void) async throws -> Int64 {
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request(Self.databaseURL(path, namespace: namespace, "&format=export")), timeout: .hours(24))
        } catch {
            throw CLIError("cannot reach \(base): \(error). Is `hearth serve` running there (see --url)?")
        }
        guard response.status == .ok else { throw try await Self.failure(response, what: "export") }
        let total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        var received: Int64 = 0
        do {
            if let file {
                received = try await Self.save(response, to: file, trailer: Array("\n".utf8), progress: progress)
            } else {
                for try await buffer in response.body {
                    try FileHandle.standardOutput.write(contentsOf: buffer.readableBytesView)
                    received += Int64(buffer.readableBytes)
                    progress(received, total)
                }
                try FileHandle.standardOutput.write(contentsOf: Data("\n".utf8))
            }
        } catch {
            throw CLIError("the export stopped after \(received) bytes: \(error)")
        }
        return received
    }

    /// Streams `file` to the server as one write: replacing `path` (PUT) or, with `merge`, only the
    /// top-level children the file names (PATCH). The server applies it atomically or not at all.
    func importJSON(_ file: URL, at path: DatabasePath, namespace: String, merge: Bool, progress: @escaping @Sendable (Int64, Int64) -> Void) async throws {
        guard let handle = FileHandle(forReadingAtPath: file.path) else { throw CLIError("cannot read \(file.path)") }
        let size = Int64((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0)
        let body = FileChunks(handle: handle, size: size, progress: progress)
        var request = request(Self.databaseURL(path, namespace: namespace, "&print=silent"), method: merge ? .PATCH : .PUT)
        request.body = .stream(body, length: .known(size))
        request.headers.add(name: "Content-Type", value: "application/json")
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .hours(24))
        } catch {
            throw CLIError("cannot send \(file.path) to \(base): \(error). Is `hearth serve` running there (see --url)?")
        }
        guard (200..<300).contains(response.status.code) else { throw try await Self.failure(response, what: "import") }
    }

    /// The server's refusal, with what to do next.
    static func failure(_ response: HTTPClientResponse, what: String) async throws -> CLIError {
        let body = try await response.body.collect(upTo: 1 << 20)
        let json = try? JSONValue(parsing: body.readableBytesView)
        let message = json?["error"]?.stringValue ?? json?["error"]?["message"]?.stringValue ?? String(buffer: body)
        switch response.status.code {
        case _ where message.contains("too large") || response.status.code == 413:
            return CLIError("the file is larger than the server takes in one request: \(message). Stop the server and run `hearth import` without --url, or import parts with --path.")
        case 401, 403:
            return CLIError("the server refused the \(what): \(message). Set --secret or HEARTH_ADMIN_SECRET to its admin secret.")
        default:
            return CLIError("the server refused the \(what) (\(response.status.code)): \(message). Nothing was changed.")
        }
    }
}
