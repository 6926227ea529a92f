import Hearth
import HearthStore
import HearthStoreTesting
import HearthTestSupport
import Testing

/// Subscriptions against a live server: a second client changes the data, and the store under test
/// must dispatch exactly the actions those changes imply, in order.
@MainActor
@Suite struct StoreSubscriptionTests {
    let hi = Message(text: "hi", author: "ada")

    @Test func remoteAddChangeAndRemoveArriveAsTypedActionsInOrder() async throws {
        try await TestServer.run { server in
            let other = try server.client()
            let hi = Message(text: "hi", author: "ada")
            try await other.reference(withPath: "messages/m1").setValue(Database.Encoder().encode(hi))

            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            let messages = try server.client().reference(withPath: "messages")
            #expect(store.store.subscribe(Message.self, to: messages, isSubscribed: \.messages.isSubscribed))
            await store.receive(ObjectSubscribed<Message>(isSubscribed: true)) { $0.messages.isSubscribed = true }
            await store.receive(ObjectAdded(key: "m1", object: hi)) { $0.messages.objects["m1"] = hi }

            // Three changes back to back: the actions must follow in the same order.
            let hello = Message(text: "hello", author: "grace")
            try await other.reference(withPath: "messages/m2").setValue(Database.Encoder().encode(hello))
            try await other.reference(withPath: "messages/m1/text").setValue("hi there")
            try await other.reference(withPath: "messages/m2").removeValue()
            await store.receive(ObjectAdded(key: "m2", object: hello)) { $0.messages.objects["m2"] = hello }
            let edited = Message(text: "hi there", author: "ada")
            await store.receive(ObjectChanged(key: "m1", object: edited)) { $0.messages.objects["m1"] = edited }
            await store.receive(ObjectRemoved(key: "m2", object: hello)) { $0.messages.objects["m2"] = nil }

            store.store.unsubscribe(\.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: false)) { $0.messages.isSubscribed = false }
            await store.finish()
        }
    }

    @Test func dataThatDoesNotDecodeIsReportedWithItsPathAndTheDecodeError() async throws {
        try await TestServer.run { server in
            let other = try server.client()
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.subscribe(Message.self, to: try server.client().reference(withPath: "messages"), isSubscribed: \.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: true)) { $0.messages.isSubscribed = true }

            try await other.reference(withPath: "messages/bad").setValue(["text": "no author"])
            let missingAuthor = SnapshotDecodingError(.invalidData, path: "/messages/bad", reason: "missing key 'author' at the top level")
            await store.receive(ObjectErrored<Message>(error: missingAuthor)) { $0.messages.failures["bad"] = missingAuthor }

            try await other.reference(withPath: "messages/bad/author").setValue(42)
            let wrongType = SnapshotDecodingError(.invalidData, path: "/messages/bad", reason: "expected String at author")
            await store.receive(ObjectErrored<Message>(error: wrongType)) { $0.messages.failures["bad"] = wrongType }

            // Repaired data is an ordinary change, and the failure goes.
            try await other.reference(withPath: "messages/bad/author").setValue("ada")
            let repaired = Message(text: "no author", author: "ada")
            await store.receive(ObjectChanged(key: "bad", object: repaired)) {
                $0.messages.objects["bad"] = repaired
                $0.messages.failures["bad"] = nil
            }

            // A leaf where an object belongs.
            try await other.reference(withPath: "messages/leaf").setValue(7)
            await store.receive(ObjectErrored<Message>.self, where: { $0.path == "/messages/leaf" && $0.error.code == .invalidData }) { state, action in
                state.messages.failures["leaf"] = action.error
            }
            store.store.unsubscribe(\.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: false)) { $0.messages.isSubscribed = false }
            await store.finish()
        }
    }

    @Test func theSubscribingFlagPreventsASecondSubscription() async throws {
        try await TestServer.run { server in
            let other = try server.client()
            let messages = try server.client().reference(withPath: "messages")

            // A flag already set in the state: nothing subscribes, nothing is dispatched.
            let flagged = TestStore(initialState: ChatState(messages: SubscribedObjects(isSubscribed: true)), reducer: chatReducer)
            #expect(!flagged.store.subscribe(Message.self, to: messages, isSubscribed: \.messages.isSubscribed))
            await flagged.finish()

            // Data there before subscribing: its ObjectAdded shows the listener is live.
            try await other.reference(withPath: "messages/m1").setValue(Database.Encoder().encode(hi))
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            #expect(store.store.subscribe(Message.self, to: messages, isSubscribed: \.messages.isSubscribed))
            await store.receive(ObjectSubscribed<Message>(isSubscribed: true)) { $0.messages.isSubscribed = true }
            await store.receive(ObjectAdded(key: "m1", object: hi)) { $0.messages.objects["m1"] = hi }
            #expect(!store.store.subscribe(Message.self, to: messages, isSubscribed: \.messages.isSubscribed))

            // One listener: one action per change. A second listener would dispatch each twice, and
            // the duplicate change would arrive before the addition below.
            try await other.reference(withPath: "messages/m1/text").setValue("hi again")
            try await other.reference(withPath: "messages/m2").setValue(Database.Encoder().encode(hi))
            let again = Message(text: "hi again", author: "ada")
            await store.receive(ObjectChanged(key: "m1", object: again)) { $0.messages.objects["m1"] = again }
            await store.receive(ObjectAdded(key: "m2", object: hi)) { $0.messages.objects["m2"] = hi }

            store.store.unsubscribe(\.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: false)) { $0.messages.isSubscribed = false }
            await store.finish()
        }
    }

    @Test func unsubscribingStopsTheListener() async throws {
        try await TestServer.run { server in
            let other = try server.client()
            let database = try server.client()
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.subscribe(Message.self, to: database.reference(withPath: "messages"), isSubscribed: \.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: true)) { $0.messages.isSubscribed = true }
            #expect(store.store.unsubscribe(\.messages.isSubscribed))
            await store.receive(ObjectSubscribed<Message>(isSubscribed: false)) { $0.messages.isSubscribed = false }
            #expect(!store.store.unsubscribe(\.messages.isSubscribed))

            // A write to the old query, then one to a new subscription: the server sends changes in
            // order and the store dispatches all subscriptions' events in order, so an action for
            // the first write would come before the second's.
            try await other.reference(withPath: "messages/m1").setValue(Database.Encoder().encode(hi))
            store.store.subscribe(Alert.self, to: database.reference(withPath: "alerts"), isSubscribed: \.alerts.isSubscribed)
            await store.receive(ObjectSubscribed<Alert>(isSubscribed: true)) { $0.alerts.isSubscribed = true }
            try await other.reference(withPath: "alerts/a1").setValue(Database.Encoder().encode(Alert(level: 3)))
            await store.receive(ObjectAdded(key: "a1", object: Alert(level: 3))) { $0.alerts.objects["a1"] = Alert(level: 3) }

            // Subscribing again starts over and delivers what is there now.
            store.store.subscribe(Message.self, to: database.reference(withPath: "messages"), isSubscribed: \.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: true)) { $0.messages.isSubscribed = true }
            await store.receive(ObjectAdded(key: "m1", object: hi)) { $0.messages.objects["m1"] = hi }
            store.store.unsubscribe(\.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: false)) { $0.messages.isSubscribed = false }
            store.store.unsubscribe(\.alerts.isSubscribed)
            await store.receive(ObjectSubscribed<Alert>(isSubscribed: false)) { $0.alerts.isSubscribed = false }
            await store.finish()
        }
    }

    @Test func aListenTheRulesRefuseEndsTheSubscriptionWithTheError() async throws {
        try await TestServer.run { server in
            try await server.setRules(#"{"rules": {"messages": {".read": false, ".write": true}}}"#)
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.subscribe(Message.self, to: try server.client().reference(withPath: "messages"), isSubscribed: \.messages.isSubscribed)
            await store.receive(ObjectSubscribed<Message>(isSubscribed: true)) { $0.messages.isSubscribed = true }
            await store.receive(ObjectSubscribed<Message>.self, where: { !$0.isSubscribed && $0.error?.code == .permissionDenied }) { state, action in
                state.messages.isSubscribed = false
                state.messages.error = action.error
            }
            await store.finish()
        }
    }
}
