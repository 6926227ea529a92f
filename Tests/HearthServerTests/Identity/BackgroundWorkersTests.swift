@testable import HearthIdentity
import Testing

/// How many threads hash passwords: never every core unless the operator asks.
struct BackgroundWorkersTests {
    @Test func leavesOneCoreToTheEventLoops() {
        #expect(BackgroundWorkers.threadCount([:], cores: 2) == 1)
        #expect(BackgroundWorkers.threadCount([:], cores: 8) == 7)
        #expect(BackgroundWorkers.threadCount([:], cores: 1) == 1)
    }

    @Test func theEnvironmentChoosesAnotherCount() {
        #expect(BackgroundWorkers.threadCount(["HEARTH_HASHING_THREADS": "2"], cores: 2) == 2)
        #expect(BackgroundWorkers.threadCount(["HEARTH_HASHING_THREADS": "0"], cores: 4) == 3)
        #expect(BackgroundWorkers.threadCount(["HEARTH_HASHING_THREADS": "many"], cores: 4) == 3)
    }

    @Test func runsWorkAndReturnsItsResult() async throws {
        let workers = BackgroundWorkers(threads: 1)
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 { group.addTask { try await workers.run { index * index } } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == (0..<20).map { $0 * $0 })
    }
}
