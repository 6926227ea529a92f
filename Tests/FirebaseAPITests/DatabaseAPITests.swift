// FirebaseDatabase's Swift API, used the way Firebase declares it, against `import Hearth` alone.
//
// The functions below are never called: they only have to type-check. Each use of an API that
// docs/compatibility.md lists as `same` follows a `// API: <ID>` line naming its row;
// scripts/check-api-inventory.py checks that every `same` row has one. Closures capture no mutable
// state (Hearth's callbacks are `@Sendable`).

import Foundation
import Hearth
import Testing

/// A model as Firebase's Codable samples write one.
struct APITestMessage: Codable {
    var text: String
    var likes: Int
    // API: ServerTimestamp
    @ServerTimestamp var sentAt: Date?
}

/// Synchronous code: every completion-block form, the query builders, the properties.
func databaseAPIs(ref: DatabaseReference, query: DatabaseQuery, snapshot: DataSnapshot, data: MutableData) throws {
    // API: Database.database()
    // API: Database
    var database: Database = Database.database()
    // API: Database.database(url:)
    database = Database.database(url: "http://127.0.0.1:9000?ns=demo")
    // API: Database.isPersistenceEnabled
    database.isPersistenceEnabled = true
    // API: Database.persistenceCacheSizeBytes
    database.persistenceCacheSizeBytes = 10 * 1024 * 1024
    // API: Database.callbackQueue
    database.callbackQueue = DispatchQueue.main
    let _: Bool = database.isPersistenceEnabled
    let _: UInt = database.persistenceCacheSizeBytes
    let _: DispatchQueue = database.callbackQueue
    // API: Database.useEmulator(withHost:port:)
    database.useEmulator(withHost: "127.0.0.1", port: 9000)
    // API: Database.reference()
    var reference: DatabaseReference = database.reference()
    // API: Database.reference(withPath:)
    reference = database.reference(withPath: "messages")
    // API: Database.reference(fromURL:)
    reference = database.reference(fromURL: "http://127.0.0.1:9000/messages?ns=demo")
    // API: Database.purgeOutstandingWrites()
    database.purgeOutstandingWrites()
    // API: Database.goOffline()
    database.goOffline()
    // API: Database.goOnline()
    database.goOnline()
    // API: Database.setLoggingEnabled(_:)
    Database.setLoggingEnabled(true)
    // API: Database.sdkVersion()
    let _: String = Database.sdkVersion()

    // Observing a query.
    // API: DataEventType
    let eventType: DataEventType = .value
    // API: DatabaseHandle
    var handle: DatabaseHandle = 0
    // API: DatabaseQuery
    var q: DatabaseQuery = query
    // API: DatabaseQuery.observe(_:with:)
    handle = q.observe(eventType) { snapshot in
        let _: DataSnapshot = snapshot
    }
    // API: DatabaseQuery.observe(_:andPreviousSiblingKeyWith:)
    handle = q.observe(.childAdded, andPreviousSiblingKeyWith: { snapshot, previousKey in
        let _: DataSnapshot = snapshot
        let _: String? = previousKey
    })
    // API: DatabaseQuery.observe(_:with:withCancel:)
    handle = q.observe(.childChanged) { snapshot in
        let _: DataSnapshot = snapshot
    } withCancel: { error in
        let _: any Error = error
    }
    // API: DatabaseQuery.observe(_:with:withCancel:)
    handle = q.observe(.value, with: { _ in }, withCancel: nil)
    // API: DatabaseQuery.observe(_:andPreviousSiblingKeyWith:withCancel:)
    handle = q.observe(.childMoved, andPreviousSiblingKeyWith: { snapshot, previousKey in
        let _: DataSnapshot = snapshot
        let _: String? = previousKey
    }, withCancel: { error in
        let _: any Error = error
    })
    // API: DatabaseQuery.getData(completion:)
    q.getData { error, snapshot in
        let _: (any Error)? = error
        let _: DataSnapshot? = snapshot
    }
    // API: DatabaseQuery.observeSingleEvent(of:with:)
    q.observeSingleEvent(of: .value) { snapshot in
        let _: DataSnapshot = snapshot
    }
    // API: DatabaseQuery.observeSingleEvent(of:andPreviousSiblingKeyWith:)
    q.observeSingleEvent(of: .childAdded, andPreviousSiblingKeyWith: { snapshot, previousKey in
        let _: DataSnapshot = snapshot
        let _: String? = previousKey
    })
    // API: DatabaseQuery.observeSingleEvent(of:with:withCancel:)
    q.observeSingleEvent(of: .value) { _ in } withCancel: { error in
        let _: any Error = error
    }
    // API: DatabaseQuery.observeSingleEvent(of:andPreviousSiblingKeyWith:withCancel:)
    q.observeSingleEvent(of: .childRemoved, andPreviousSiblingKeyWith: { _, _ in }, withCancel: { _ in })
    // API: DatabaseQuery.removeObserver(withHandle:)
    q.removeObserver(withHandle: handle)
    // API: DatabaseQuery.removeAllObservers()
    q.removeAllObservers()
    // API: DatabaseQuery.keepSynced(_:)
    q.keepSynced(true)

    // Building queries.
    // API: DatabaseQuery.queryLimited(toFirst:)
    q = q.queryLimited(toFirst: 10)
    // API: DatabaseQuery.queryLimited(toLast:)
    q = q.queryLimited(toLast: 10)
    // API: DatabaseQuery.queryOrdered(byChild:)
    q = q.queryOrdered(byChild: "likes")
    // API: DatabaseQuery.queryOrderedByKey()
    q = q.queryOrderedByKey()
    // API: DatabaseQuery.queryOrderedByValue()
    q = q.queryOrderedByValue()
    // API: DatabaseQuery.queryOrderedByPriority()
    q = q.queryOrderedByPriority()
    // API: DatabaseQuery.queryStarting(atValue:)
    q = q.queryStarting(atValue: 3)
    // API: DatabaseQuery.queryStarting(atValue:childKey:)
    q = q.queryStarting(atValue: 3, childKey: "b")
    // API: DatabaseQuery.queryStarting(afterValue:)
    q = q.queryStarting(afterValue: "a")
    // API: DatabaseQuery.queryStarting(afterValue:childKey:)
    q = q.queryStarting(afterValue: nil, childKey: "b")
    // API: DatabaseQuery.queryEnding(atValue:)
    q = q.queryEnding(atValue: 9.5)
    // API: DatabaseQuery.queryEnding(atValue:childKey:)
    q = q.queryEnding(atValue: true, childKey: nil)
    // API: DatabaseQuery.queryEnding(beforeValue:)
    q = q.queryEnding(beforeValue: "z")
    // API: DatabaseQuery.queryEnding(beforeValue:childKey:)
    q = q.queryEnding(beforeValue: "z", childKey: "k")
    // API: DatabaseQuery.queryEqual(toValue:)
    q = q.queryEqual(toValue: "x")
    // API: DatabaseQuery.queryEqual(toValue:childKey:)
    q = q.queryEqual(toValue: "x", childKey: "k")
    // API: DatabaseQuery.ref
    reference = q.ref

    // A reference's own members.
    // API: DatabaseReference
    var ref: DatabaseReference = ref
    // API: DatabaseReference.child(_:)
    ref = ref.child("messages/1")
    // API: DatabaseReference.childByAutoId()
    ref = ref.childByAutoId()
    // API: DatabaseReference.setValue(_:)
    ref.setValue(["text": "hello", "likes": 0] as [String: Any])
    // API: DatabaseReference.setValue(_:withCompletionBlock:)
    ref.setValue("hello") { error, ref in
        let _: (any Error)? = error
        let _: DatabaseReference = ref
    }
    // API: DatabaseReference.setValue(_:withCompletionBlock:)
    ref.setValue(nil, withCompletionBlock: { _, _ in })
    // API: DatabaseReference.setValue(_:andPriority:)
    ref.setValue("hello", andPriority: 1)
    // API: DatabaseReference.setValue(_:andPriority:withCompletionBlock:)
    ref.setValue("hello", andPriority: "p") { error, _ in
        let _: (any Error)? = error
    }
    // API: DatabaseReference.removeValue()
    ref.removeValue()
    // API: DatabaseReference.removeValue(completionBlock:)
    ref.removeValue { error, ref in
        let _: (any Error)? = error
        let _: DatabaseReference = ref
    }
    // API: DatabaseReference.setPriority(_:)
    ref.setPriority(2)
    // API: DatabaseReference.setPriority(_:withCompletionBlock:)
    ref.setPriority(nil) { _, _ in }
    // API: DatabaseReference.updateChildValues(_:)
    ref.updateChildValues(["text": "edited", "meta/edited": true])
    // API: DatabaseReference.updateChildValues(_:withCompletionBlock:)
    ref.updateChildValues(["likes": 1]) { error, _ in
        let _: (any Error)? = error
    }
    // API: ServerValue
    // API: ServerValue.timestamp()
    ref.child("sentAt").setValue(ServerValue.timestamp())
    // API: ServerValue.increment(_:)
    ref.updateChildValues(["likes": ServerValue.increment(NSNumber(value: 1))])
    // API: DatabaseReference.onDisconnectSetValue(_:)
    ref.onDisconnectSetValue("offline")
    // API: DatabaseReference.onDisconnectSetValue(_:withCompletionBlock:)
    ref.onDisconnectSetValue("offline") { _, _ in }
    // API: DatabaseReference.onDisconnectSetValue(_:andPriority:)
    ref.onDisconnectSetValue("offline", andPriority: 1)
    // API: DatabaseReference.onDisconnectSetValue(_:andPriority:withCompletionBlock:)
    ref.onDisconnectSetValue("offline", andPriority: nil) { _, _ in }
    // API: DatabaseReference.onDisconnectRemoveValue()
    ref.onDisconnectRemoveValue()
    // API: DatabaseReference.onDisconnectRemoveValue(completionBlock:)
    ref.onDisconnectRemoveValue { _, _ in }
    // API: DatabaseReference.onDisconnectUpdateChildValues(_:)
    ref.onDisconnectUpdateChildValues(["online": false])
    // API: DatabaseReference.onDisconnectUpdateChildValues(_:withCompletionBlock:)
    ref.onDisconnectUpdateChildValues(["online": false]) { _, _ in }
    // API: DatabaseReference.cancelDisconnectOperations()
    ref.cancelDisconnectOperations()
    // API: DatabaseReference.cancelDisconnectOperations(completionBlock:)
    ref.cancelDisconnectOperations { error, _ in
        let _: (any Error)? = error
    }
    // API: DatabaseReference.cancelDisconnectOperations(completionBlock:)
    ref.cancelDisconnectOperations(completionBlock: { _, _ in })
    // API: DatabaseReference.goOffline()
    DatabaseReference.goOffline()
    // API: DatabaseReference.goOnline()
    DatabaseReference.goOnline()
    // API: DatabaseReference.runTransactionBlock(_:)
    // API: MutableData
    // API: TransactionResult
    // API: TransactionResult.success(withValue:)
    ref.runTransactionBlock { (current: MutableData) -> TransactionResult in
        current.value = ((current.value as? Int) ?? 0) + 1
        return TransactionResult.success(withValue: current)
    }
    // API: DatabaseReference.runTransactionBlock(_:andCompletionBlock:)
    // API: TransactionResult.abort()
    ref.runTransactionBlock({ current in
        if current.value == nil { return TransactionResult.abort() }
        return .success(withValue: current)
    }, andCompletionBlock: { error, committed, snapshot in
        let _: (any Error)? = error
        let _: Bool = committed
        let _: DataSnapshot? = snapshot
    })
    // API: DatabaseReference.runTransactionBlock(_:andCompletionBlock:withLocalEvents:)
    ref.runTransactionBlock({ .success(withValue: $0) }, andCompletionBlock: nil, withLocalEvents: false)
    // API: DatabaseReference.description()
    let _: String = ref.description()
    // API: DatabaseReference.parent
    let _: DatabaseReference? = ref.parent
    // API: DatabaseReference.root
    let _: DatabaseReference = ref.root
    // API: DatabaseReference.key
    let _: String? = ref.key
    // API: DatabaseReference.url
    let _: String = ref.url
    // API: DatabaseReference.database
    let _: Database = ref.database

    // Codable.
    let message = APITestMessage(text: "hello", likes: 0, sentAt: nil)
    // API: DatabaseReference.setValue(from:encoder:completion:)
    try ref.setValue(from: message)
    // API: Database.Encoder.init()
    let encoder = Database.Encoder()
    // API: Database.Encoder.dateEncodingStrategy
    encoder.dateEncodingStrategy = .millisecondsSince1970
    // API: Database.Encoder.keyEncodingStrategy
    encoder.keyEncodingStrategy = .convertToSnakeCase
    // API: Database.Encoder.nonConformingFloatEncodingStrategy
    encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
    // API: DatabaseReference.setValue(from:encoder:completion:)
    try ref.setValue(from: message, encoder: encoder) { error in
        let _: (any Error)? = error
    }
    // API: Database.Decoder.init()
    let decoder = Database.Decoder()
    // API: Database.Decoder.dateDecodingStrategy
    decoder.dateDecodingStrategy = .millisecondsSince1970
    // API: Database.Decoder.keyDecodingStrategy
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    // API: Database.Decoder.nonConformingFloatDecodingStrategy
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
    // API: DataSnapshot.data(as:decoder:)
    let _: APITestMessage = try snapshot.data(as: APITestMessage.self)
    // API: DataSnapshot.data(as:decoder:)
    let _: APITestMessage = try snapshot.data(as: APITestMessage.self, decoder: decoder)

    _ = (database, reference, q)
}

