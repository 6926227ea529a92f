@testable import Hearth
import HearthStore
import Synchronization
import HearthTestSupport
import Testing

/// What a store leaves behind when it goes away: nothing listening, no stream left open.
@MainActor
@Suite struct StoreLifetimeTests {
    @Test func aReleasedStoreEndsItsStateStreams() async {
        var store: Store<Counter>? = Store(initialState: Counter(), reducer: counterReducer)
        var states = store!.states.makeAsyncIterator()
        #expect(await states.next()?.count == 0)
        store = nil
        #expect(await states.next() == nil)
    }

    @Test func aReleasedStoreRemovesItsListeners() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            func observerCount() -> Int { database.repo.state.withLock { $0.observers.count } }
            let before = observerCount()
            var store: Store<ChatState>? = Store(initialState: ChatState(), reducer: chatReducer)
            #expect(store!.subscribe(Message.self, to: database.reference(withPath: "messages"), isSubscribed: \.messages.isSubscribed))
            #expect(observerCount() == before + 3)
            store = nil
            #expect(observerCount() == before)
        }
    }
}
