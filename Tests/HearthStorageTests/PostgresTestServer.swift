import Foundation
import HearthPostgres
import Testing

/// The PostgreSQL server the PostgreSQL cases run against: `HEARTH_TEST_POSTGRES_URL`
/// (start one with `scripts/postgres/throwaway.sh start DIR`). Each test gets a database of its own.
///
/// Without the variable the cases are cancelled (reported as skipped) on a developer's machine, and
/// fail in CI (when `CI` is set): CI must never skip them silently.
enum PostgresTestServer {
    static let url = ProcessInfo.processInfo.environment["HEARTH_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } ?? false
    /// Set by CI for its run of the whole suite: the PostgreSQL tests run right after it, in a step of
    /// their own (`.ci/run`), where they do not compete with 500 other tests on 2 cores.
    static let runLater = ProcessInfo.processInfo.environment["HEARTH_TEST_POSTGRES_LATER"].map { !$0.isEmpty } ?? false
    /// For `.enabled(if:)`: run when there is a server, or in CI (where a missing server fails), unless
    /// CI runs them in their own step.
    static let shouldRun = (url != nil || isCI) && !runLater
    /// How long a test's operation waits for a pooled connection: the whole suite runs at once on a
    /// small machine, where a new connection can take seconds; only a broken server should fail a test.
    static let connectionWait: Duration = .seconds(30)
    static let missingMessage = runLater
        ? "CI runs the PostgreSQL tests in a step of their own (HEARTH_TEST_POSTGRES_LATER is set)"
        : "HEARTH_TEST_POSTGRES_URL is not set: start a server with `scripts/postgres/throwaway.sh start /tmp/pg-test` "
            + "and export the URL it prints as HEARTH_TEST_POSTGRES_URL (docs/testing.md)"

    /// The server's URL; without one, an error that fails the test (the PostgreSQL tests run without
    /// a server only in CI, see ``shouldRun``).
    static func requireURL() throws -> String {
        guard let url else { throw MissingServer() }
        return url
    }

    struct MissingServer: Error, CustomStringConvertible {
        var description: String { PostgresTestServer.missingMessage }
    }

    /// A new, empty database on the server; returns its URL. It is dropped by ``drop(_:)``, or with the
    /// throwaway server.
    static func freshDatabase() async throws -> (url: String, name: String) {
        let server = try requireURL()
        let name = "hearth_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        return (try await PostgresStorage.createDatabase(named: String(name), onServerOf: server), String(name))
    }

    static func drop(_ name: String) async {
        guard let url else { return }
        try? await PostgresStorage.dropDatabase(named: name, onServerOf: url)
    }
}

/// The first element of `stream`, or nil after `limit`: a test fails with a message instead of hanging.
func firstElement<Element: Sendable>(of stream: AsyncStream<Element>, within limit: Duration = .seconds(30)) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            for await element in stream { return element }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}