/// The members `FIRDatabaseReference.h` re-declares from `FIRDatabaseQuery`, called on a reference.
func databaseReferenceQueryAPIs(ref: DatabaseReference) {
    var handle: DatabaseHandle
    // API: DatabaseReference.observe(_:with:)
    handle = ref.observe(.value) { _ in }
    // API: DatabaseReference.observe(_:andPreviousSiblingKeyWith:)
    handle = ref.observe(.childAdded, andPreviousSiblingKeyWith: { _, _ in })
    // API: DatabaseReference.observe(_:with:withCancel:)
    handle = ref.observe(.value) { _ in } withCancel: { _ in }
    // API: DatabaseReference.observe(_:andPreviousSiblingKeyWith:withCancel:)
    handle = ref.observe(.childAdded, andPreviousSiblingKeyWith: { _, _ in }, withCancel: { _ in })
    // API: DatabaseReference.getData(completion:)
    ref.getData { error, snapshot in
        let _: (any Error)? = error
        let _: DataSnapshot? = snapshot
    }
    // API: DatabaseReference.observeSingleEvent(of:with:)
    ref.observeSingleEvent(of: .value) { _ in }
    // API: DatabaseReference.observeSingleEvent(of:andPreviousSiblingKeyWith:)
    ref.observeSingleEvent(of: .childAdded, andPreviousSiblingKeyWith: { _, _ in })
    // API: DatabaseReference.observeSingleEvent(of:with:withCancel:)
    ref.observeSingleEvent(of: .value, with: { _ in }, withCancel: { _ in })
    // API: DatabaseReference.observeSingleEvent(of:andPreviousSiblingKeyWith:withCancel:)
    ref.observeSingleEvent(of: .childAdded, andPreviousSiblingKeyWith: { _, _ in }, withCancel: { _ in })
    // API: DatabaseReference.removeObserver(withHandle:)
    ref.removeObserver(withHandle: handle)
    // API: DatabaseReference.removeAllObservers()
    ref.removeAllObservers()
    // API: DatabaseReference.keepSynced(_:)
    ref.keepSynced(false)
    var q: DatabaseQuery
    // API: DatabaseReference.queryLimited(toFirst:)
    q = ref.queryLimited(toFirst: 5)
    // API: DatabaseReference.queryLimited(toLast:)
    q = ref.queryLimited(toLast: 5)
    // API: DatabaseReference.queryOrdered(byChild:)
    q = ref.queryOrdered(byChild: "likes")
    // API: DatabaseReference.queryOrderedByKey()
    q = ref.queryOrderedByKey()
    // API: DatabaseReference.queryOrderedByPriority()
    q = ref.queryOrderedByPriority()
    // API: DatabaseReference.queryStarting(atValue:)
    q = ref.queryStarting(atValue: 1)
    // API: DatabaseReference.queryStarting(atValue:childKey:)
    q = ref.queryStarting(atValue: 1, childKey: "a")
    // API: DatabaseReference.queryStarting(afterValue:)
    q = ref.queryStarting(afterValue: 1)
    // API: DatabaseReference.queryStarting(afterValue:childKey:)
    q = ref.queryStarting(afterValue: 1, childKey: "a")
    // API: DatabaseReference.queryEnding(atValue:)
    q = ref.queryEnding(atValue: 1)
    // API: DatabaseReference.queryEnding(atValue:childKey:)
    q = ref.queryEnding(atValue: 1, childKey: "a")
    // API: DatabaseReference.queryEqual(toValue:)
    q = ref.queryEqual(toValue: 1)
    // API: DatabaseReference.queryEqual(toValue:childKey:)
    q = ref.queryEqual(toValue: 1, childKey: "a")
    _ = q
}

