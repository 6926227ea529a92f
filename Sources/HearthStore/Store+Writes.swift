import Hearth

extension Store {
    /// Writes `object` at `ref`, or under a new push ID below it, and dispatches
    /// ``ObjectCreated`` when the server has it or ``ObjectWriteFailed`` when it refuses.
    ///
    /// For example:
    /// ```swift
    /// let ref = store.createObject(post, at: database.reference(withPath: "posts"), underNewChildID: true)
    /// print(ref.key!)  // the new push ID, known at once
    /// ```
    ///
    /// - Returns: The location written; its key is the new push ID when `underNewChildID` is true.
    @discardableResult
    public func createObject<T: Encodable & Sendable>(
        _ object: T,
        at ref: DatabaseReference,
        underNewChildID: Bool = false,
        encoder: Database.Encoder = Database.Encoder()
    ) -> DatabaseReference {
        let location = underNewChildID ? ref.childByAutoId() : ref
        let key = location.key ?? ""
        run(Effect { store in
            do {
                try await location.setValue(encoder.encode(object))
                store.dispatch(ObjectCreated(key: key, object: object))
            } catch {
                store.dispatch(ObjectWriteFailed<T>(error: ObjectWriteError(.create, key: key, underlying: Self.databaseError(error))))
            }
        })
        return location
    }

    /// Merges the members `changes` encodes into the data at `ref` (others stay), and dispatches
    /// ``ObjectUpdated`` or ``ObjectWriteFailed``.
    ///
    /// For example:
    /// ```swift
    /// struct TitleChange: Encodable, Sendable { var title: String }
    /// store.updateObject(TitleChange(title: "Edited"), at: database.reference(withPath: "posts/\(id)"))
    /// ```
    @discardableResult
    public func updateObject<T: Encodable & Sendable>(
        _ changes: T,
        at ref: DatabaseReference,
        encoder: Database.Encoder = Database.Encoder()
    ) -> Task<Void, Never> {
        let key = ref.key ?? ""
        return run(Effect { store in
            do {
                try await ref.updateChildValues(from: changes, encoder: encoder)
                store.dispatch(ObjectUpdated(key: key, changes: changes))
            } catch {
                store.dispatch(ObjectWriteFailed<T>(error: ObjectWriteError(.update, key: key, underlying: Self.databaseError(error))))
            }
        })
    }

    /// Removes the data at `ref`, and dispatches ``ObjectDeleted`` or ``ObjectWriteFailed`` for `T`.
    ///
    /// ```swift
    /// store.removeObject(Post.self, at: database.reference(withPath: "posts/\(id)"))
    /// ```
    @discardableResult
    public func removeObject<T: Sendable>(_ type: T.Type, at ref: DatabaseReference) -> Task<Void, Never> {
        let key = ref.key ?? ""
        return run(Effect { store in
            do {
                try await ref.removeValue()
                store.dispatch(ObjectDeleted<T>(key: key))
            } catch {
                store.dispatch(ObjectWriteFailed<T>(error: ObjectWriteError(.remove, key: key, underlying: Self.databaseError(error))))
            }
        })
    }

    private nonisolated static func databaseError(_ error: any Error) -> DatabaseError {
        // Anything but the server's refusal is a value that could not be written (an encoding error).
        error as? DatabaseError ?? DatabaseError(.invalidData, "\(type(of: error))")
    }
}
