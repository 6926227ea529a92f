import HearthStorage

extension ObjectPreconditions {
    /// The conditions of a Cloud Storage JSON API request's query: `ifGenerationMatch`, …, `generation`;
    /// with `source`, those on a copy's source (`ifSourceGenerationMatch`, …, `sourceGeneration`).
    /// A value that is not an integer is a 400.
    ///
    /// For example:
    /// ```swift
    /// try ObjectPreconditions(query: ["ifGenerationMatch": "0"]).generationMatch  // 0
    /// ```
    init(query: [String: String], source: Bool = false) throws(FilesError) {
        let prefix = source ? "ifSource" : "if"
        func number(_ name: String) throws(FilesError) -> Int64? {
            guard let text = query[name] else { return nil }
            guard let value = Int64(text), value >= 0 else {
                throw FilesError(400, "Invalid argument: \(name) must be a non-negative integer, not \"\(text)\".")
            }
            return value
        }
        self.init(
            generationMatch: try number(prefix + "GenerationMatch"), generationNotMatch: try number(prefix + "GenerationNotMatch"),
            metagenerationMatch: try number(prefix + "MetagenerationMatch"),
            metagenerationNotMatch: try number(prefix + "MetagenerationNotMatch"), generation: try number(source ? "sourceGeneration" : "generation")
        )
    }

    /// Throws Cloud Storage's answer when the conditions do not hold for `object` (nil: there is none);
    /// the caller answers 404 for a missing object where the request needs one.
    func check(_ object: StoredObject?, isRead: Bool = false) throws(FilesError) {
        switch evaluate(object, isRead: isRead) {
        case nil: return
        case .noSuchVersion?:
            throw FilesError(404, "No such object: \(object?.bucket ?? "")/\(object?.name ?? "")#\(generation ?? 0)")
        case .notMet?: throw FilesError.conditionNotMet
        case .notModified?: throw FilesError.notModified
        }
    }
}