/// Snapshots and mutable data.
func dataSnapshotAPIs(snapshot: DataSnapshot, data: MutableData) {
    // API: DataSnapshot
    let s: DataSnapshot = snapshot
    // API: DataSnapshot.childSnapshot(forPath:)
    let _: DataSnapshot = s.childSnapshot(forPath: "a/b")
    // API: DataSnapshot.hasChild(_:)
    let _: Bool = s.hasChild("a")
    // API: DataSnapshot.hasChildren()
    let _: Bool = s.hasChildren()
    // API: DataSnapshot.exists()
    let _: Bool = s.exists()
    // API: DataSnapshot.valueInExportFormat()
    let _: Any? = s.valueInExportFormat()
    // API: DataSnapshot.value
    let _: Any? = s.value
    // API: DataSnapshot.childrenCount
    let _: UInt = s.childrenCount
    // API: DataSnapshot.ref
    let _: DatabaseReference = s.ref
    // API: DataSnapshot.key
    let _: String = s.key
    // API: DataSnapshot.priority
    let _: Any? = s.priority

    // API: MutableData.hasChildren()
    let _: Bool = data.hasChildren()
    // API: MutableData.hasChild(atPath:)
    let _: Bool = data.hasChild(atPath: "a/b")
    // API: MutableData.childData(byAppendingPath:)
    let child: MutableData = data.childData(byAppendingPath: "a")
    // API: MutableData.value
    child.value = ["n": 1]
    // API: MutableData.priority
    child.priority = 5
    let _: Any? = child.priority
    // API: MutableData.childrenCount
    let _: UInt = data.childrenCount
    // API: MutableData.key
    let _: String? = data.key

    // API: DataEventType.childAdded
    let _: DataEventType = .childAdded
    // API: DataEventType.childRemoved
    let _: DataEventType = .childRemoved
    // API: DataEventType.childChanged
    let _: DataEventType = .childChanged
    // API: DataEventType.childMoved
    let _: DataEventType = .childMoved
    // API: DataEventType.value
    let _: DataEventType = DataEventType.value
    // API: DataEventType.init(rawValue:)
    let _: DataEventType? = DataEventType(rawValue: 4)
}

