@testable import HearthPostgres
import Testing

/// A node whose heartbeats stop for longer than its leases stay fresh (a stopped or starved process)
/// must not trust its leases again on the next heartbeat alone: other nodes may have taken them while
/// its PostgreSQL session lived on. The cluster suite's `test_pause_owner_past_its_lease` once read a
/// stale value from an owner resumed after SIGSTOP, in the moment before it noticed the new owner.
@Suite struct PostgresLeaseFreshnessTests {
    let start = ContinuousClock.now

    @Test func heartbeatsOnScheduleKeepTheChain() {
        // Heartbeats run every sixth of the lease.
        #expect(!PostgresStorage.heartbeatsBroke(previous: start, finished: start + .milliseconds(500), leaseTime: .seconds(3)))
        #expect(!PostgresStorage.heartbeatsBroke(previous: nil, finished: start, leaseTime: .seconds(3)))
    }

    @Test func aGapAsLongAsTheFreshnessBreaksIt() {
        #expect(PostgresStorage.freshness(.seconds(3)) == .milliseconds(2500))
        #expect(PostgresStorage.freshness(.seconds(1)) == .milliseconds(750))
        #expect(!PostgresStorage.heartbeatsBroke(previous: start, finished: start + .milliseconds(2499), leaseTime: .seconds(3)))
        #expect(PostgresStorage.heartbeatsBroke(previous: start, finished: start + .milliseconds(2500), leaseTime: .seconds(3)))
        #expect(PostgresStorage.heartbeatsBroke(previous: start, finished: start + .seconds(6), leaseTime: .seconds(3)))
    }

    /// Heartbeats that start on time but commit slowly: the others see only the previous one until the
    /// next commits, so they may find the node dead although no two heartbeats started far apart.
    @Test func aHeartbeatThatReturnsLateBreaksTheChainThoughItStartedOnTime() {
        // The previous one started at 0 (and took 0.9 s); this one started at 1.23 s and returned at 2.08 s,
        // past the lease of 2 s: between 2 s and 2.08 s the others saw 0 as the last heartbeat.
        #expect(PostgresStorage.heartbeatsBroke(previous: start, finished: start + .milliseconds(2080), leaseTime: .seconds(2)))
        #expect(!PostgresStorage.heartbeatsBroke(previous: start, finished: start + .milliseconds(1400), leaseTime: .seconds(2)))
    }
}
