import Foundation
@testable import HearthServer
@testable import HearthWeb
import HTTPTypes
import Testing

/// The console, the reference apps, the start page and the account action page carry a strict
/// Content-Security-Policy of their own (issue 25): scripts and styles only as files from the server's
/// origin, so nothing inline can run there, and the pages need nothing inline to work.
@Suite struct PageSecurityHeadersTests {
    static let policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https: http:; "
        + "connect-src 'self' ws: wss:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    static let nosniff = HTTPField.Name("X-Content-Type-Options")!

    @Test func everyPageAndAssetHasTheStrictPolicyAndNosniff() async throws {
        try await TestServer(emulator: true).run { client, _ async throws in
            for path in ["/", "/console/", "/console/console.js", "/apps/timeline/", "/apps/profiles/", "/apps/posts/", "/ui/hearth-ui.css",
                "/ui/home.css", "/ui/action.css", "/__/auth/action", "/__/auth/action.js"]
            {
                let page = try await client.call(.get, path, headers: [:])
                #expect(page.status == .ok, "\(path)")
                #expect(page.headers[.contentSecurityPolicy] == Self.policy, "\(path)")
                #expect(page.headers[Self.nosniff] == "nosniff", "\(path)")
            }
            // The client modules are imported by other origins' pages: nosniff, and no page policy.
            for path in ["/hearth.js", "/hearth/repo.js", "/hearth/paths.js", "/hearth-auth.js"] {
                let module = try await client.call(.get, path, headers: [:])
                #expect(module.status == .ok, "\(path)")
                #expect(module.headers[.contentType] == "text/javascript; charset=utf-8", "\(path)")
                #expect(module.headers[Self.nosniff] == "nosniff", "\(path)")
                #expect(module.headers[.accessControlAllowOrigin] == "*", "\(path)")
                #expect(module.headers[.contentSecurityPolicy] == nil, "\(path)")
            }
            #expect(try await client.call(.get, "/hearth/missing.js", headers: [:]).status == .notFound)
        }
    }

    /// `/hearth/…` serves hearth.js's modules, and every other request there is the database's: a
    /// location named `hearth` stays readable and writable. So do `__` and `emulator`, the first
    /// segments of the account action pages.
    @Test func databaseLocationsUnderTheClientAndActionRoutesStayReachable() async throws {
        try await TestServer(emulator: true).run { client, _ async throws in
            let write = try await client.call(.put, "/hearth/repo.json", #"{"a":1}"#)
            #expect(write.status == .ok)
            let read = try await client.call(.get, "/hearth/repo.json")
            #expect(read.status == .ok)
            #expect(read.body == #"{"a":1}"#)
            #expect(try await client.call(.get, "/hearth.json").body == #"{"repo":{"a":1}}"#)
            #expect(try await client.call(.delete, "/hearth/repo.json").status == .ok)
            // The same for the first segments of the account action pages' routes.
            for path in ["/__/x.json", "/__/auth/x.json", "/emulator/x.json"] {
                #expect(try await client.call(.put, path, "7").status == .ok, "\(path)")
                #expect(try await client.call(.get, path).body == "7", "\(path)")
            }
            #expect(try await client.call(.get, "/__/auth/action").status == .ok)
        }
    }

    /// What the policy forbids, the pages must not contain: inline scripts, `<style>` elements,
    /// `style` attributes and inline event handlers.
    @Test func noPageNeedsInlineScriptOrStyle() throws {
        let pages = EmbeddedWebAssets.files.keys.filter { $0.hasSuffix(".html") }
        #expect(pages.count >= 6)
        for name in pages {
            let html = String(decoding: try #require(EmbeddedWebAssets.files[name]), as: UTF8.self)
            #expect(!html.contains("<style"), "\(name) has a <style> element")
            #expect(!html.contains(" style=\""), "\(name) has a style attribute")
            #expect(html.range(of: #"<script(?![^>]*\ssrc=)[^>]*>"#, options: .regularExpression) == nil, "\(name) has an inline script")
            #expect(html.range(of: #"\son[a-z]+=""#, options: .regularExpression) == nil, "\(name) has an inline event handler")
        }
    }
}
