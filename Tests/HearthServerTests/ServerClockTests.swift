import HearthAccess
import Testing

/// The schedule of the server's periodic work (the idle reaper's sweeps, event streams' keep-alives).
@Suite struct ServerClockTests {
    @Test(arguments: [
        (150, 150, 180),  // on schedule: one interval later
        (180, 210, 210),  // woken right at the next tick
        (150, 185, 180),  // a late wake-up: the tick due is kept, at once
        (180, 300, 300),  // the clock moved four intervals at once, onto a tick: that tick is kept
        (180, 310, 300),  // … between ticks: the latest one due, the earlier ones are not made up for
    ])
    func aScheduleThatFellBehindKeepsTheTickDueAndSkipsTheOnesBefore(_ previous: Int, _ now: Int, _ expected: Int) {
        #expect(ServerClock.next(after: .seconds(previous), every: .seconds(30), now: .seconds(now)) == .seconds(expected))
    }
}