/// Async code: the generated async forms, and the synchronous calls Firebase lets async code make
/// without `await` (a same-named Hearth-only async overload would break these).
func databaseAPIsAsync(ref: DatabaseReference, query: DatabaseQuery) async throws {
    // API: DatabaseQuery.getData() async
    let _: DataSnapshot = try await query.getData()
    // API: DatabaseReference.getData() async
    let _: DataSnapshot = try await ref.getData()
    // API: DatabaseQuery.observeSingleEventAndPreviousSiblingKey(of:) async
    let _: (DataSnapshot, String?) = await query.observeSingleEventAndPreviousSiblingKey(of: .childAdded)
    // API: DatabaseReference.observeSingleEventAndPreviousSiblingKey(of:) async
    let (_, _): (DataSnapshot, String?) = await ref.observeSingleEventAndPreviousSiblingKey(of: .childAdded)
    // API: DatabaseReference.setValue(_:) async
    let _: DatabaseReference = try await ref.setValue(["text": "hello"])
    // API: DatabaseReference.setValue(_:andPriority:) async
    let _: DatabaseReference = try await ref.setValue("hello", andPriority: 1)
    // API: DatabaseReference.removeValue() async
    let _: DatabaseReference = try await ref.removeValue()
    // API: DatabaseReference.setPriority(_:) async
    let _: DatabaseReference = try await ref.setPriority("p")
    // API: DatabaseReference.updateChildValues(_:) async
    let _: DatabaseReference = try await ref.updateChildValues(["likes": 2])
    // API: DatabaseReference.onDisconnectSetValue(_:) async
    let _: DatabaseReference = try await ref.onDisconnectSetValue("offline")
    // API: DatabaseReference.onDisconnectSetValue(_:andPriority:) async
    let _: DatabaseReference = try await ref.onDisconnectSetValue("offline", andPriority: 1)
    // API: DatabaseReference.onDisconnectRemoveValue() async
    let _: DatabaseReference = try await ref.onDisconnectRemoveValue()
    // API: DatabaseReference.onDisconnectUpdateChildValues(_:) async
    let _: DatabaseReference = try await ref.onDisconnectUpdateChildValues(["online": false])
    // API: DatabaseReference.cancelDisconnectOperations() async
    let _: DatabaseReference = try await ref.cancelDisconnectOperations()
    // API: DatabaseReference.runTransactionBlock(_:) async
    let (committed, snapshot): (Bool, DataSnapshot) = try await ref.runTransactionBlock { current in
        current.value = ((current.value as? Int) ?? 0) + 1
        return .success(withValue: current)
    }
    _ = (committed, snapshot)

    // Synchronous calls without `await`: none has a same-named async form in Firebase.
    let message = APITestMessage(text: "hi", likes: 1, sentAt: nil)
    // API: DatabaseReference.setValue(from:encoder:completion:)
    try ref.setValue(from: message)
    // API: DatabaseReference.childByAutoId()
    let child = ref.childByAutoId()
    // API: DatabaseReference.setValue(from:encoder:completion:)
    try child.setValue(from: message) { error in
        let _: (any Error)? = error
    }
    // API: DatabaseQuery.observeSingleEvent(of:with:)
    query.observeSingleEvent(of: .value) { _ in }
    // API: DatabaseReference.observeSingleEvent(of:with:)
    ref.observeSingleEvent(of: .value) { snapshot in
        let _: Bool = snapshot.exists()
    }
    // API: DatabaseReference.observe(_:with:)
    let handle = ref.observe(.childAdded) { _ in }
    // API: DatabaseReference.removeObserver(withHandle:)
    ref.removeObserver(withHandle: handle)
    // Completion-block forms (a closure argument picks them in async code too).
    // API: DatabaseReference.setValue(_:withCompletionBlock:)
    ref.setValue("x") { _, _ in }
    // API: DatabaseReference.updateChildValues(_:withCompletionBlock:)
    ref.updateChildValues(["a": 1]) { _, _ in }
    // API: DatabaseReference.getData(completion:)
    ref.getData { _, _ in }
    // API: DatabaseQuery.queryOrdered(byChild:)
    // API: DatabaseQuery.queryLimited(toLast:)
    let top = ref.queryOrdered(byChild: "likes").queryLimited(toLast: 3)
    // API: DatabaseQuery.getData() async
    let _ = try await top.getData()
}

