import HearthStore
import HearthStoreTesting
import Observation
import Synchronization
import Testing

/// The store itself, without a server: reducers, effects, and the two ways to follow the state.
@MainActor
@Suite struct StoreTests {
    @Test func dispatchReducesAtOnceAndRunReturnsTheEffectsTask() async {
        let store = Store(initialState: Counter(), reducer: counterReducer)
        store.dispatch(Increment())
        #expect(store.state.count == 1)
        await store.run(Effect { store in store.dispatch(Report(count: store.state.count)) }).value
        #expect(store.state.reported == [1])
        #expect(store.runningEffectCount == 0)
    }

    @Test func anActionsEffectDispatchesWithTheCurrentState() async {
        let store = TestStore(initialState: Counter(), reducer: counterReducer, effects: counterEffects)
        store.send(Increment()) { $0.count = 1 }
        store.send(IncrementLater())
        await store.receive(Increment()) { $0.count = 2 }
        await store.receive(Report(count: 2)) { $0.reported = [2] }
        await store.finish()
    }

    @Test func statesStartWithTheCurrentStateAndKeepTheNewest() async {
        let store = Store(initialState: Counter(), reducer: counterReducer)
        var states = store.states.makeAsyncIterator()
        #expect(await states.next()?.count == 0)
        store.dispatch(Increment())
        #expect(await states.next()?.count == 1)
        // A slow reader skips to the latest state (bufferingNewest(1)).
        for _ in 0..<3 { store.dispatch(Increment()) }
        #expect(await states.next()?.count == 4)
    }

    @Test func observationTrackingSeesStateChanges() {
        let store = Store(initialState: Counter(), reducer: counterReducer)
        let changes = Mutex(0)
        withObservationTracking {
            _ = store.state.count
        } onChange: {
            changes.withLock { $0 += 1 }
        }
        store.dispatch(Increment())
        #expect(changes.withLock { $0 } == 1)
    }

    @Test func scopedReducersChangeOnlyTheirPart() {
        struct Pair: Equatable, Sendable {
            var left = Counter()
            var right = Counter()
        }
        let reducer = Reducer<Pair>.combine(.scope(\.left, counterReducer), .scope(\.right, counterReducer), .scope(\.right, counterReducer))
        var pair = Pair()
        reducer.reduce(&pair, Increment())
        #expect(pair.left.count == 1)
        #expect(pair.right.count == 2)
    }
}
