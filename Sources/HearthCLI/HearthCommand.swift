import ArgumentParser

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
        subcommands: [ServeCommand.self, ImportCommand.self, ExportCommand.self, BenchCommand.self]
    )
}
