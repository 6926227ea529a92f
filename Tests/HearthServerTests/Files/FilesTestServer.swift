import Foundation
import HearthAccess
import HearthCore
@testable import HearthFiles
import HearthIdentity
import HearthProtocol
@testable import HearthServer
import HearthSQLite
import HearthStorage
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The real application with the file service on a fresh data directory (SQLite catalog, blob files),
/// requests through the router in process, or over a real connection (`live`).
struct FilesTestServer {
    static let project = "demo-files"
    static let bucket = "demo-files.appspot.com"
    var configuration = ServerConfiguration()
    let tokens = TokenSigner.generate()
    /// The server's hand-off of downloads to its connections: `sent` counts the file regions sent.
    let regions = FileRegionDownloads()
    let directory: URL

    init(emulator: Bool = false, directory: URL? = nil, configure: (inout ServerConfiguration) -> Void = { _ in }) {
        // Test clients reuse kept-alive connections across gaps that a starved machine stretches past any
        // short timeout, and a close racing a reuse fails the request: only RequestLimitTests tests the timeout.
        configuration.requestReadTimeout = .seconds(600)
        configuration.emulatorMode = emulator
        configuration.port = 0
        configuration.identity.projectID = FilesTestServer.project
        configure(&configuration)
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("hearth-files-test-\(UUID().uuidString)")
    }

    var files: FileStorage {
        get throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var storage = FileStorage(directory: directory.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: directory))
            storage.regions = regions
            return storage
        }
    }

    /// Runs `test`, through the router in process or over a connection to the listening server (`live`,
    /// where downloads can leave as file regions); the data directory is removed afterwards unless `keep`.
    func run(keep: Bool = false, live: Bool = false, _ test: @Sendable (FilesClient) async throws -> Void) async throws {
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        let (app, _, _, _, _) = try await makeApplication(
            configuration: configuration, storage: InMemoryStorage(), adminSecret: AdminSecret(hashing: TestServer.secret), tokens: tokens,
            files: try files
        )
        try await app.test(live ? .live : .router) { client in try await test(FilesClient(client: client, tokens: tokens)) }
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// Requests to the files APIs, as a user (an ID token), anonymously, or as admin.
struct FilesClient: Sendable {
    let client: any TestClientProtocol
    let tokens: TokenSigner

    /// `Authorization: Firebase <ID token>` for `uid`, as the Firebase SDKs send it.
    func user(_ uid: String, claims: [(key: String, value: JSONValue)] = []) throws -> HTTPFields {
        let token = try tokens.mint(uid: uid, claims: claims, expiresIn: 3600, now: Date())
        return [.authorization: "Firebase \(token)"]
    }

    static func objectPath(_ name: String, bucket: String = FilesTestServer.bucket) -> String {
        "/v0/b/\(bucket)/o/\(PercentEncoding.component(name))"
    }

    @discardableResult
    func send(_ method: HTTPRequest.Method, _ uri: String, body: [UInt8]? = nil, headers: HTTPFields = TestServer.admin) async throws -> Reply {
        try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) { response in
            Reply(status: response.status, body: String(buffer: response.body), headers: response.headers)
        }
    }

    /// The raw bytes of a response (downloads).
    func bytes(_ uri: String, headers: HTTPFields = TestServer.admin) async throws -> (status: HTTPResponse.Status, bytes: [UInt8], headers: HTTPFields) {
        try await client.execute(uri: uri, method: .get, headers: headers, body: nil) { response in
            (response.status, Array(response.body.readableBytesView), response.headers)
        }
    }

    /// A multipart upload as the Firebase JS SDK builds it.
    @discardableResult
    func upload(
        _ name: String, _ data: [UInt8], contentType: String = "application/octet-stream", metadata: String? = nil,
        headers: HTTPFields = TestServer.admin, bucket: String = FilesTestServer.bucket
    ) async throws -> Reply {
        let boundary = "hearth-\(UInt32.random(in: 0...UInt32.max))"
        let meta = metadata ?? #"{"name":"\#(name)","contentType":"\#(contentType)"}"#
        var body = Array("--\(boundary)\r\nContent-Type: application/json; charset=utf-8\r\n\r\n\(meta)\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
        body += data
        body += Array("\r\n--\(boundary)--".utf8)
        var fields = headers
        fields[.contentType] = "multipart/related; boundary=\(boundary)"
        fields[HTTPField.Name("X-Goog-Upload-Protocol")!] = "multipart"
        return try await send(.post, "/v0/b/\(bucket)/o?name=\(PercentEncoding.component(name))", body: body, headers: fields)
    }
}

extension HTTPFields {
    func adding(_ extra: [HTTPField.Name: String]) -> HTTPFields {
        var fields = self
        for (name, value) in extra { fields[name] = value }
        return fields
    }
}
