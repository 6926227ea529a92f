import Dispatch

/// Runs `work` in a task and hands its result or error to a Firebase-style completion handler on
/// `queue` (the callback queue of ``Database`` or ``Storage``): the bridge every completion variant
/// of an `async` method goes through.
///
/// For example:
/// ```swift
/// deliverResult(of: { try await reference.data(maxSize: 1_000_000) }, on: .main, to: completion)
/// ```
func deliverResult<T: Sendable>(
    of work: @escaping @Sendable () async throws -> T,
    on queue: DispatchQueue,
    to completion: (@Sendable (T?, (any Error)?) -> Void)?
) {
    Task {
        do {
            let result = try await work()
            queue.async { completion?(result, nil) }
        } catch {
            queue.async { completion?(nil, error) }
        }
    }
}
