@testable import HearthCluster
@testable import HearthServer
import HearthStorage
import NIOCore
import Testing

/// The owner's side of the commit push: every subscriber gets every committed entry once, batched while
/// it is busy; one that cannot keep up is dropped instead of holding memory.
struct CommitFeedTests {
    func decode(_ buffer: ByteBuffer?) throws -> [PushFrame] {
        var decoder = PushFrameDecoder()
        return try decoder.feed(try #require(buffer))
    }

    @Test func everySubscriberGetsEveryEntryBatched() throws {
        let feed = CommitFeed()
        let first = feed.subscribe()
        let second = feed.subscribe()
        feed.publish(namespace: "demo", LogEntry(sequence: 1, payload: "a"))
        feed.publish(namespace: "other", LogEntry(sequence: 9, payload: "b"))
        let expected: [PushFrame] = [
            .entry(namespace: "demo", LogEntry(sequence: 1, payload: "a")),
            .entry(namespace: "other", LogEntry(sequence: 9, payload: "b")),
        ]
        #expect(try decode(first.take()) == expected)
        #expect(try decode(second.take()) == expected)
        #expect(first.take()?.readableBytes == 0)
    }

    @Test func aSubscriberThatCannotKeepUpIsDropped() throws {
        let feed = CommitFeed()
        let slow = feed.subscribe(bufferLimit: 100)
        let fast = feed.subscribe()
        for sequence in 1...10 {
            feed.publish(namespace: "demo", LogEntry(sequence: Int64(sequence), payload: "0123456789"))
        }
        #expect(slow.take() == nil)
        #expect(feed.subscriberCount == 1)
        #expect(try decode(fast.take()).count == 10)
    }

    @Test func nothingIsPushedWhenTurnedOffOrTooLarge() throws {
        let off = CommitFeed(enabled: false)
        let subscription = off.subscribe()
        off.publish(namespace: "demo", LogEntry(sequence: 1, payload: "a"))
        #expect(subscription.take()?.readableBytes == 0)
        let feed = CommitFeed()
        let big = feed.subscribe()
        feed.publish(namespace: "demo", LogEntry(sequence: 1, payload: String(repeating: "x", count: CommitFeed.largestPushedEntry + 1)))
        #expect(big.take()?.readableBytes == 0)
    }

    @Test func aRemovedSubscriptionEndsItsStream() async {
        let feed = CommitFeed()
        let subscription = feed.subscribe()
        feed.remove(subscription)
        #expect(subscription.take() == nil)
        var wakeups = 0
        for await _ in subscription.wakeups { wakeups += 1 }
        #expect(wakeups <= 1)
        #expect(feed.subscriberCount == 0)
    }
}
