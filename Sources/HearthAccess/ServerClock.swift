public import Foundation
import HearthCore

/// The server's sense of time: a monotonic clock to sleep on and measure with, and the wall time that
/// tokens' `exp`, rules' `now`, server timestamps and the WebSocket handshake's `ts` are read against.
///
/// Everything in the server that waits — idle WebSocket timeouts, event-stream keep-alives, token
/// expiry — sleeps on this clock, never on `Task.sleep` or an event loop's timer. `hearth serve` uses
/// ``system``; tests pass a clock they drive (a `TestClock` from swift-clocks) and advance time instead
/// of sleeping and hoping a race goes their way. The wall time of such a clock moves exactly with it,
/// so a token minted at ``wallDate`` with a 60-second lifetime expires when the test advances 60 s.
///
/// For example:
/// ```swift
/// let clock = TestClock()
/// var configuration = ServerConfiguration()   // HearthServer's settings
/// configuration.clock = ServerClock(clock, wallMillisecondsAtStart: 1_700_000_000_000)
/// // … connect, then:
/// await clock.advance(by: .seconds(121))   // past the idle timeout: the silent connection is closed
/// ```
public struct ServerClock: Sendable {
    private let elapsedNow: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void
    private let wallNow: @Sendable () -> Double

    /// A clock from any `Clock` measured in `Duration`, with a wall time of its own (milliseconds since 1970).
    public init<C: Swift.Clock>(_ clock: C, wallMilliseconds: @escaping @Sendable () -> Double) where C.Duration == Duration {
        let origin = clock.now
        elapsedNow = { origin.duration(to: clock.now) }
        sleeper = { deadline in try await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil) }
        wallNow = wallMilliseconds
    }

    /// A clock whose wall time starts at `wallMillisecondsAtStart` and advances exactly as `clock` does:
    /// for tests, with a clock they drive.
    public init<C: Swift.Clock>(_ clock: C, wallMillisecondsAtStart: Double) where C.Duration == Duration {
        let origin = clock.now
        // Whole milliseconds, as the system's wall clock gives them (server timestamps are integers).
        self.init(clock) { (wallMillisecondsAtStart + ServerClock.milliseconds(origin.duration(to: clock.now))).rounded(.down) }
    }

    /// The real time: a `ContinuousClock` and the system's wall clock.
    public static let system = ServerClock(ContinuousClock(), wallMilliseconds: WallClock.milliseconds)

    /// Monotonic time since the clock was made.
    public var elapsed: Duration { elapsedNow() }

    /// ``elapsed`` in nanoseconds, for timestamps kept in atomics.
    public var elapsedNanoseconds: Int64 {
        let components = elapsedNow().components
        return components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }

    /// Wall time in milliseconds since 1970 (the unit of server timestamps and rules' `now`).
    public var wallMilliseconds: Double { wallNow() }

    /// Wall time as a `Date` (the unit tokens are checked with).
    public var wallDate: Date { Date(timeIntervalSince1970: wallNow() / 1000) }

    /// Sleeps until ``elapsed`` reaches `deadline`; returns at once if it already has. Throws
    /// `CancellationError` when the task is cancelled.
    ///
    /// Loops that repeat on an interval should advance their own deadline (`deadline += interval`)
    /// rather than sleep `for:` an interval: then a late wake-up never shifts the schedule.
    public func sleep(untilElapsed deadline: Duration) async throws {
        try await sleeper(deadline)
    }

    /// Sleeps for `duration` of this clock's time.
    public func sleep(for duration: Duration) async throws {
        try await sleeper(elapsed + duration)
    }

    /// Wall-clock milliseconds from now until `secondsSince1970` (a token's `exp`), never negative.
    package func duration(untilWallSeconds secondsSince1970: Double) -> Duration {
        .milliseconds(max(0, Int64((secondsSince1970 * 1000 - wallNow()).rounded(.up))))
    }

    /// The next deadline of a schedule that repeats every `interval`: one interval after `previous`, or,
    /// if the schedule fell behind (a late wake-up, or a test that advanced the clock by many intervals
    /// at once), the latest one due by `now`, which is then kept at once: the ticks missed before it are
    /// not made up for, but the one due now is not skipped either (skipping it left a test whose clock
    /// stops on a tick waiting for a sweep that never came).
    ///
    /// ```swift
    /// ServerClock.next(after: .seconds(180), every: .seconds(30), now: .seconds(300))  // 300 s
    /// ```
    package static func next(after previous: Duration, every interval: Duration, now: Duration) -> Duration {
        var deadline = previous + interval
        if deadline < now {
            let missed = Int64(((now - deadline) / interval).rounded(.down))
            deadline += interval * missed
        }
        return deadline
    }

    package static func milliseconds(_ duration: Duration) -> Double {
        let components = duration.components
        return Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
}