/// Firebase's encoder and decoder on their own, for values passed to `setValue(_:)` and read from
/// `value`.
func codableAPIs(ref: DatabaseReference, snapshot: DataSnapshot) async throws {
    struct Message: Codable { var text: String }
    // API: Database.Encoder.encode(_:)
    let encoded: Any = try Database.Encoder().encode(Message(text: "hi"))
    try await ref.setValue(encoded)
    // API: Database.Decoder.decode(_:from:)
    let _: Message = try Database.Decoder().decode(Message.self, from: snapshot.value as Any)
    // API: Database.Encoder
    let strategy: Database.Encoder.DateEncodingStrategy = .millisecondsSince1970
    let keys: Database.Encoder.KeyEncodingStrategy = .convertToSnakeCase
    // API: Database.Decoder
    let decoding: Database.Decoder.DateDecodingStrategy = .millisecondsSince1970
    let _: Database.Decoder.KeyDecodingStrategy = .convertFromSnakeCase
    // API: FirebaseDataEncoder
    let encoder: FirebaseDataEncoder = Database.Encoder()
    encoder.dateEncodingStrategy = strategy
    encoder.keyEncodingStrategy = keys
    FirebaseDataDecoder().dateDecodingStrategy = decoding
    encoder.keyEncodingStrategy = .convertToSnakeCase
    // API: FirebaseDataDecoder
    let decoder: FirebaseDataDecoder = FirebaseDataDecoder()
    let _: Message = try snapshot.data(as: Message.self, decoder: decoder)
}

