import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run Hearth's benchmarks (see docs/benchmarks.md).",
        subcommands: []
    )
}
