// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseDatabase`).
//
// The model protocol of the seed app: an identifier, the database path the model lives under, JSON
// conversion, and default save() / delete() in a protocol extension.

import Foundation
import Hearth

public protocol FirebaseModel {
    /// The key under `endpoint` (a push ID, or a user's uid); nil until saved.
    var identifier: String? { get set }
    /// The database path the model's records live under, e.g. `posts` or `posts/<id>/comments`.
    var endpoint: String { get }
    /// The record as JSON (the values `setValue` takes).
    var dictionary: [String: Any] { get }
    /// What `save()` writes: the dictionary, unless the model is stored as a single value.
    var firebaseValue: Any { get }

    init?(snapshot: DataSnapshot)
}

extension FirebaseModel {
    public var firebaseValue: Any { dictionary }

    /// The reference of this record, once it has an identifier.
    public var ref: DatabaseReference? {
        guard let identifier = identifier else { return nil }
        return Database.database().reference().child(endpoint).child(identifier)
    }

    /// Writes the record: under its identifier, or under a new push ID (which becomes its identifier).
    public mutating func save(completion: ((Error?) -> Void)? = nil) {
        let endpointRef = Database.database().reference().child(endpoint)
        let ref: DatabaseReference
        if let identifier = identifier {
            ref = endpointRef.child(identifier)
        } else {
            ref = endpointRef.childByAutoId()
            identifier = ref.key
        }
        ref.setValue(firebaseValue) { error, _ in
            completion?(error)
        }
    }

    /// Removes the record (and everything below it).
    public func delete(completion: ((Error?) -> Void)? = nil) {
        guard let ref = ref else {
            completion?(nil)
            return
        }
        ref.removeValue { error, _ in
            completion?(error)
        }
    }
}

/// The app's own errors (what Firebase does not report itself).
public enum TimelineError: Error {
    case notSignedIn
    case notFound
    case invalidData
}
