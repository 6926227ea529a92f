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
        #expect(!PostgresStorage.heartbeatsBroke(previous: start, next: start + .milliseconds(500), leaseTime: .seconds(3)))
        #expect(!PostgresStorage.heartbeatsBroke(previous: nil, next: start, leaseTime: .seconds(3)))
    }

    @Test func aGapAsLongAsTheFreshnessBreaksIt() {
        #expect(PostgresStorage.freshness(.seconds(3)) == .milliseconds(2500))
        #expect(PostgresStorage.freshness(.seconds(1)) == .milliseconds(750))
        #expect(!PostgresStorage.heartbeatsBroke(previous: start, next: start + .milliseconds(2499), leaseTime: .seconds(3)))
        #expect(PostgresStorage.heartbeatsBroke(previous: start, next: start + .milliseconds(2500), leaseTime: .seconds(3)))
        #expect(PostgresStorage.heartbeatsBroke(previous: start, next: start + .seconds(6), leaseTime: .seconds(3)))
    }
}
