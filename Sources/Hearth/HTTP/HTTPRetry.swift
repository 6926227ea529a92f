/// The SDK's retry policy for HTTP requests: a request that got no answer (a network failure) or a
/// transient one (5xx, 408, 429) is sent again after ``Backoff/httpRetry``'s delay (0.25 s doubling
/// to 8 s) until a time budget is spent, as FirebaseStorage retries. Time and sleeping come from the
/// database's ``HearthClock``.
///
/// For example:
/// ```swift
/// var retry = HTTPRetry(budget: 120, clock: SystemClock())
/// while true {
///     guard let (_, response) = try? await transport.send(request), !HTTPRetry.isTransient(status: response.statusCode) else {
///         try await retry.pause(after: "no answer")  // throws .exhausted once 120 s are spent
///         continue
///     }
///     break
/// }
/// ```
struct HTTPRetry: Sendable {
    /// Why no further attempt follows.
    enum Stop: Error, Equatable {
        /// The budget is spent; the text names the last failure.
        case exhausted(String)
        case cancelled
    }

    let clock: any HearthClock
    /// On `clock`, in ms.
    let deadline: Double
    private var backoff = Backoff.httpRetry

    /// A policy for one operation: `budget` seconds from now.
    init(budget: Double, clock: any HearthClock) {
        self.clock = clock
        deadline = clock.milliseconds() + budget * 1_000
        _ = backoff.nextDelay()  // the first attempt, which is immediate, is made already
    }

    /// Whether an HTTP status is worth another attempt.
    static func isTransient(status: Int) -> Bool { status >= 500 || status == 408 || status == 429 }

    /// Sleeps before the next attempt (never past the deadline); throws ``Stop/exhausted(_:)`` when
    /// the budget is spent and ``Stop/cancelled`` when the task is cancelled.
    mutating func pause(after failure: String) async throws(Stop) {
        let remaining = deadline - clock.milliseconds()
        guard remaining > 0 else { throw .exhausted(failure) }
        let pause = min(backoff.nextDelay(), remaining)
        do {
            try await clock.sleep(milliseconds: pause)
        } catch {
            throw .cancelled
        }
    }

    /// After progress (an accepted upload chunk): the next pause is the shortest again.
    mutating func reset() {
        backoff.reset()
        _ = backoff.nextDelay()
    }
}
