import Synchronization

/// Runs an operation on the shared storage, giving up after a deadline: a query stuck on a broken
/// connection must not hold a database's writer (or the lease checks) for longer than that. The
/// operation itself goes on in the background; whatever it does later is still fenced, and the log
/// tells what happened.
///
/// For example:
/// ```swift
/// let entries = try await Deadline.run(.seconds(5)) { try await shared.changes(after: 7, limit: 100) }
/// ```
enum Deadline {
    struct Exceeded: Error, CustomStringConvertible {
        var description: String { "The shared storage did not answer in time" }
    }

    static func run<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let once = Once()
            let work = Task {
                let result = await Result(catching: { try await operation() })
                if once.claim() { continuation.resume(with: result) }
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                if !Task.isCancelled, once.claim() {
                    work.cancel()
                    continuation.resume(throwing: Exceeded())
                }
            }
            // The timer goes as soon as the work is done (no sleeping task per commit).
            Task {
                _ = await work.result
                timer.cancel()
            }
        }
    }
}

/// True for the first caller only: the continuation is resumed exactly once.
private final class Once: Sendable {
    private let done = Mutex(false)

    func claim() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
