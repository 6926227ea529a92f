/// Delays between attempts, growing exponentially with optional jitter: the SDK's one backoff, for
/// reconnecting (the default, as the official SDKs do: 1 s, ×1.3, at most 30 s, jitter factor 0.7,
/// reset after a connection that stayed up long enough) and for retrying HTTP requests
/// (``httpRetry``: 0.25 s doubling to 8 s, no jitter, as FirebaseStorage does). The first attempt is
/// immediate.
///
/// For example:
/// ```swift
/// var backoff = Backoff(random: { 1 })
/// #expect(backoff.nextDelay() == 0)       // the first attempt is immediate
/// #expect(backoff.nextDelay() == 1_000)
/// ```
struct Backoff: Sendable {
    var minimumDelay: Double = 1_000
    var maximumDelay: Double = 30_000
    var multiplier: Double = 1.3
    /// The share of each delay that is random: delay = (1 − jitter)·d + jitter·d·random.
    var jitter: Double = 0.7
    /// How long a connection must last before the delay starts over.
    var resetAfter: Double = 30_000
    /// A source of numbers in 0…1 (injected by tests).
    var random: @Sendable () -> Double = { Double.random(in: 0...1) }

    private var current: Double = 0
    private var attempts = 0

    /// The reconnect backoff.
    init(random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.random = random
    }

    /// The HTTP retry backoff: 250 ms, 500 ms, 1 s … 8 s.
    static var httpRetry: Backoff {
        var backoff = Backoff()
        backoff.minimumDelay = 250
        backoff.maximumDelay = 8_000
        backoff.multiplier = 2
        backoff.jitter = 0
        return backoff
    }

    /// The delay in milliseconds before the next attempt.
    mutating func nextDelay() -> Double {
        defer { attempts += 1 }
        if attempts == 0 { return 0 }
        current = current == 0 ? minimumDelay : min(current * multiplier, maximumDelay)
        return (1 - jitter) * current + jitter * current * random()
    }

    /// A connection ended after `duration` ms: a long one starts the sequence over.
    mutating func connectionEnded(after duration: Double) {
        if duration >= resetAfter { reset() }
    }

    mutating func reset() {
        current = 0
        attempts = 0
    }
}
