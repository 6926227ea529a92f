import ArgumentParser
import Foundation
import HearthCore
import HearthSQLite

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Load a JSON file into a database (with the server stopped, or into a running one with --url).",
        discussion: """
            Streams the file into SQLite: it all lands or none of it does. Accepts Firebase exports, \
            including priorities (.priority/.value). By default the data at --path is replaced; --merge \
            replaces only the top-level children the file names. Replacing the whole database (the root, \
            no --merge) builds a new database file and swaps it in, keeping the rules; other imports run \
            in one transaction. With --url, the file \
            streams to a running server as one write (PUT, or PATCH with --merge), as its admin \
            (--secret or $HEARTH_ADMIN_SECRET), up to the server's request size (256 MB by default).
            """
    )

    @Argument(help: "The JSON file to import.")
    var file: String

    @Option(help: "Where to put the data (default: the root).")
    var path = "/"

    @Flag(help: "Replace only the top-level children named in the file, keeping the others.")
    var merge = false

    @Option(help: "The namespace (database) to import into.")
    var namespace = "default"

    @Option(help: ArgumentHelp("Import into the running server at this URL instead of the data directory.", valueName: "url"))
    var url: String?

    @Option(help: ArgumentHelp("With --url: the server's admin secret (default: $HEARTH_ADMIN_SECRET).", valueName: "secret"))
    var secret: String?

    @OptionGroup var dataOptions: DataOptions

    func run() async throws {
        let target: DatabasePath
        do {
            target = try DatabasePath(path)
        } catch {
            throw CLIError("--path: \(error.message)")
        }
        if let server = self.url {
            let client = try StorageAdminClient.forServer(url: server, secret: secret)
            let source = URL(fileURLWithPath: file)
            guard FileManager.default.isReadableFile(atPath: source.path) else { throw CLIError("cannot read \(file)") }
            let line = ProgressLine()
            try await client.importJSON(source, at: target, namespace: namespace, merge: merge) { line.show("Importing \(file)", $0, $1) }
            line.finish()
            FileHandle.standardError.write(Data("Imported \(file) into \(namespace)\(target) on \(server)\n".utf8))
            return
        }
        let url = URL(fileURLWithPath: file)
        let bytes: Data
        do {
            bytes = try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw CLIError("cannot read \(file): \(error.localizedDescription)")
        }
        let storage = try dataOptions.openStorage(
            whileServing: "To load into the running server: curl -X PUT --data-binary @\(file) 'http://HOST:PORT\(target).json?auth=<admin secret>'"
        )
        var bar = ProgressBar(total: bytes.count, label: "Importing")
        let rows: Int
        do {
            rows = try bytes.withUnsafeBytes { raw in
                try storage.importJSON(raw, namespace: namespace, at: target, merge: merge) { bar.update($0) }
            }
        } catch let error as JSONError {
            throw CLIError("\(file) is not valid JSON: \(error). Nothing was imported.")
        } catch let error as DataError {
            throw CLIError("\(file): \(error.message). Nothing was imported.")
        }
        bar.update(bytes.count)
        bar.finish("Imported \(rows) values (\(bytes.count) bytes) into \(namespace)\(target)")
    }
}
