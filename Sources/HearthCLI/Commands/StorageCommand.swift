import ArgumentParser
import AsyncHTTPClient
import Foundation
import HearthCore
import HearthProtocol
import HearthRules
import HearthStorageRules
import NIOCore
import NIOHTTP1

/// `hearth storage ls|cp|rm|rules`: files of a running server, for scripts and backups.
struct StorageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage",
        abstract: "List, copy and delete files of a running server, and work with storage rules.",
        discussion: """
            Files are named gs://<bucket>/<path>, as gsutil names them; the default bucket is <project>.appspot.com.
              hearth storage ls gs://hearth.appspot.com/photos/
              hearth storage cp -r ./backup gs://hearth.appspot.com/restored     (upload a folder)
              hearth storage cp -r gs://hearth.appspot.com/photos ./backup       (download a folder)
              hearth storage rm -r gs://hearth.appspot.com/tmp/
              hearth storage rules set storage.rules
            Server commands use the admin secret from --secret or $HEARTH_ADMIN_SECRET (not needed for a server in --emulator mode).
            """,
        subcommands: [List.self, Copy.self, Remove.self, Rules.self]
    )

    /// Where the server is and how to be its admin.
    struct ServerOptions: ParsableArguments {
        @Option(help: "The server's URL.")
        var url = "http://127.0.0.1:9000"

        @Option(help: ArgumentHelp("The admin secret (default: $HEARTH_ADMIN_SECRET).", valueName: "secret"))
        var secret: String?

        var client: StorageAdminClient {
            get throws {
                guard let base = URL(string: url), base.scheme == "http" || base.scheme == "https" else {
                    throw CLIError("--url must be an http(s) URL, like http://127.0.0.1:9000")
                }
                let secret = secret ?? ProcessInfo.processInfo.environment["HEARTH_ADMIN_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
                return StorageAdminClient(base: url.hasSuffix("/") ? String(url.dropLast()) : url, secret: secret)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls", abstract: "List buckets, or the files and folders under gs://bucket/prefix."
        )
        @OptionGroup var server: ServerOptions
        @Argument(help: "gs://bucket[/prefix]; nothing lists the buckets.")
        var location: String?
        @Flag(name: [.customShort("r"), .long], help: "List everything under the prefix, not just one level.")
        var recursive = false
        @Flag(name: [.customShort("l"), .long], help: "Show size and update time.")
        var long = false

        func run() async throws {
            let client = try server.client
            guard let location else {
                for bucket in try await client.buckets() { print("gs://\(bucket)/") }
                return
            }
            let (bucket, prefix) = try GSPath.parse(location)
            var folder = prefix
            if !folder.isEmpty, !folder.hasSuffix("/") {
                // `ls gs://b/photos` lists the folder if there is no object by that exact name.
                if try await client.object(bucket, prefix) == nil { folder += "/" }
            }
            var count = 0
            try await client.list(bucket, prefix: folder, delimiter: recursive ? nil : "/") { item in
                count += 1
                switch item {
                case .folder(let name): print(long ? "\("DIR".padding(toLength: 12, withPad: " ", startingAt: 0))  \(String(repeating: " ", count: 24))  gs://\(bucket)/\(name)" : "gs://\(bucket)/\(name)")
                case .object(let json):
                    let name = json["name"]?.stringValue ?? ""
                    if long {
                        let size = json["size"]?.stringValue ?? "?"
                        let updated = json["updated"]?.stringValue ?? ""
                        print("\(size.padding(toLength: 12, withPad: " ", startingAt: 0))  \(updated.padding(toLength: 24, withPad: " ", startingAt: 0))  gs://\(bucket)/\(name)")
                    } else {
                        print("gs://\(bucket)/\(name)")
                    }
                }
            }
            if count == 0 { FileHandle.standardError.write(Data("nothing under gs://\(bucket)/\(folder)\n".utf8)) }
        }
    }

    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cp",
            abstract: "Copy files between this machine and the server (uploads resume in chunks; progress on stderr).",
            discussion: "One side is a local path, the other gs://bucket/path. With -r, folders are copied whole."
        )
        @OptionGroup var server: ServerOptions
        @Argument(help: "What to copy.")
        var source: String
        @Argument(help: "Where to.")
        var destination: String
        @Flag(name: [.customShort("r"), .long], help: "Copy a folder and everything in it.")
        var recursive = false
        @Option(help: "Content type of uploads (default: guessed from the file name).")
        var contentType: String?

        func run() async throws {
            let client = try server.client
            let progress = ProgressLine()
            switch (source.hasPrefix("gs://"), destination.hasPrefix("gs://")) {
            case (false, true):
                let (bucket, target) = try GSPath.parse(destination)
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) else { throw CLIError("\(source): no such file") }
                if isDirectory.boolValue {
                    guard recursive else { throw CLIError("\(source) is a folder; add -r to copy it and everything in it") }
                    let root = URL(fileURLWithPath: source)
                    let files = (FileManager.default.enumerator(atPath: source)?.compactMap { $0 as? String } ?? []).filter { path in
                        var folder: ObjCBool = false
                        return FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path, isDirectory: &folder) && !folder.boolValue
                    }.sorted()
                    let base = target.isEmpty || target.hasSuffix("/") ? target : target + "/"
                    for (index, path) in files.enumerated() {
                        let name = base + path
                        try await client.upload(file: root.appendingPathComponent(path), bucket: bucket, name: name, contentType: contentType) {
                            progress.show("[\(index + 1)/\(files.count)] gs://\(bucket)/\(name)", $0, $1)
                        }
                        progress.finish()
                    }
                    print("uploaded \(files.count) file(s) to gs://\(bucket)/\(base)")
                } else {
                    let name = target.isEmpty || target.hasSuffix("/") ? target + URL(fileURLWithPath: source).lastPathComponent : target
                    let object = try await client.upload(file: URL(fileURLWithPath: source), bucket: bucket, name: name, contentType: contentType) {
                        progress.show("gs://\(bucket)/\(name)", $0, $1)
                    }
                    progress.finish()
                    print("gs://\(bucket)/\(name) (\(object["size"]?.stringValue ?? "?") bytes, md5 \(object["md5Hash"]?.stringValue ?? "?"))")
                }
            case (true, false):
                let (bucket, name) = try GSPath.parse(source)
                if recursive {
                    let prefix = name.isEmpty || name.hasSuffix("/") ? name : name + "/"
                    var names: [String] = []
                    try await client.list(bucket, prefix: prefix, delimiter: nil) { item in
                        if case .object(let json) = item, let name = json["name"]?.stringValue { names.append(name) }
                    }
                    for (index, object) in names.enumerated() {
                        let local = URL(fileURLWithPath: destination).appendingPathComponent(String(object.dropFirst(prefix.count)))
                        try FileManager.default.createDirectory(at: local.deletingLastPathComponent(), withIntermediateDirectories: true)
                        try await client.download(bucket, object, to: local) { progress.show("[\(index + 1)/\(names.count)] \(local.path)", $0, $1) }
                        progress.finish()
                    }
                    print("downloaded \(names.count) file(s) to \(destination)")
                } else {
                    var local = URL(fileURLWithPath: destination)
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: destination, isDirectory: &isDirectory), isDirectory.boolValue {
                        local = local.appendingPathComponent(name.split(separator: "/").last.map(String.init) ?? name)
                    }
                    try await client.download(bucket, name, to: local) { progress.show(local.path, $0, $1) }
                    progress.finish()
                }
            default:
                throw CLIError("one side of cp is a local path and the other gs://bucket/path")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete files.")
        @OptionGroup var server: ServerOptions
        @Argument(help: "gs://bucket/path of each file (a folder with -r).")
        var locations: [String]
        @Flag(name: [.customShort("r"), .long], help: "Delete a folder and everything in it.")
        var recursive = false

        func run() async throws {
            let client = try server.client
            var deleted = 0
            for location in locations {
                let (bucket, name) = try GSPath.parse(location)
                if recursive {
                    let prefix = name.isEmpty || name.hasSuffix("/") ? name : name + "/"
                    var names: [String] = []
                    try await client.list(bucket, prefix: prefix, delimiter: nil) { item in
                        if case .object(let json) = item, let name = json["name"]?.stringValue { names.append(name) }
                    }
                    for object in names {
                        try await client.delete(bucket, object)
                        deleted += 1
                        FileHandle.standardError.write(Data("\rdeleted \(deleted)".utf8))
                    }
                    FileHandle.standardError.write(Data("\n".utf8))
                } else {
                    try await client.delete(bucket, name)
                    deleted += 1
                }
            }
            print("deleted \(deleted) file(s)")
        }
    }

    struct Rules: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rules",
            abstract: "Check, test, read and set storage rules.",
            subcommands: [Check.self, Test.self, Get.self, Set.self]
        )

        static func load(_ file: String) throws -> StorageRules {
            let source: String
            do {
                source = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                throw CLIError("cannot read \(file): \(error.localizedDescription)")
            }
            do {
                return try StorageRules(source: source)
            } catch {
                for diagnostic in error.diagnostics { FileHandle.standardError.write(Data(RulesCheckCommand.format(diagnostic, file).utf8)) }
                throw ExitCode.failure
            }
        }

        struct Check: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Check a storage rules file and print every problem, compiler-style.",
                discussion: "Exits 0 when the server would accept the file, 1 otherwise."
            )
            @Argument(help: "The rules file (Firebase's storage rules language).")
            var file: String

            func run() async throws {
                _ = try Rules.load(file)
                print("\(file): ok")
            }
        }

        struct Test: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Run storage rules scenarios (who does what to which file, allowed or denied).",
                discussion: """
                    The scenario file is JSON: {"objects": {"<name>": {"size", "contentType", "metadata"}}, "tests": [{"name", "auth", \
                    "method": "get" | "list" | "create" | "update" | "delete", "path", "resource": {…}, "expect": "allowed" | "denied"}]}.
                    """
            )
            @Argument(help: "The rules file.")
            var rules: String
            @Argument(help: "The scenario file.")
            var scenarios: String

            func run() async throws {
                let document = try Rules.load(rules)
                let suite: StorageRulesTestSuite
                do {
                    suite = try StorageRulesTestSuite(json: try RulesTestCommand.scenarioJSON(scenarios))
                } catch let error as RulesError {
                    throw CLIError("\(scenarios): \(error.message)")
                }
                try RulesTestCommand.report(suite.run(document).map { ($0.name, $0.passed, $0.detail) })
            }
        }

        struct Get: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Print the running server's storage rules.")
            @OptionGroup var server: ServerOptions

            func run() async throws {
                print(try await server.client.rules())
            }
        }

        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Check a rules file, then make it the running server's storage rules.")
            @OptionGroup var server: ServerOptions
            @Argument(help: "The rules file.")
            var file: String

            func run() async throws {
                let rules = try Rules.load(file)
                try await server.client.setRules(rules.source)
                print("storage rules set from \(file)")
            }
        }
    }
}