@Suite("FirebaseDatabase API, offline")
struct DatabaseAPIOfflineTests {
    @Test("DataEventType has Firebase's raw values")
    func dataEventTypeRawValues() {
        // API: DataEventType.childAdded
        #expect(DataEventType.childAdded.rawValue == 0)
        // API: DataEventType.childRemoved
        #expect(DataEventType.childRemoved.rawValue == 1)
        // API: DataEventType.childChanged
        #expect(DataEventType.childChanged.rawValue == 2)
        // API: DataEventType.childMoved
        #expect(DataEventType.childMoved.rawValue == 3)
        // API: DataEventType.value
        #expect(DataEventType.value.rawValue == 4)
        // API: DataEventType.init(rawValue:)
        #expect(DataEventType(rawValue: 2) == .childChanged)
    }

    @Test("ServerValue placeholders are Firebase's")
    func serverValues() throws {
        // API: ServerValue.timestamp()
        let timestamp = ServerValue.timestamp()
        #expect(timestamp[".sv"] as? String == "timestamp")
        // API: ServerValue.increment(_:)
        let increment = ServerValue.increment(NSNumber(value: 5))
        let inner = try #require(increment[".sv"] as? [AnyHashable: Any])
        #expect((inner["increment"] as? NSNumber)?.intValue == 5)
    }

