import Dispatch
import Foundation
import Hearth
import Testing

/// FirebaseDatabase's Swift API, as its own API test (`DatabaseAPITests.swift`) exercises it, written
/// against `import Hearth`: this file compiling is the check. Differences, on purpose:
/// no `FirebaseApp` (use `Database.database(url:)`), no public `init()` of snapshots, queries or
/// transaction results, `DataSnapshot.children` is a `DataSnapshotChildren` sequence (with
/// `nextObject()` and `allObjects`) rather than an `NSEnumerator`, `description` is a property, and
/// callbacks are `@Sendable`.
@Suite struct FirebaseAPICompatibilityTests {
    /// Never called: only compiled.
    static func usage(database: Database, databaseQuery initialQuery: DatabaseQuery) {
        let path = "path"
        var url = "url"
        let yes = true
        var databaseReference: DatabaseReference = database.reference()
        databaseReference = database.reference(withPath: path)
        databaseReference = database.reference(fromURL: url)
        database.purgeOutstandingWrites()
        database.goOffline()
        database.goOnline()
        database.useEmulator(withHost: "host", port: 0)
        let _: Bool = database.isPersistenceEnabled
        let _: UInt = database.persistenceCacheSizeBytes
        let _: DispatchQueue = database.callbackQueue
        Database.setLoggingEnabled(yes)
        let _: String = Database.sdkVersion()

        var uint: UInt = 0
        let dataEventType: DataEventType = .value
        var child = "child"
        var childKey: String? = "key"
        var value: Any? = "value"
        var priority: Any? = "priority"
        var databaseHandle: DatabaseHandle = uint
        var databaseQuery = initialQuery

        databaseHandle = databaseQuery.observe(dataEventType) { dataSnapshot in
            let _: DataSnapshot = dataSnapshot
        }
        databaseHandle = databaseQuery.observe(dataEventType) { dataSnapshot, optionalString in
            let _: DataSnapshot = dataSnapshot
            let _: String? = optionalString
        }
        databaseHandle = databaseQuery.observe(dataEventType) { dataSnapshot in
            let _: DataSnapshot = dataSnapshot
        } withCancel: { error in
            let _: any Error = error
        }
        databaseHandle = databaseQuery.observe(dataEventType) { dataSnapshot, optionalString in
            let _: DataSnapshot = dataSnapshot
            let _: String? = optionalString
        } withCancel: { error in
            let _: any Error = error
        }
        databaseQuery.getData { optionalError, dataSnapshot in
            let _: (any Error)? = optionalError
            let _: DataSnapshot? = dataSnapshot
        }
        databaseQuery.observeSingleEvent(of: dataEventType) { dataSnapshot in
            let _: DataSnapshot = dataSnapshot
        }
        databaseQuery.observeSingleEvent(of: dataEventType) { dataSnapshot, optionalString in
            let _: DataSnapshot = dataSnapshot
            let _: String? = optionalString
        }
        databaseQuery.observeSingleEvent(of: dataEventType) { dataSnapshot in
            let _: DataSnapshot = dataSnapshot
        } withCancel: { error in
            let _: any Error = error
        }
        databaseQuery.observeSingleEvent(of: dataEventType) { dataSnapshot, optionalString in
            let _: DataSnapshot = dataSnapshot
            let _: String? = optionalString
        } withCancel: { error in
            let _: any Error = error
        }
        databaseQuery.removeObserver(withHandle: databaseHandle)
        databaseQuery.removeAllObservers()
        databaseQuery.keepSynced(yes)
        databaseQuery = databaseQuery.queryLimited(toFirst: databaseHandle)
        databaseQuery = databaseQuery.queryLimited(toLast: databaseHandle)
        databaseQuery = databaseQuery.queryOrdered(byChild: child)
        databaseQuery = databaseQuery.queryOrderedByKey()
        databaseQuery = databaseQuery.queryOrderedByValue()
        databaseQuery = databaseQuery.queryOrderedByPriority()
        databaseQuery = databaseQuery.queryStarting(atValue: value)
        databaseQuery = databaseQuery.queryStarting(atValue: value, childKey: childKey)
        databaseQuery = databaseQuery.queryStarting(afterValue: value)
        databaseQuery = databaseQuery.queryStarting(afterValue: value, childKey: childKey)
        databaseQuery = databaseQuery.queryEnding(atValue: value)
        databaseQuery = databaseQuery.queryEnding(atValue: value, childKey: childKey)
        databaseQuery = databaseQuery.queryEnding(beforeValue: value)
        databaseQuery = databaseQuery.queryEnding(beforeValue: value, childKey: childKey)
        databaseQuery = databaseQuery.queryEqual(toValue: value)
        databaseQuery = databaseQuery.queryEqual(toValue: value, childKey: childKey)
        databaseReference = databaseQuery.ref

        let values = [AnyHashable: Any]()
        databaseReference = databaseReference.child(child)
        databaseReference = databaseReference.childByAutoId()
        databaseReference.setValue(value)
        databaseReference.setValue(value) { optionalError, databaseReference in
            let _: (any Error)? = optionalError
            let _: DatabaseReference = databaseReference
        }
        databaseReference.setValue(value, andPriority: priority)
        databaseReference.setValue(value, andPriority: priority) { _, _ in }
        databaseReference.removeValue()
        databaseReference.removeValue { _, _ in }
        databaseReference.setPriority(priority)
        databaseReference.setPriority(priority) { _, _ in }
        databaseReference.updateChildValues(values)
        databaseReference.updateChildValues(values) { _, _ in }
        databaseReference.onDisconnectSetValue(value)
        databaseReference.onDisconnectSetValue(value) { _, _ in }
        databaseReference.onDisconnectSetValue(value, andPriority: priority)
        databaseReference.onDisconnectSetValue(value, andPriority: priority) { _, _ in }
        databaseReference.onDisconnectRemoveValue()
        databaseReference.onDisconnectRemoveValue { _, _ in }
        databaseReference.onDisconnectUpdateChildValues(values)
        databaseReference.onDisconnectUpdateChildValues(values) { _, _ in }
        databaseReference.cancelDisconnectOperations()
        databaseReference.cancelDisconnectOperations { _, _ in }
        databaseReference.runTransactionBlock { mutableData in
            let _: MutableData = mutableData
            return TransactionResult.success(withValue: mutableData)
        }
        databaseReference.runTransactionBlock { mutableData in
            .success(withValue: mutableData)
        } andCompletionBlock: { optionalError, bool, optionalDataSnapshot in
            let _: (any Error)? = optionalError
            let _: Bool = bool
            let _: DataSnapshot? = optionalDataSnapshot
        }
        databaseReference.runTransactionBlock({ _ in TransactionResult.abort() }, andCompletionBlock: { _, _, _ in }, withLocalEvents: yes)
        let _: String = databaseReference.description()
        let _: DatabaseReference? = databaseReference.parent
        databaseReference = databaseReference.root
        childKey = databaseReference.key
        url = databaseReference.url
        let _: Database = databaseReference.database

        switch DataEventType(rawValue: 0) {
        case .childAdded, .childRemoved, .childChanged, .childMoved, .value, .none: break
        }

        let reference = databaseReference
        let query = databaseQuery
        Task {
            let value: Any? = "value"
            let priority: Any? = 1
            let values: [AnyHashable: Any] = [:]
            let databaseQuery = query
            let _: DataSnapshot = try await databaseQuery.getData()
            let _: (DataSnapshot, String?) = await databaseQuery.observeSingleEventAndPreviousSiblingKey(of: dataEventType)
            var updated: DatabaseReference = try await reference.setValue(value)
            updated = try await reference.setValue(value, andPriority: priority)
            updated = try await reference.removeValue()
            updated = try await reference.setPriority(priority)
            updated = try await reference.updateChildValues(values)
            updated = try await reference.onDisconnectSetValue(value)
            updated = try await reference.onDisconnectSetValue(value, andPriority: priority)
            updated = try await reference.onDisconnectRemoveValue()
            updated = try await reference.onDisconnectUpdateChildValues(values)
            updated = try await reference.cancelDisconnectOperations()
            _ = updated
            let _: (Bool, DataSnapshot) = try await reference.runTransactionBlock { .success(withValue: $0) }
        }

        let snapshot = DataSnapshot?.none
        if let dataSnapshot = snapshot {
            let _: DataSnapshot = dataSnapshot.childSnapshot(forPath: path)
            let _: Bool = dataSnapshot.hasChild(child)
            let _: Bool = dataSnapshot.hasChildren()
            let _: Bool = dataSnapshot.exists()
            value = dataSnapshot.valueInExportFormat()
            value = dataSnapshot.value
            uint = dataSnapshot.childrenCount
            databaseReference = dataSnapshot.ref
            child = dataSnapshot.key
            priority = dataSnapshot.priority
            let enumerator = dataSnapshot.children
            while let next = enumerator.nextObject() { _ = next.key }
            for next in dataSnapshot.children { _ = next.value }
        }
        DatabaseReference.goOffline()
        DatabaseReference.goOnline()
        let _: [AnyHashable: Any] = ServerValue.timestamp()
        let _: [AnyHashable: Any] = ServerValue.increment(NSNumber(value: 0))
        _ = (url, childKey, uint, value, priority)
    }

    @Test func theFirebaseSpellingsCompileAndDataEventTypeKeepsItsRawValues() {
        #expect(DataEventType.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
        #expect([DataEventType.childAdded, .childRemoved, .childChanged, .childMoved, .value].map(\.rawValue) == [0, 1, 2, 3, 4])
    }
}
