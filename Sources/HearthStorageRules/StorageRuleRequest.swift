public import HearthCore

/// What a request does to an object, as Storage rules name it. `read` in rules means get and list;
/// `write` means create, update and delete.
///
/// For example: a download or a metadata read is `.get`, listing a folder `.list`, an upload `.create`
/// (`.update` when the object exists), a metadata PATCH `.update`, a DELETE `.delete`.
public enum StorageRuleMethod: String, Sendable, CaseIterable {
    case get, list, create, update, delete
}

/// One request, as the rules see it.
///
/// For example:
/// ```swift
/// let request = StorageRuleRequest(
///     method: .create, bucket: "demo.appspot.com", path: "images/ada/a.png",
///     auth: .object([(key: "uid", value: .string("ada"))]), time: 1_767_225_600,
///     requestResource: StorageObjectFields(name: "images/ada/a.png", bucket: "demo.appspot.com", size: 1024, contentType: "image/png"))
/// ```
public struct StorageRuleRequest: Sendable {
    public var method: StorageRuleMethod
    public var bucket: String
    /// Object name ("images/ada/a.png"); for list, the prefix without its trailing "/" ("" at the root).
    public var path: String
    /// null when unauthenticated, else {"uid": …, "token": {all ID-token claims}} (the server builds it).
    /// Whole numbers become ints in the rules (`request.auth.token.exp`), other numbers floats.
    public var auth: JSONValue
    /// Seconds since 1970.
    public var time: Double
    /// The existing object (`resource`), nil if none (and for list).
    public var resource: StorageObjectFields?
    /// The object as it would be after the write (`request.resource`), for create/update.
    public var requestResource: StorageObjectFields?

    public init(
        method: StorageRuleMethod,
        bucket: String,
        path: String,
        auth: JSONValue = .null,
        time: Double,
        resource: StorageObjectFields? = nil,
        requestResource: StorageObjectFields? = nil
    ) {
        self.method = method
        self.bucket = bucket
        self.path = path
        self.auth = auth
        self.time = time
        self.resource = resource
        self.requestResource = requestResource
    }
}

/// An object's fields as rules see them in `resource` and `request.resource`.
///
/// Absent optional fields read as null in rules; `metadata` is the custom metadata map.
///
/// For example:
/// ```swift
/// let photo = StorageObjectFields(name: "photos/p1.jpg", bucket: "demo.appspot.com", size: 2048,
///                                 contentType: "image/jpeg", metadata: ["owner": "ada"])
/// ```
public struct StorageObjectFields: Sendable, Equatable {
    public var name: String
    public var bucket: String
    public var size: Int64
    public var contentType: String?
    public var contentDisposition: String?
    public var contentEncoding: String?
    public var contentLanguage: String?
    public var cacheControl: String?
    public var metadata: [String: String]
    public var md5Hash: String?
    public var crc32c: String?
    public var etag: String?
    public var generation: Int64
    public var metageneration: Int64
    /// Seconds since 1970; timestamps in rules.
    public var timeCreated: Double
    public var updated: Double

    public init(
        name: String,
        bucket: String,
        size: Int64 = 0,
        contentType: String? = nil,
        contentDisposition: String? = nil,
        contentEncoding: String? = nil,
        contentLanguage: String? = nil,
        cacheControl: String? = nil,
        metadata: [String: String] = [:],
        md5Hash: String? = nil,
        crc32c: String? = nil,
        etag: String? = nil,
        generation: Int64 = 1,
        metageneration: Int64 = 1,
        timeCreated: Double = 0,
        updated: Double = 0
    ) {
        self.name = name
        self.bucket = bucket
        self.size = size
        self.contentType = contentType
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.contentLanguage = contentLanguage
        self.cacheControl = cacheControl
        self.metadata = metadata
        self.md5Hash = md5Hash
        self.crc32c = crc32c
        self.etag = etag
        self.generation = generation
        self.metageneration = metageneration
        self.timeCreated = timeCreated
        self.updated = updated
    }

    /// The map `resource` and `request.resource` evaluate to.
    var ruleValue: RuleValue {
        var map = RuleMap()
        func optional(_ value: String?) -> RuleValue { value.map(RuleValue.string) ?? .null }
        var custom = RuleMap()
        for key in metadata.keys.sorted() { custom[key] = .string(metadata[key]!) }
        map["name"] = .string(name)
        map["bucket"] = .string(bucket)
        map["size"] = .int(size)
        map["contentType"] = optional(contentType)
        map["contentDisposition"] = optional(contentDisposition)
        map["contentEncoding"] = optional(contentEncoding)
        map["contentLanguage"] = optional(contentLanguage)
        map["cacheControl"] = optional(cacheControl)
        map["metadata"] = .map(custom)
        map["md5Hash"] = optional(md5Hash)
        map["crc32c"] = optional(crc32c)
        map["etag"] = optional(etag)
        map["generation"] = .int(generation)
        map["metageneration"] = .int(metageneration)
        map["timeCreated"] = .timestamp(RuleTimestamp(unixTime: timeCreated))
        map["updated"] = .timestamp(RuleTimestamp(unixTime: updated))
        return .map(map)
    }
}

/// The `allow` statement that granted a request: where it is and what it says.
///
/// For example: `StorageRuleGrant(line: 5, column: 7, text: "allow read;")`, which prints as
/// `5:7: allow read;`.
public struct StorageRuleGrant: Sendable, Equatable, CustomStringConvertible {
    /// 1-based line and byte column of the `allow` keyword.
    public var line: Int
    public var column: Int
    /// The statement's source, whitespace collapsed: `allow read: if request.auth != null;`.
    public var text: String

    public init(line: Int, column: Int, text: String) {
        self.line = line
        self.column = column
        self.text = text
    }

    public var description: String { "\(line):\(column): \(text)" }
}

/// Whether the rules allow a request, and why.
///
/// For example:
/// ```swift
/// let decision = rules.evaluate(request)
/// if !decision.allowed { logger.info("denied: \(decision.explanation)") }
/// ```
public struct StorageRuleDecision: Sendable, Equatable {
    public var allowed: Bool
    /// The `allow` statement that granted access, nil when denied.
    public var grantedBy: StorageRuleGrant?
    /// For denials: a short explanation: "no rule allows get on /b/demo/o/images/a.png", or, when
    /// conditions were tried, the last one's failure with its place ("7:7: resource is null",
    /// "7:7: condition is false"). Empty when allowed.
    public var explanation: String

    public init(allowed: Bool, grantedBy: StorageRuleGrant? = nil, explanation: String = "") {
        self.allowed = allowed
        self.grantedBy = grantedBy
        self.explanation = explanation
    }
}
