import Foundation

/// Where the SDK gets the time and waits: injectable so tests control reconnect and keep-alive timing.
///
/// For example:
/// ```swift
/// let clock: any HearthClock = SystemClock()
/// let now = clock.milliseconds()
/// try await clock.sleep(milliseconds: 10)
/// ```
public protocol HearthClock: Sendable {
    /// Milliseconds since 1970.
    func milliseconds() -> Double
    /// Waits; throws `CancellationError` when the task is cancelled.
    func sleep(milliseconds: Double) async throws
}

/// The wall clock and `Task.sleep`.
public struct SystemClock: HearthClock {
    public init() {}

    public func milliseconds() -> Double {
        Date().timeIntervalSince1970 * 1_000
    }

    public func sleep(milliseconds: Double) async throws {
        try await Task.sleep(nanoseconds: UInt64(max(0, milliseconds) * 1_000_000))
    }
}
