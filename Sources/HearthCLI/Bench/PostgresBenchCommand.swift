import ArgumentParser
import Foundation
import HearthCore
import HearthPostgres
import HearthStorage

/// The cost of the PostgreSQL backend's commits and loads, in a database of its own on the server given
/// (created and dropped by the benchmark).
struct PostgresBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres",
        abstract: "Commit latency (one row), rows/s of a large commit, and load speed on PostgreSQL.",
        discussion: "Start a server with scripts/postgres/throwaway.sh start DIR and pass the URL it prints."
    )

    @Option(help: ArgumentHelp("A PostgreSQL server (the benchmark creates and drops its own database there).", valueName: "url"))
    var postgres: String

    @Option(help: "How many one-row commits to time.")
    var commits = 2_000

    @Option(help: "Rows in the large commit.")
    var rows = 100_000

    func run() async throws {
        let name = "hearth_bench_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let url: String
        do {
            url = try await PostgresStorage.createDatabase(named: name, onServerOf: postgres)
        } catch let error as DatabaseStorageError {
            throw CLIError(error.message)
        }
        let storage = try await PostgresStorage.connect(url: url, nodeName: "bench")
        do {
            try await measure(storage)
            await storage.shutdown()
            try await PostgresStorage.dropDatabase(named: name, onServerOf: postgres)
        } catch {
            await storage.shutdown()
            try? await PostgresStorage.dropDatabase(named: name, onServerOf: postgres)
            throw error
        }
    }

    func measure(_ storage: PostgresStorage) async throws {
        try await storage.join(address: "http://127.0.0.1:1")
        let db = try storage.openNamespace("bench")
        guard let lease = try await db.claim() else { throw CLIError("could not claim the benchmark's database") }
        let clock = ContinuousClock()

        // One leaf per commit, as the engine's group commit does under light load.
        var latencies: [Duration] = []
        latencies.reserveCapacity(commits)
        let started = clock.now
        for i in 0..<commits {
            let path = try DatabasePath("/small/k\(i % 100)")
            let mutations = [StorageMutation.replace(path, .leaf(.number(Double(i))))]
            let entry = #"{"w":\#(i)}"#
            let elapsed = try await clock.measure {
                _ = try await db.commit(mutations, entry: entry, epoch: lease.epoch)
            }
            latencies.append(elapsed)
        }
        let total = clock.now - started
        latencies.sort()
        print(
            String(
                format: "One-row commits: %d in %.2f s = %.0f commits/s; latency p50 %.2f ms, p99 %.2f ms",
                commits, seconds(total), Double(commits) / seconds(total),
                seconds(latencies[latencies.count / 2]) * 1000, seconds(latencies[latencies.count * 99 / 100]) * 1000
            )
        )

        // A large commit: one subtree of `rows` leaves, inserted, then replaced (deletes and upserts).
        var big = Node.empty
        for i in 0..<rows {
            big = big.setting(.leaf(.string("value number \(i)")), at: DatabasePath(keys: [Key("item\(i)")]))
        }
        let bigPath = try DatabasePath("/big")
        for label in ["insert", "replace"] {
            let elapsed = try await clock.measure {
                _ = try await db.commit([.replace(bigPath, big)], entry: #"{"big":true}"#, epoch: lease.epoch)
            }
            print(String(format: "Large commit (%@, %d rows): %.2f s = %.0f rows/s", label, rows, seconds(elapsed), Double(rows) / seconds(elapsed)))
        }

        var loadedCount = 0
        let loadTime = try await clock.measure {
            let (database, _) = try await db.loadWithSequence()
            loadedCount = database.root.child(at: bigPath).childCount
        }
        print(String(format: "Load (%d rows): %.2f s = %.0f rows/s", loadedCount, seconds(loadTime), Double(loadedCount) / seconds(loadTime)))
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
