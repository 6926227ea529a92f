import Foundation
import HearthAccess
import HearthCore
@testable import HearthIdentity
import HearthStorage
@testable import HearthServer
import HTTPTypes
import NIOCore
import NIOPosix
import Testing

/// The links in account emails come from configuration, never from the request (issue 25, finding 3),
/// and their `continueUrl` leads only to authorized domains (finding 9).
@Suite struct ActionLinkTests {
    static let host = HTTPField.Name("Host")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!
    static let poisoned: HTTPFields = [ActionLinkTests.host: "evil.example:4444", ActionLinkTests.forwardedHost: "evil.example"]

    /// Sends one raw HTTP/1.1 request (so the `Host` header is exactly the attacker's) and returns the
    /// whole answer; the connection closes after it.
    static func rawPost(port: Int, path: String, body: String, extraHeaders: String = "") async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string:
                "POST \(path) HTTP/1.1\r\nHost: evil.example:4444\r\nX-Forwarded-Host: evil.example\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\(extraHeaders)\r\n\(body)"))
            var received = ""
            for try await buffer in inbound { received += String(buffer: buffer) }
            return received
        }
    }

    static func origin(of link: String) -> String? {
        guard let components = URLComponents(string: link), let scheme = components.scheme, let host = components.host else { return nil }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }

    @Test func aPoisonedHostDoesNotMoveTheResetLinkToTheAttacker() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer { $0.identity.publicURL = "https://accounts.example.com/" }.runLive(users: users) { auth, port async throws in
            try await auth.signUp("victim@example.com")
            let sent = try await Self.rawPost(
                port: port, path: "/identitytoolkit.googleapis.com/v1/accounts:sendOobCode?key=\(IdentityClient.key)",
                body: #"{"requestType":"PASSWORD_RESET","email":"victim@example.com"}"#
            )
            #expect(sent.hasPrefix("HTTP/1.1 200"), "\(sent)")
            let mail = try #require(try await users.outbox(project: IdentityTestServer.project, limit: 10).first)
            #expect(Self.origin(of: mail.link) == "https://accounts.example.com")
            #expect(mail.link.hasPrefix("https://accounts.example.com/__/auth/action?mode=resetPassword&oobCode="))
            #expect(!mail.body.contains("evil.example"))
            // The admin's generated link too.
            let generated = try await Self.rawPost(
                port: port, path: "/identitytoolkit.googleapis.com/v1/accounts:sendOobCode",
                body: #"{"requestType":"PASSWORD_RESET","email":"victim@example.com","returnOobLink":true}"#,
                extraHeaders: "Authorization: Bearer \(TestServer.secret)\r\n"
            )
            #expect(generated.hasPrefix("HTTP/1.1 200"), "\(generated)")
            #expect(generated.contains(#""oobLink":"https:\/\/accounts.example.com\/__\/auth\/action?"#) || generated.contains(#""oobLink":"https://accounts.example.com/__/auth/action?"#), "\(generated)")
            #expect(!generated.contains("evil.example"))
        }
    }

    @Test func withoutAPublicURLLinksUseTheListeningAddressAndItsRealPort() async throws {
        let users = InMemoryUserStore()
        // Port 0 (a free one): the link carries the port the server got, not 0 and not the Host's.
        try await IdentityTestServer { $0.host = "127.0.0.1" }.runLive(users: users) { auth, port async throws in
            try await auth.signUp("victim@example.com")
            let sent = try await Self.rawPost(
                port: port, path: "/identitytoolkit.googleapis.com/v1/accounts:sendOobCode?key=\(IdentityClient.key)",
                body: #"{"requestType":"PASSWORD_RESET","email":"victim@example.com"}"#
            )
            #expect(sent.hasPrefix("HTTP/1.1 200"), "\(sent)")
            let mail = try #require(try await users.outbox(project: IdentityTestServer.project, limit: 10).first)
            #expect(Self.origin(of: mail.link) == "http://127.0.0.1:\(port)")
        }
    }

    @Test func theEmulatorsCodeListingUsesTheConfiguredOriginToo() async throws {
        try await IdentityTestServer(emulator: true) { $0.identity.publicURL = "http://hearth.test:9000" }.run { auth async throws in
            try await auth.signUp("ada@example.com")
            try await auth.post("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"ada@example.com"}"#)
            let listing = try await auth.send(.get, OutOfBandTests.codesPath, nil, headers: Self.poisoned)
            guard case .array(let codes)? = listing.json?["oobCodes"], let link = codes.first?["oobLink"]?.stringValue else {
                Issue.record("no codes in \(listing.body)"); return
            }
            #expect(link.hasPrefix("http://hearth.test:9000/__/auth/action?"))
        }
    }

    @Test func continueURLsLeadOnlyToAuthorizedDomains() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer {
            $0.identity.publicURL = "https://accounts.example.com"
            $0.identity.authorizedDomains = ["app.example"]
        }.run(users: users) { auth async throws in
            try await auth.signUp("grace@example.com")
            func send(_ continueURL: String, admin: Bool = false) async throws -> Reply {
                let body = #"{"requestType":"PASSWORD_RESET","email":"grace@example.com","continueUrl":"\#(continueURL)""#
                    + (admin ? #","returnOobLink":true}"# : "}")
                return admin
                    ? try await auth.send(.post, "/identitytoolkit.googleapis.com/v1/accounts:sendOobCode", body, headers: TestServer.admin)
                    : try await auth.post("accounts:sendOobCode", body)
            }
            for allowed in [
                "https://app.example/after", "https://shop.app.example:8443/x?y=1", "http://localhost:3000/done", "http://127.0.0.1:5173/",
                "https://accounts.example.com/welcome", "HTTPS://APP.EXAMPLE/upper",
            ] {
                #expect(try await send(allowed).status == .ok, "\(allowed)")
            }
            for refused in ["https://evil.example/", "https://app.example.evil.example/", "https://evilapp.example/", "https://app.example@evil.example/", "http://127.0.0.2/"] {
                let reply = try await send(refused)
                #expect(reply.status == .badRequest, "\(refused)")
                #expect(reply.authError == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project", "\(refused)")
            }
            #expect(try await send("https://evil.example/", admin: true).authError == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
            for invalid in ["javascript:alert(1)", "data:text/html,hi", "ftp://app.example/", "/relative", "not a url"] {
                #expect(try await send(invalid).authError?.hasPrefix("INVALID_CONTINUE_URI") == true, "\(invalid)")
            }
            // Only the allowed ones were mailed, with their continueUrl.
            let outbox = try await users.outbox(project: IdentityTestServer.project, limit: 50)
            #expect(outbox.count == 6)
            #expect(!outbox.contains { $0.link.contains("evil") || $0.link.contains("javascript") })
            // The action page asks for the list before it follows a continueUrl.
            let project = try await auth.send(.get, "/identitytoolkit.googleapis.com/v1/projects?key=\(IdentityClient.key)", nil)
            #expect(project.json?["authorizedDomains"] == .array(["localhost", "127.0.0.1", "accounts.example.com", "app.example"].map(JSONValue.string)))
        }
    }

    @Test func publicURLsMustBeHTTPOrigins() throws {
        #expect(try ActionLinks.validatedOrigin("https://Hearth.Example.com/") == "https://hearth.example.com")
        #expect(try ActionLinks.validatedOrigin("http://10.0.0.5:9000") == "http://10.0.0.5:9000")
        #expect(try ActionLinks.validatedOrigin("http://[2001:db8::1]:9000") == "http://[2001:db8::1]:9000")
        for bad in ["hearth.example.com", "ftp://hearth.example.com", "https://hearth.example.com/app", "https://hearth.example.com/?a=1",
                    "https://hearth.example.com/#x", "https://user:pw@hearth.example.com", "javascript:alert(1)", ""] {
            #expect(throws: InvalidPublicURL.self, "\(bad)") { try ActionLinks.validatedOrigin(bad) }
        }
        #expect(ActionLinks.listeningOrigin(host: "0.0.0.0", port: 9000) == "http://127.0.0.1:9000")
        #expect(ActionLinks.listeningOrigin(host: "::", port: 9000) == "http://127.0.0.1:9000")
        #expect(ActionLinks.listeningOrigin(host: "192.168.1.5", port: 80) == "http://192.168.1.5:80")
        #expect(ActionLinks.listeningOrigin(host: "::1", port: 9000) == "http://[::1]:9000")
        #expect(ActionLinks.normalizedDomain(" https://App.Example.com:8443/path ") == "app.example.com")
        #expect(ActionLinks.normalizedDomain(".app.example.com") == "app.example.com")
        #expect(ActionLinks.normalizedDomain("") == nil)
        // The action page's server side list: the listening host when there is no public URL.
        let links = ActionLinks(publicURL: nil, host: "192.168.1.5", port: 9000, authorizedDomains: [])
        #expect(links.authorizedDomains == ["localhost", "127.0.0.1", "192.168.1.5"])
        #expect(links.check(continueURL: "http://192.168.1.5:3000/") == .authorized)
        #expect(links.check(continueURL: "http://x.192.168.1.5/") == .unauthorized)
    }
}