    @Test("@ServerTimestamp encodes nil as the server placeholder and a date as milliseconds")
    func serverTimestampEncoding() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // API: ServerTimestamp.init(wrappedValue:)
        // API: ServerTimestamp.encode(to:)
        let pending = try encoder.encode(ServerTimestamp(wrappedValue: nil))
        #expect(String(decoding: pending, as: UTF8.self) == #"{".sv":"timestamp"}"#)
        // API: ServerTimestamp.init(wrappedValue:)
        let fixed = try encoder.encode(ServerTimestamp(wrappedValue: Date(timeIntervalSince1970: 1.5)))
        #expect(String(decoding: fixed, as: UTF8.self) == "1500")

        let message = APITestMessage(text: "hi", likes: 0, sentAt: nil)
        let json = String(decoding: try encoder.encode(message), as: UTF8.self)
        #expect(json == #"{"likes":0,"sentAt":{".sv":"timestamp"},"text":"hi"}"#)

        // API: ServerTimestamp.init(from:)
        let decoded = try JSONDecoder().decode(ServerTimestamp.self, from: Data("2500".utf8))
        // API: ServerTimestamp.wrappedValue
        #expect(decoded.wrappedValue == Date(timeIntervalSince1970: 2.5))
        // API: ServerTimestamp.init(from:)
        let back = try JSONDecoder().decode(APITestMessage.self, from: Data(#"{"text":"a","likes":1,"sentAt":3000}"#.utf8))
        #expect(back.sentAt == Date(timeIntervalSince1970: 3))
        // API: ServerTimestamp
        #expect(ServerTimestamp(wrappedValue: nil) == ServerTimestamp(wrappedValue: nil)) // Equatable
    }
}
