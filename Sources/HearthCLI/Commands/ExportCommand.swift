import ArgumentParser
import Foundation
import HearthCore
import HearthSQLite
import HearthStorage

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a database (or part of it) as JSON (with the server stopped, or from a running one with --url).",
        discussion: "Priorities are kept (format=export), so the file imports back exactly."
    )

    @Option(help: "The location to export (default: the root).")
    var path = "/"

    @Option(help: "The namespace (database) to export.")
    var namespace = "default"

    @Option(name: .shortAndLong, help: "Write to this file instead of standard output.")
    var output: String?

    @Option(help: ArgumentHelp("Export from the running server at this URL instead of the data directory.", valueName: "url"))
    var url: String?

    @Option(help: ArgumentHelp("With --url: the server's admin secret (default: $HEARTH_ADMIN_SECRET).", valueName: "secret"))
    var secret: String?

    @OptionGroup var dataOptions: DataOptions

    func run() async throws {
        let location: DatabasePath
        do {
            location = try DatabasePath(path)
        } catch {
            throw CLIError("--path: \(error.message)")
        }
        if let server = url {
            let client = try StorageAdminClient.forServer(url: server, secret: secret)
            let line = ProgressLine()
            let file = output.map { URL(fileURLWithPath: $0) }
            let bytes = try await client.exportJSON(location, namespace: namespace, to: file) { done, total in
                if file != nil { line.show("Exporting \(namespace)\(location)", done, total) }
            }
            if let output {
                line.finish()
                FileHandle.standardError.write(Data("Exported \(bytes) bytes of \(namespace)\(location) from \(server) to \(output)\n".utf8))
            }
            return
        }
        let storage = try dataOptions.openStorage(
            whileServing: "To export from the running server: curl 'http://HOST:PORT\(location).json?format=export&auth=<admin secret>'"
        )
        let database = try storage.openNamespace(namespace)
        let node = try await database.load().root.child(at: location)
        let handle: FileHandle
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil), let file = FileHandle(forWritingAtPath: output) else {
                throw CLIError("cannot write \(output)")
            }
            handle = file
        } else {
            handle = FileHandle.standardOutput
        }
        // Stream one top-level child at a time so memory holds one child's JSON, not the whole file.
        var bar = ProgressBar(total: max(node.childCount, 1), label: "Exporting")
        var written = 0
        guard case .children(let children) = node, !children.entries.isEmpty else {
            handle.write(Data(node.jsonBytes(format: .export)))
            handle.write(Data("\n".utf8))
            return
        }
        handle.write(Data("{".utf8))
        for (index, entry) in node.sortedChildren.enumerated() {
            var writer = JSONWriter()
            if index > 0 { writer.comma() }
            writer.writeKey(entry.key.string)
            entry.node.write(to: &writer, format: .export)
            handle.write(Data(writer.bytes))
            written += writer.bytes.count
            if output != nil { bar.update(index + 1) }
        }
        if let priority = children.priority {
            var writer = JSONWriter()
            writer.writeRaw(",\".priority\":")
            writer.write(primitive: priority.primitive)
            handle.write(Data(writer.bytes))
        }
        handle.write(Data("}\n".utf8))
        if output != nil { bar.finish("Exported \(written) bytes of \(namespace)\(location)") }
    }
}
