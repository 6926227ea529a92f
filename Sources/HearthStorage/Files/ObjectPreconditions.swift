/// Cloud Storage's conditions on the version of an object a request acts on
/// (`ifGenerationMatch`, `ifGenerationNotMatch`, `ifMetagenerationMatch`, `ifMetagenerationNotMatch`,
/// and `generation`, which names the version).
///
/// A generation of 0 stands for "no object": `ifGenerationMatch=0` holds only while there is none (a
/// create that never overwrites). Every other condition needs a live object: without one it fails
/// (Cloud Storage's reference: "If no live object exists, the precondition fails"), so
/// `ifGenerationNotMatch=0` holds only while there is one.
///
/// For example:
/// ```swift
/// let createOnly = ObjectPreconditions(generationMatch: 0)
/// createOnly.evaluate(nil)       // nil: met
/// createOnly.evaluate(existing)  // .notMet (412)
/// ```
public struct ObjectPreconditions: Sendable, Equatable, Codable {
    public var generationMatch: Int64?
    public var generationNotMatch: Int64?
    public var metagenerationMatch: Int64?
    public var metagenerationNotMatch: Int64?
    /// The version the request names (`generation=`): only that version is the object; any other is none.
    public var generation: Int64?

    public init(
        generationMatch: Int64? = nil, generationNotMatch: Int64? = nil, metagenerationMatch: Int64? = nil,
        metagenerationNotMatch: Int64? = nil, generation: Int64? = nil
    ) {
        self.generationMatch = generationMatch
        self.generationNotMatch = generationNotMatch
        self.metagenerationMatch = metagenerationMatch
        self.metagenerationNotMatch = metagenerationNotMatch
        self.generation = generation
    }

    /// Whether no condition is set.
    public var isEmpty: Bool { self == ObjectPreconditions() }

    /// Why a request's conditions do not hold.
    public enum Failure: Sendable, Equatable {
        /// The named version is not the object there (404).
        case noSuchVersion
        /// An "if match" condition failed, or any condition of a change (412).
        case notMet
        /// A read's "if not match" condition failed: the client has this version (304).
        case notModified
    }

    /// The object as the request should see it: `object`, or nil when the request names another version.
    public func selecting(_ object: StoredObject?) -> StoredObject? {
        guard let generation else { return object }
        return object?.generation == generation ? object : nil
    }

    /// Whether the conditions hold for `object` (nil: there is none); nil when they do. For a read
    /// (`isRead`), a failed "not match" is ``Failure/notModified``; for a change every failure is
    /// ``Failure/notMet``.
    public func evaluate(_ object: StoredObject?, isRead: Bool = false) -> Failure? {
        if object != nil, selecting(object) == nil { return .noSuchVersion }
        let generationThere = object?.generation ?? 0
        if let generationMatch, generationThere != generationMatch { return .notMet }
        if let metagenerationMatch, object?.metageneration != metagenerationMatch { return .notMet }
        if generationNotMatch != nil || metagenerationNotMatch != nil, object == nil { return .notMet }
        if let generationNotMatch, generationThere == generationNotMatch { return isRead ? .notModified : .notMet }
        if let metagenerationNotMatch, object?.metageneration == metagenerationNotMatch { return isRead ? .notModified : .notMet }
        return nil
    }
}
