import Synchronization

/// Runs an operation on shared storage, giving up after a deadline: a query stuck on a broken connection
/// (or a connection pool that cannot serve) must not hold its caller — a database's writer, the lease
/// checks — for longer than that. The operation itself goes on in the background, cancelled; whatever it
/// does later is still fenced, and the log tells what happened. The caller never waits for it to answer
/// the cancellation.
///
/// For example:
/// ```swift
/// let entries = try await Deadline.run(.seconds(5)) { try await shared.changes(after: 7, limit: 100) }
/// ```
public enum Deadline {
    public struct Exceeded: Error, CustomStringConvertible {
        public var description: String { "The shared storage did not answer in time" }
    }

    /// - Parameter settled: checked when the limit is reached; true means the operation is past the part
    ///   the limit is for (it got its connection, say), and it is then waited for to the end.
    public static func run<T: Sendable>(
        _ limit: Duration,
        unless settled: @escaping @Sendable () -> Bool = { false },
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let work = Mutex<Task<Void, Never>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let once = Once()
                let task = Task {
                    let result = await Result(catching: { try await operation() })
                    if once.claim() { continuation.resume(with: result) }
                }
                work.withLock { $0 = task }
                let timer = Task {
                    try? await Task.sleep(for: limit)
                    if !Task.isCancelled, !settled(), once.claim() {
                        task.cancel()
                        continuation.resume(throwing: Exceeded())
                    }
                }
                // The timer goes as soon as the work is done (no sleeping task per commit).
                Task {
                    _ = await task.result
                    timer.cancel()
                }
            }
        } onCancel: {
            work.withLock { $0 }?.cancel()
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
