import Hearth
import HearthStore
@testable import HearthStoreTesting
import HearthTestSupport
import Testing

/// The TestStore must fail a test for everything it was not told: each case here expects the
/// exact issue it records.
@MainActor
@Suite struct TestStoreTests {
    /// Runs `body`, which must record issues, each containing one of `texts`.
    private func expectIssue(containing texts: [String], _ body: () async -> Void) async {
        await withKnownIssue {
            await body()
        } matching: { issue in
            issue.comments.contains { comment in texts.contains { comment.rawValue.contains($0) } }
        }
    }

    @Test func anUnassertedStateChangeFails() async {
        let store = TestStore(initialState: Counter(), reducer: counterReducer)
        await expectIssue(containing: ["is not the expected state"]) {
            store.send(Increment())
        }
        await expectIssue(containing: ["is not the expected state"]) {
            store.send(Increment()) { $0.count = 3 }
        }
        await store.finish()
    }

    @Test func theStateDiffShowsWhatWasExpectedAndWhatHappened() {
        let diff = TestStore<Counter>.diff(Counter(count: 3), Counter(count: 2))
        #expect(diff.split(separator: "\n").filter { $0.hasPrefix("−") || $0.hasPrefix("+") } == ["−   - count: 3", "+   - count: 2"])
    }

    @Test func aDifferentActionThanExpectedFails() async {
        let store = TestStore(initialState: Counter(), reducer: counterReducer, effects: counterEffects)
        store.send(IncrementLater())
        await expectIssue(containing: ["Expected to receive Report(count: 1), received Increment()"]) {
            await store.receive(Report(count: 1))
        }
        await store.receive(Report(count: 1)) { $0.reported = [1] }
        await store.finish()
    }

    @Test func actionsLeftUnassertedFailOnFinishAndOnTheNextSend() async {
        let store = TestStore(initialState: Counter(), reducer: counterReducer, effects: counterEffects)
        store.send(IncrementLater())
        await store.receive(Increment()) { $0.count = 1 }
        await expectIssue(containing: ["1 received action(s) not asserted: Report(count: 1)"]) {
            await store.finish()
        }

        // The effect dispatches Report in the same turn as Increment: it is in when Increment is.
        let again = TestStore(initialState: Counter(), reducer: counterReducer, effects: counterEffects)
        again.send(IncrementLater())
        await again.receive(Increment()) { $0.count = 1 }
        await expectIssue(containing: ["Must assert 1 received action(s) before sending Increment(): Report(count: 1)", "is not the expected state"]) {
            again.send(Increment()) { $0.count = 2 }
        }
        await again.finish()
    }

    @Test func anActionThatNeverComesTimesOut() async {
        let store = TestStore(initialState: Counter(), reducer: counterReducer)
        await expectIssue(containing: ["Timed out after"]) {
            await store.receive(Increment(), timeout: .milliseconds(50))
        }
        await store.finish()
    }

    @Test func anEffectStillRunningFailsAndIsCancelled() async {
        let store = TestStore(initialState: Counter(), reducer: counterReducer, effects: counterEffects)
        store.send(Wait())
        await expectIssue(containing: ["1 effect(s) still running"]) {
            await store.finish(timeout: .milliseconds(50))
        }
        #expect(store.store.runningEffectCount == 0)
    }

    @Test func aSubscriptionStillListeningFailsAndIsEnded() async throws {
        try await TestServer.run { server in
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.subscribe(Message.self, to: try server.client().reference(withPath: "messages"), isSubscribed: \.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: true)) { $0.messages.isSubscribed = true }
            await expectIssue(containing: ["1 subscription(s) still listening"]) {
                await store.finish()
            }
            #expect(!store.store.state.messages.isSubscribed)
        }
    }
}
