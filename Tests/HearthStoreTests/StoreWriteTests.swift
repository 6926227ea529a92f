import Hearth
import HearthStore
import HearthStoreTesting
import HearthTestSupport
import Testing

/// The store's write helpers against a live server: each dispatches its success action once the
/// server has the change, or a typed failure when the server refuses it.
@MainActor
@Suite struct StoreWriteTests {
    let hi = Message(text: "hi", author: "ada")

    @Test func createObjectWritesUnderANewPushIDAndReturnsIt() async throws {
        try await TestServer.run { server in
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            let messages = try server.client().reference(withPath: "messages")
            let ref = store.store.createObject(hi, at: messages, underNewChildID: true)
            let id = try #require(ref.key)
            #expect(id.count == 20)
            #expect(ref.parent?.key == "messages")
            await store.receive(ObjectCreated(key: id, object: hi)) { $0.written = ["created \(id)"] }
            #expect(try await server.value(at: "messages/\(id)") as? [String: String] == ["text": "hi", "author": "ada"])

            // Without a new child ID the object goes exactly where it is told.
            let fixed = store.store.createObject(hi, at: messages.child("fixed"))
            #expect(fixed.key == "fixed")
            await store.receive(ObjectCreated(key: "fixed", object: hi)) { $0.written.append("created fixed") }
            #expect(try await server.value(at: "messages/fixed") as? [String: String] == ["text": "hi", "author": "ada"])
            await store.finish()
        }
    }

    @Test func updateObjectMergesAndRemoveObjectDeletes() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            let m1 = database.reference(withPath: "messages/m1")
            try await m1.setValue(["text": "hi", "author": "ada", "pinned": true])
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)

            store.store.updateObject(MessageEdit(text: "edited"), at: m1)
            await store.receive(ObjectUpdated(key: "m1", changes: MessageEdit(text: "edited"))) { $0.written = ["updated m1"] }
            let merged = try await server.value(at: "messages/m1") as? [String: Any]
            #expect(merged?["text"] as? String == "edited")
            #expect(merged?["author"] as? String == "ada")
            #expect(merged?["pinned"] as? Bool == true)

            store.store.removeObject(Message.self, at: m1)
            await store.receive(ObjectDeleted<Message>(key: "m1")) { $0.written.append("deleted m1") }
            #expect(try await server.json(at: "messages/m1") == "null")
            await store.finish()
        }
    }

    @Test func writesTheRulesRefuseDispatchTypedFailuresAndChangeNothing() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            try await database.reference(withPath: "messages/m1").setValue(["text": "hi", "author": "ada"])
            try await server.setRules(#"{"rules": {".read": true, "messages": {".write": false}}}"#)
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            let messages = database.reference(withPath: "messages")

            let ref = store.store.createObject(hi, at: messages, underNewChildID: true)
            let id = try #require(ref.key)
            await store.receive(ObjectWriteFailed<Message>.self, where: {
                $0.error.operation == .create && $0.error.key == id && $0.error.underlying.code == .permissionDenied
            }) { state, action in state.writeError = action.error }

            store.store.updateObject(MessageEdit(text: "edited"), at: messages.child("m1"))
            await store.receive(ObjectWriteFailed<MessageEdit>.self, where: {
                $0.error.operation == .update && $0.error.key == "m1" && $0.error.underlying.code == .permissionDenied
            }) { state, action in state.writeError = action.error }

            store.store.removeObject(Message.self, at: messages.child("m1"))
            await store.receive(ObjectWriteFailed<Message>.self, where: {
                $0.error.operation == .remove && $0.error.key == "m1" && $0.error.underlying.code == .permissionDenied
            }) { state, action in state.writeError = action.error }

            #expect(try await server.value(at: "messages") as? [String: [String: String]] == ["m1": ["text": "hi", "author": "ada"]])
            await store.finish()
        }
    }

    @Test func aValueThatIsNotAnObjectCannotBeMerged() async throws {
        try await TestServer.run { server in
            let store = TestStore(initialState: ChatState(), reducer: chatReducer)
            store.store.updateObject("just text", at: try server.client().reference(withPath: "messages/m1"))
            await store.receive(ObjectWriteFailed<String>.self, where: {
                $0.error.operation == .update && $0.error.underlying.code == .invalidData
            })
            await store.finish()
        }
    }
}
