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
            let source = try readTextFile(file)
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
