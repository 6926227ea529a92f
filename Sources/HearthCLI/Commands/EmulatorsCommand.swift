import ArgumentParser
import AsyncHTTPClient
import Foundation
import HearthCore
import NIOCore
import NIOHTTP1

/// `hearth emulators export DIR`: the Emulator Suite's `firebase emulators:export`, against a
/// server running with `--emulator`.
struct EmulatorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulators",
        abstract: "Work with a server running as the Firebase Emulator Suite (hearth serve --emulator).",
        subcommands: [Export.self]
    )

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write everything the running emulator holds to DIR, in the layout of firebase emulators:export.",
            discussion: """
                The server writes the directory (it must be on the server's machine): databases, users \
                (with their password hashes) and files. Start a server from it with hearth serve --emulator --import DIR.
                """
        )

        @Argument(help: "The export directory (created if missing; replaced whole with --force).")
        var directory: String

        @Option(help: "The running server's URL (any of its ports).")
        var url = "http://127.0.0.1:9000"

        @Flag(help: "Replace an existing, non-empty directory.")
        var force = false

        func run() async throws {
            let target = URL(fileURLWithPath: directory).standardizedFileURL
            let existing = (try? FileManager.default.contentsOfDirectory(atPath: target.path)) ?? []
            if !existing.isEmpty, !force {
                throw CLIError("\(target.path) is not empty: an export there replaces everything in it. Re-run with --force to overwrite it.")
            }
            let client = try StorageAdminClient.forServer(url: url, secret: "owner")
            var request = client.request("/_admin/export", method: .POST, headers: [("Content-Type", "application/json")])
            request.body = .bytes(ByteBuffer(string: JSONValue.object([("path", .string(target.path)), ("force", .bool(force))]).jsonText))
            let answer = try await client.send(request)
            let summary = answer.json?["summary"]?.stringValue.map { " (\($0))" } ?? ""
            print("Export complete: \(target.path)\(summary)")
        }
    }
}
