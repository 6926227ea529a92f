import Foundation
import HearthCore
import HearthEngine
import HearthRules
import HearthStorage
@testable import HearthServer
@testable import HearthWeb
import HTTPTypes
import Testing

/// The start page, the shared stylesheet and the reference apps are served from the binary, and
/// database paths under the same names stay reachable by REST.
@Suite struct WebAssetsTests {
    @Test func pagesAreServedAndDatabasePathsStillAnswer() async throws {
        try await TestServer(emulator: true).run { client, _ async throws in
            let start = try await client.call(.get, "/", headers: [:])
            #expect(start.status == .ok)
            #expect(start.headers[.contentType] == "text/html; charset=utf-8")
            #expect(start.body.contains("/apps/profiles/"))
            let css = try await client.call(.get, "/ui/hearth-ui.css", headers: [:])
            #expect(css.headers[.contentType] == "text/css; charset=utf-8")
            let app = try await client.call(.get, "/apps/profiles/", headers: [:])
            #expect(app.body.contains("<title>Profiles"))
            #expect(try await client.call(.get, "/apps/profiles/profiles.js", headers: [:]).headers[.contentType] == "text/javascript; charset=utf-8")
            let redirect = try await client.call(.get, "/apps/profiles", headers: [:])
            #expect(redirect.status == .movedPermanently)
            #expect(redirect.headers[.location] == "/apps/profiles/")
            #expect(try await client.call(.get, "/apps/profiles/../../admin-secret", headers: [:]).status == .notFound)
            // A database location called `apps` is still the database's.
            #expect(try await client.call(.put, "/apps/settings.json", #"{"theme":"dark"}"#).status == .ok)
            #expect(try await client.call(.get, "/apps/settings/theme.json").body == #""dark""#)
        }
    }

    @Test func theProfilesNamespaceStartsWithTheAppsRulesButKeepsTheAdminsOwn() async throws {
        let storage = InMemoryStorage()
        let own = #"{"rules": {".read": true, ".write": false}}"#
        try await TestServer().run(storage: storage) { client, registry async throws in
            let rules = try await registry.database("profiles").rules.source
            #expect(rules.contains("newData.hasChildren(['id', 'gender', 'name', 'age'])"))
            let bad = try await client.call(.put, "/profiles/x.json?ns=profiles", #"{"id":1,"name":"A","age":3,"gender":"robot"}"#, headers: [:])
            #expect(bad.status == .unauthorized)
            #expect(try await client.call(.put, "/.settings/rules.json?ns=profiles", own).status == .ok)
        }
        // Started again on the same data, the admin's rules stay.
        try await TestServer().run(storage: storage) { _, registry async throws in
            #expect(try await registry.database("profiles").rules.source == own)
        }
    }

    /// Issue 25: a server on a public address does not serve the apps or open their namespaces.
    @Test func withoutTheReferenceAppsTheirPagesAreGoneAndTheirNamespacesLocked() async throws {
        try await TestServer(configure: { $0.referenceApps = false }).run { client, registry async throws in
            let page = try await client.call(.get, "/apps/profiles/", headers: [:])
            #expect(page.status == .notFound)
            #expect(page.body.contains("--reference-apps"))
            #expect(try await client.call(.get, "/apps/timeline/timeline.js", headers: [:]).status == .notFound)
            #expect(try await registry.database("profiles").rules.source == RulesDocument.defaults(open: false).source)
            let write = try await client.call(.put, "/profiles/x.json?ns=profiles", #"{"id":1,"name":"A","age":3,"gender":"female"}"#, headers: [:])
            #expect(write.status == .unauthorized)
            // The console and the REST API under /apps are still there.
            #expect(try await client.call(.get, "/console/", headers: [:]).status == .ok)
            #expect(try await client.call(.put, "/apps/x.json", "1").status == .ok)
        }
    }

    /// HEARTH_WEB_DIR (development only) serves pages from a folder, falling back to the embedded
    /// files; without it only embedded files are served, and `..` never escapes either.
    @Test func aDevelopmentFolderServesPagesFromDisk() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-web-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("console"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("export const edited = true;".utf8).write(to: folder.appendingPathComponent("console/data-tree.js"))
        func text(_ path: String, from directory: String?) -> String? {
            WebAssets.file(path, from: directory).map { String(decoding: $0.bytes, as: UTF8.self) }
        }
        #expect(text("/console/data-tree.js", from: folder.path) == "export const edited = true;")
        // Not in the folder: the embedded file.
        #expect(text("/console/", from: folder.path)?.contains("Console · Hearth") == true)
        // The default (no folder) serves the embedded module, not the edited one.
        #expect(text("/console/data-tree.js", from: nil)?.contains("export class DataTree") == true)
        #expect(WebAssets.file("/console/../../etc/passwd", from: folder.path) == nil)
        #expect(WebAssets.developmentDirectory == nil, "the tests run without HEARTH_WEB_DIR")
    }
}
