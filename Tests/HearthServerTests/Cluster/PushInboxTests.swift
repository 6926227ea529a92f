@testable import HearthEngine
@testable import HearthServer
import HearthStorage
import Testing

/// A follower's decisions about pushed entries, without I/O: only the next entry of the log is applied,
/// duplicates are dropped, a gap or an overflow sends the writer to the log, and an expected entry that no
/// push brought is read from the log a round later.
struct PushInboxTests {
    func entry(_ sequence: Int64) -> LogEntry { LogEntry(sequence: sequence, payload: "{\"c\":[]}") }

    @Test func onlyTheNextEntryIsApplied() {
        #expect(PushInbox.decide(11, applied: 10) == .apply)
        #expect(PushInbox.decide(10, applied: 10) == .ignore)
        #expect(PushInbox.decide(3, applied: 10) == .ignore)
        #expect(PushInbox.decide(12, applied: 10) == .catchUp)
        #expect(PushInbox.decide(1, applied: 0) == .apply)
    }

    /// The writer's loop over a take, as `DatabaseInstance.applyPushed` runs it.
    func run(_ inbox: inout PushInbox, applied: Int64) -> (applied: Int64, catchUp: Bool) {
        var applied = applied
        let (entries, overflowed) = inbox.take()
        for entry in entries {
            switch PushInbox.decide(entry.sequence, applied: applied) {
            case .apply: applied = entry.sequence
            case .ignore: continue
            case .catchUp: return (applied, true)
            }
        }
        return (applied, overflowed)
    }

    @Test func entriesFromTwoOwnersAreAppliedInLogOrderOnce() {
        var inbox = PushInbox()
        // The deposed owner's last pushes interleave with the new owner's first ones.
        let first = inbox.receive([entry(13), entry(14)])
        let second = inbox.receive([entry(11), entry(12), entry(13)])
        #expect(first && !second, "the writer is asked once")
        let result = run(&inbox, applied: 10)
        #expect(result.applied == 14)
        #expect(!result.catchUp)
        #expect(inbox.take().entries.isEmpty)
    }

    @Test func aGapStopsAtTheLastContiguousEntryAndReadsTheLog() {
        var inbox = PushInbox()
        _ = inbox.receive([entry(11), entry(12), entry(14), entry(15)])
        let result = run(&inbox, applied: 10)
        #expect(result.applied == 12)
        #expect(result.catchUp)
    }

    @Test func entriesTheLogBroughtFirstAreIgnored() {
        var inbox = PushInbox()
        _ = inbox.receive([entry(11), entry(12)])
        let result = run(&inbox, applied: 12)
        #expect(result.applied == 12)
        #expect(!result.catchUp)
    }

    @Test func theWriterIsAskedOncePerTake() {
        var inbox = PushInbox()
        var asked: [Bool] = []
        asked.append(inbox.receive([entry(1)]))
        asked.append(inbox.receive([entry(2)]))
        asked.append(inbox.receive([]))
        _ = inbox.take()
        asked.append(inbox.receive([]))
        asked.append(inbox.receive([entry(3)]))
        #expect(asked == [true, false, false, false, true])
    }

    @Test func anOverflowDropsTheEntriesAndReadsTheLog() {
        var inbox = PushInbox(limit: (entries: 3, bytes: 1_000_000))
        _ = inbox.receive([entry(11), entry(12)])
        _ = inbox.receive([entry(13), entry(14)])
        let (entries, overflowed) = inbox.take()
        #expect(entries.isEmpty)
        #expect(overflowed)
        // The next take starts afresh.
        _ = inbox.receive([entry(15)])
        let next = inbox.take()
        #expect(next.entries == [entry(15)])
        #expect(!next.overflowed)
    }

    @Test func anOverflowOfBytesCountsToo() {
        var inbox = PushInbox(limit: (entries: 100, bytes: 10))
        _ = inbox.receive([LogEntry(sequence: 1, payload: String(repeating: "x", count: 11))])
        #expect(inbox.take().overflowed)
    }

    @Test func anExpectedEntryIsReadFromTheLogOnlyIfNoPushBringsItWithinARound() {
        var inbox = PushInbox()
        // Pushed already: nothing to wait for, in this round or the next.
        _ = inbox.receive([entry(5)])
        let pushedAlready = inbox.expect(5)
        let readsLogAtOnce = [inbox.overdue(applied: 4), inbox.overdue(applied: 4)]
        #expect(pushedAlready)
        #expect(readsLogAtOnce == [false, false])
        // Not pushed: the first round only notes it, the second finds it still missing.
        let sevenPushed = inbox.expect(7)
        let sevenOverdue = [inbox.overdue(applied: 5), inbox.overdue(applied: 5)]
        #expect(!sevenPushed)
        #expect(sevenOverdue == [false, true])
        // Once applied (the log or a late push brought it), it is no longer overdue.
        _ = inbox.expect(8)
        let eightOverdue = [inbox.overdue(applied: 8), inbox.overdue(applied: 8)]
        #expect(eightOverdue == [false, false])
        // Pushed within the round: not overdue either.
        _ = inbox.expect(9)
        let nineBeforePush = inbox.overdue(applied: 8)
        _ = inbox.receive([entry(9)])
        let nineAfterPush = inbox.overdue(applied: 8)
        #expect(!nineBeforePush && !nineAfterPush)
    }

    /// The writer took a pushed entry that came after a gap, and its read of the log failed: the entry
    /// is neither applied nor waiting, and no push will bring it again, so it is overdue like one never
    /// pushed (else the follower would stay behind until the next commit).
    @Test func aPushedEntryTheWriterCouldNotApplyIsReadFromTheLogARoundLater() {
        var inbox = PushInbox()
        _ = inbox.receive([entry(7)])
        let waiting = [inbox.overdue(applied: 5), inbox.overdue(applied: 5)]
        #expect(waiting == [false, false])
        // Known for a round already: the next round after the writer took it reports it.
        _ = inbox.take()
        let pushed = inbox.expect(7)
        let afterTheFailedRead = inbox.overdue(applied: 5)
        #expect(pushed)
        #expect(afterTheFailedRead)
        let applied = [inbox.overdue(applied: 7), inbox.overdue(applied: 7)]
        #expect(applied == [false, false])
    }
}