/// `gs://bucket/path` split in two.
enum GSPath {
    static func parse(_ text: String) throws -> (bucket: String, name: String) {
        guard text.hasPrefix("gs://") else { throw CLIError("\(text): files on the server are named gs://bucket/path") }
        let rest = text.dropFirst(5)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bucket = parts.first, !bucket.isEmpty else { throw CLIError("\(text): missing the bucket (gs://<bucket>/path)") }
        return (String(bucket), parts.count > 1 ? String(parts[1]) : "")
    }
}

/// One line of progress on standard error, rewritten in place: name, percent, throughput.
final class ProgressLine: @unchecked Sendable {
    private let start = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var begun = ContinuousClock.now

    func show(_ label: String, _ done: Int64, _ total: Int64?) {
        let now = ContinuousClock.now
        if done == 0 { begun = now }
        guard now - lastDraw > .milliseconds(200) || (total != nil && done == total) else { return }
        lastDraw = now
        let seconds = max(0.001, Double((now - begun).components.attoseconds) / 1e18 + Double((now - begun).components.seconds))
        let rate = Double(done) / seconds / 1_048_576
        let percent = total.map { $0 > 0 ? " \(Int(Double(done) * 100 / Double($0)))%" : " 100%" } ?? ""
        let line = "\r\(label)\(percent) \(String(format: "%.1f", Double(done) / 1_048_576)) MiB \(String(format: "%.1f", rate)) MiB/s"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        FileHandle.standardError.write(Data("\n".utf8))
        _ = start
    }
}

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
