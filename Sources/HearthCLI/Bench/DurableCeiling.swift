import Foundation
import GRDB
import GRDBSQLite
import NIOCore
import ServiceLifecycle
import Synchronization

/// The least a durable write can cost here: each body stored as one row of one SQLite database, set
/// up as Hearth's (WAL, `synchronous=FULL`) and group-committed as Hearth's writer does (the bodies
/// that arrived while a transaction committed go into the next one), the answer waiting for its
/// commit. No path, tree, rules, JSON model or fan-out: with `hearth bench ceiling --durable`, the
/// framework's ceiling for a durable REST write (`scripts/bench/ceiling.sh`, docs/benchmarks.md).
///
/// ```swift
/// let store = try DurableCeiling(directory: URL(filePath: "/tmp/ceiling"))
/// // run `store` as a service beside the HTTP server, then in a handler:
/// try await store.store(body)  // returns once the body's transaction is on disk
/// ```
final class DurableCeiling: Service, Sendable {
    private struct Waiting {
        let body: String
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Queue {
        var waiting: [Waiting] = []
        var closed = false
    }

    private let database: DatabaseQueue
    private let queue = Mutex(Queue())
    /// One wake-up stands for any number of stores queued since the writer last looked.
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        database = try DatabaseQueue(path: directory.appending(path: "ceiling.sqlite").path, configuration: configuration)
        try database.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        }
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Stores `body` durably: returns once the transaction holding it is committed and synced.
    func store(_ body: ByteBuffer) async throws {
        let text = String(buffer: body)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let accepted = queue.withLock { queue in
                guard !queue.closed else { return false }
                queue.waiting.append(Waiting(body: text, continuation: continuation))
                return true
            }
            guard accepted else { return continuation.resume(throwing: CancellationError()) }
            wake.yield()
        }
    }

    /// The writer: commits what is queued, one transaction at a time, until the server shuts down.
    func run() async throws {
        for await _ in wakeups.cancelOnGracefulShutdown() {
            while case let batch = take(), !batch.isEmpty {
                do {
                    try await database.write { db in
                        // SQLite's C API on a cached statement, as Hearth's storage does (GRDB's
                        // `execute(arguments:)` costs more than SQLite's own work for one row).
                        let insert = try db.cachedStatement(sql: "INSERT INTO items (body) VALUES (?)").sqliteStatement
                        for waiting in batch {
                            var body = waiting.body
                            let code = body.withUTF8 { bytes in
                                sqlite3_bind_text(insert, 1, bytes.baseAddress, Int32(bytes.count), nil)
                                defer { sqlite3_reset(insert) }
                                return sqlite3_step(insert)
                            }
                            guard code == SQLITE_DONE else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
                        }
                    }
                    for waiting in batch { waiting.continuation.resume() }
                } catch {
                    for waiting in batch { waiting.continuation.resume(throwing: error) }
                }
            }
        }
        let left = queue.withLock { queue in
            queue.closed = true
            defer { queue.waiting = [] }
            return queue.waiting
        }
        for waiting in left { waiting.continuation.resume(throwing: CancellationError()) }
    }

    private func take() -> [Waiting] {
        queue.withLock { queue in
            defer { queue.waiting = [] }
            return queue.waiting
        }
    }
}
