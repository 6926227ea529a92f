import Foundation
import HearthAccess
import HearthCore
@testable import HearthIdentity
@testable import HearthServer
import HearthStorage
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The real application with the identity service, on in-memory storage unless given other stores,
/// with cheap password hashing. Requests go through the router in process.
struct IdentityTestServer {
    static let project = "demo-identity"
    var configuration = ServerConfiguration()
    let tokens: TokenSigner

    init(emulator: Bool = false, tokens: TokenSigner = .generate(), configure: (inout ServerConfiguration) -> Void = { _ in }) {
        // Test clients reuse kept-alive connections across gaps that a starved machine stretches past any
        // short timeout, and a close racing a reuse fails the request: only RequestLimitTests tests the timeout.
        configuration.requestReadTimeout = .seconds(600)
        self.tokens = tokens
        configuration.emulatorMode = emulator
        configuration.port = 0
        configuration.identity.projectID = IdentityTestServer.project
        configuration.identity.passwordHashing = .fastForTests
        configure(&configuration)
    }

    func run(
        users: any UserStore = InMemoryUserStore(),
        storage: any DatabaseStorage = InMemoryStorage(),
        _ test: @Sendable (IdentityClient) async throws -> Void
    ) async throws {
        let (app, _, _, _, _) = try await makeApplication(
            configuration: configuration, storage: storage, adminSecret: AdminSecret(hashing: TestServer.secret), tokens: tokens, users: users
        )
        try await app.test(.router) { client in try await test(IdentityClient(client: client)) }
    }

    /// On a real socket, for WebSocket tests; the test gets the port too.
    func runLive(users: any UserStore = InMemoryUserStore(), _ test: @Sendable (IdentityClient, Int) async throws -> Void) async throws {
        let (app, _, _, _, _) = try await makeApplication(
            configuration: configuration, storage: InMemoryStorage(), adminSecret: AdminSecret(hashing: TestServer.secret), tokens: tokens, users: users
        )
        try await app.test(.live) { client in try await test(IdentityClient(client: client), client.port!) }
    }
}

/// Calls to the Identity Toolkit API as an app (API key) or as admin.
struct IdentityClient: Sendable {
    let client: any TestClientProtocol
    static let key = "test-api-key"

    /// `POST /identitytoolkit.googleapis.com/v1/<operation>?key=…` with a JSON body.
    @discardableResult
    func post(_ operation: String, _ body: String, headers: HTTPFields = [:], key: String? = IdentityClient.key) async throws -> Reply {
        var uri = "/identitytoolkit.googleapis.com/v1/\(operation)"
        if let key { uri += "?key=\(key)" }
        return try await send(.post, uri, body, headers: headers)
    }

    /// An admin call under `projects/{project}/`.
    @discardableResult
    func admin(_ operation: String, _ body: String? = nil, method: HTTPRequest.Method = .post, project: String = IdentityTestServer.project) async throws -> Reply {
        try await send(method, "/identitytoolkit.googleapis.com/v1/projects/\(project)/\(operation)", body, headers: TestServer.admin)
    }

    @discardableResult
    func send(_ method: HTTPRequest.Method, _ uri: String, _ body: String?, headers: HTTPFields = [:]) async throws -> Reply {
        var fields = headers
        if body != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        return try await client.execute(uri: uri, method: method, headers: fields, body: body.map { ByteBuffer(string: $0) }) { response in
            Reply(status: response.status, body: String(buffer: response.body), headers: response.headers)
        }
    }

    /// Signs up with email and password; returns the response JSON.
    func signUp(_ email: String, _ password: String = "secret123") async throws -> JSONValue {
        let reply = try await post("accounts:signUp", #"{"email":"\#(email)","password":"\#(password)","returnSecureToken":true}"#)
        #expect(reply.status == .ok, "\(reply.body)")
        return try #require(reply.json)
    }
}

extension Reply {
    /// The `message` of a Firebase Auth error envelope.
    var authError: String? {
        if case .string(let message)? = json?["error"]?["message"] { return message }
        return nil
    }

    func string(_ key: String) -> String? {
        if case .string(let text)? = json?[key] { return text }
        return nil
    }
}

/// The header and payload of a JWT, unverified.
func jwtParts(_ token: String) throws -> (header: JSONValue, payload: JSONValue) {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    #expect(parts.count == 3)
    let header = try JSONValue(parsing: try #require(Base64URL.decode(parts[0])))
    let payload = try JSONValue(parsing: try #require(Base64URL.decode(parts[1])))
    return (header, payload)
}

/// An unsigned custom token as firebase-admin makes them in emulator mode.
func unsignedCustomToken(uid: String, claims: String? = nil, audience: String = IdentityService.customTokenAudience) -> String {
    let header = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
    var payload = #"{"iss":"firebase-auth-emulator@example.com","sub":"firebase-auth-emulator@example.com","aud":"\#(audience)","uid":"\#(uid)","iat":1700000000,"exp":1700003600"#
    if let claims { payload += #","claims":\#(claims)"# }
    payload += "}"
    return header + "." + Base64URL.encode(Array(payload.utf8)) + "."
}

enum KDFCheck {
    static func scrypt(_ password: String, salt: String, log2N: Int, r: Int, p: Int, length: Int) throws -> [UInt8] {
        try PasswordHasher(log2Rounds: log2N, blockSize: r, parallelism: p).derive(password, salt: Array(salt.utf8), length: length)
    }
}
