import ArgumentParser
import Foundation
import HearthCore

/// The `hearth` command line: the one place that picks a storage backend and starts a server.
@main
struct HearthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "A self-hosted realtime database that speaks Firebase's protocols.",
        discussion: """
            Start a server on ./hearth-data:   hearth serve
            Use it like the Firebase emulator: hearth serve --emulator
            Load a JSON file (server stopped): hearth import data.json
            """,
        subcommands: [ServeCommand.self, ImportCommand.self, ExportCommand.self, BackupCommand.self, RestoreCommand.self, RulesCommand.self, TokenCommand.self, UsersCommand.self, StorageCommand.self, EmulatorsCommand.self, MigrateCommand.self, ClusterCommand.self, BenchCommand.self]
    )

    static func main() async {
        MemoryTuning.apply()
        do {
            var command = try parseAsRoot(normalized(Array(CommandLine.arguments.dropFirst())))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CLIError {
            FileHandle.standardError.write(Data("error: \(error.description)\n".utf8))
            Foundation.exit(1)
        } catch {
            exit(withError: error)
        }
    }

    /// `--export-on-exit` without a directory, as firebase-tools takes it, exports to the `--import`
    /// directory: it becomes `--export-on-exit=<that directory>` (an option's value cannot be optional).
    static func normalized(_ arguments: [String]) -> [String] {
        var importDirectory: String?
        for (index, argument) in arguments.enumerated() {
            if argument == "--import", arguments.indices.contains(index + 1) { importDirectory = arguments[index + 1] }
            if argument.hasPrefix("--import=") { importDirectory = String(argument.dropFirst("--import=".count)) }
        }
        guard let importDirectory else { return arguments }
        return arguments.enumerated().map { index, argument in
            let next = arguments.indices.contains(index + 1) ? arguments[index + 1] : nil
            return argument == "--export-on-exit" && (next == nil || next!.hasPrefix("-")) ? "--export-on-exit=\(importDirectory)" : argument
        }
    }
}
