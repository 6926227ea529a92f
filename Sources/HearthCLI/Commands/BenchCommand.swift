import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run Hearth's benchmarks (results and exact commands: docs/benchmarks.md).",
        discussion: """
            Benchmarks need a release build (swift build -c release). REST throughput against PocketBase is \
            measured by scripts/bench/compare-rest.sh; scripts/bench/run-all.sh runs everything.
            """,
        subcommands: [
            SSEBenchCommand.self, ImportBenchCommand.self, RulesBenchCommand.self,
            WSIdleBenchCommand.self, WSFanoutBenchCommand.self, WSLatencyBenchCommand.self, WSWritesBenchCommand.self, SDKBenchCommand.self, FilesBenchCommand.self, SignInBenchCommand.self,
            PostgresBenchCommand.self, CeilingBenchCommand.self, ChecksumsBenchCommand.self,
        ]
    )
}
