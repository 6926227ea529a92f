public import HearthCore

/// The query string of a REST request, parsed and validated with Firebase's error messages.
///
/// For example:
/// ```swift
/// let parameters = try RESTParameters(query: #"orderBy="height"&startAt=3&print=pretty"#)
/// #expect(parameters.query?.index == .child(try DatabasePath("height")))
/// ```
public struct RESTParameters: Sendable {
    public enum PrintMode: Sendable, Equatable {
        case compact
        case pretty
        case silent
    }

    public var namespace: String?
    /// `auth=` or `access_token=`.
    public var authToken: String?
    /// `auth_variable_override=` as JSON.
    public var authVariableOverride: JSONValue?
    public var print: PrintMode = .compact
    public var format: RenderFormat = .normal
    /// `format=strict` (used by the rules endpoint).
    public var strictFormat = false
    public var shallow = false
    public var download: String?
    public var callback: String?
    /// `timeout=`, in milliseconds.
    public var timeoutMilliseconds: Int?
    public var writeSizeLimit: WriteSizeLimit?
    public var methodOverride: String?
    /// The query, when any ordering or filtering parameter is present.
    public var query: Query?

    /// `writeSizeLimit=`: how much existing plus new data one write may touch, in leaves.
    public enum WriteSizeLimit: String, Sendable {
        case tiny, small, medium, large, unlimited

        /// The largest number of leaves (removed plus written) a write may touch.
        public var maximumLeaves: Int? {
            switch self {
            case .tiny: 10_000
            case .small: 100_000
            case .medium: 1_000_000
            case .large: 10_000_000
            case .unlimited: nil
            }
        }
    }

    public init() {}

    /// Parses a raw (percent-encoded) query string. `+` stays a literal plus, as Firebase clients expect.
    public init(query rawQuery: String) throws(RESTParameterError) {
        var raw: [String: String] = [:]
        for pair in rawQuery.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = PercentDecoding.decode(String(parts[0])) ?? String(parts[0])
            let value = parts.count > 1 ? (PercentDecoding.decode(String(parts[1])) ?? String(parts[1])) : ""
            raw[name] = value
        }
        try self.init(parameters: raw)
    }

    public init(parameters raw: [String: String]) throws(RESTParameterError) {
        // Most requests have no query: the defaults, without twenty lookups that all miss.
        guard !raw.isEmpty else { return }
        namespace = raw["ns"]
        authToken = raw["auth"] ?? raw["access_token"]
        if let override = raw["auth_variable_override"] {
            do {
                authVariableOverride = try JSONValue(parsing: override)
            } catch {
                throw RESTParameterError("auth_variable_override must be valid JSON")
            }
        }
        switch raw["print"] {
        case nil: break
        case "pretty": print = .pretty
        case "silent": print = .silent
        case let other?: throw RESTParameterError("print must be 'pretty' or 'silent', not '\(other)'")
        }
        switch raw["format"] {
        case nil: break
        case "export": format = .export
        case "strict": strictFormat = true
        case let other?: throw RESTParameterError("format must be 'export', not '\(other)'")
        }
        switch raw["shallow"] {
        case nil, "false": break
        case "true": shallow = true
        case let other?: throw RESTParameterError("shallow must be 'true' or 'false', not '\(other)'")
        }
        download = raw["download"]
        callback = raw["callback"]
        if let callback, !callback.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "$") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) || callback.isEmpty {
            throw RESTParameterError("callback must be a JavaScript identifier")
        }
        if let timeout = raw["timeout"] { timeoutMilliseconds = try RESTParameters.parseTimeout(timeout) }
        if let limit = raw["writeSizeLimit"] {
            guard let parsed = WriteSizeLimit(rawValue: limit) else {
                throw RESTParameterError("writeSizeLimit must be one of tiny, small, medium, large or unlimited")
            }
            writeSizeLimit = parsed
        }
        methodOverride = raw["x-http-method-override"]?.uppercased()
        query = try RESTParameters.parseQuery(raw, shallow: shallow)
    }

    static func parseTimeout(_ text: String) throws(RESTParameterError) -> Int {
        let units: [(suffix: String, factor: Int)] = [("ms", 1), ("min", 60_000), ("s", 1000)]
        for unit in units where text.hasSuffix(unit.suffix) {
            if let n = Int(text.dropLast(unit.suffix.count)), n >= 0 {
                // Multiplied with a check: a client's number can overflow `Int` (which would trap).
                let (ms, overflow) = n.multipliedReportingOverflow(by: unit.factor)
                guard !overflow, ms <= 900_000 else { throw RESTParameterError("timeout must be at most 15min") }
                return ms
            }
        }
        throw RESTParameterError("timeout must be a number followed by ms, s or min, such as 500ms")
    }

    static let filterNames = ["startAt", "startAfter", "endAt", "endBefore", "equalTo", "limitToFirst", "limitToLast"]

    static func parseQuery(_ raw: [String: String], shallow: Bool) throws(RESTParameterError) -> Query? {
        let hasFilters = filterNames.contains { raw[$0] != nil }
        guard let orderByText = raw["orderBy"] else {
            guard hasFilters else { return nil }
            if shallow { return try parseShallowPage(raw) }
            throw RESTParameterError("orderBy must be defined when other query parameters are defined")
        }
        if shallow { throw RESTParameterError("Mixing 'shallow' and querying parameters is not supported") }
        guard case .string(let orderBy)? = try? JSONValue(parsing: orderByText) else {
            throw RESTParameterError("orderBy must be a valid JSON encoded path")
        }
        var query = Query()
        switch orderBy {
        case "$key": query.index = .key
        case "$value": query.index = .value
        case "$priority": query.index = .priority
        default:
            do {
                let path = try DatabasePath(orderBy)
                guard !path.isRoot else { throw RESTParameterError("orderBy must be a valid JSON encoded path") }
                query.index = .child(path)
            } catch {
                throw RESTParameterError("orderBy must be a valid JSON encoded path")
            }
        }
        if raw["equalTo"] != nil,
            raw["startAt"] != nil || raw["endAt"] != nil || raw["startAfter"] != nil || raw["endBefore"] != nil
        {
            throw RESTParameterError("equalTo cannot be specified in addition to startAt, startAfter, endAt or endBefore")
        }
        if raw["startAt"] != nil && raw["startAfter"] != nil {
            throw RESTParameterError("startAt and startAfter cannot both be specified")
        }
        if raw["endAt"] != nil && raw["endBefore"] != nil {
            throw RESTParameterError("endAt and endBefore cannot both be specified")
        }
        if let text = raw["startAt"] { query.start = try parseBound(text, index: query.index, inclusive: true) }
        if let text = raw["startAfter"] { query.start = try parseBound(text, index: query.index, inclusive: false) }
        if let text = raw["endAt"] { query.end = try parseBound(text, index: query.index, inclusive: true) }
        if let text = raw["endBefore"] { query.end = try parseBound(text, index: query.index, inclusive: false) }
        if let text = raw["equalTo"] {
            let bound = try parseBound(text, index: query.index, inclusive: true)
            query.start = bound
            query.end = bound
        }
        query.limit = try parseLimit(raw)
        return query
    }

    static func parseLimit(_ raw: [String: String]) throws(RESTParameterError) -> Query.Limit? {
        switch (raw["limitToFirst"], raw["limitToLast"]) {
        case (nil, nil): return nil
        case (_?, _?): throw RESTParameterError("limitToFirst and limitToLast cannot both be specified")
        case (let first?, nil):
            guard let n = Int(first), n >= 0 else { throw RESTParameterError("limitToFirst must be a non-negative integer") }
            return .first(n)
        case (nil, let last?):
            guard let n = Int(last), n >= 0 else { throw RESTParameterError("limitToLast must be a non-negative integer") }
            return .last(n)
        }
    }

    /// `value` or `value,"key"`: a JSON primitive, optionally followed by a JSON string key name.
    static func parseBound(_ text: String, index: QueryIndex, inclusive: Bool) throws(RESTParameterError) -> Query.Bound {
        var text = text
        let parsed: (JSONValue, String?)? = text.withUTF8 { buffer in
            var parser = JSONParser(UnsafeRawBufferPointer(buffer))
            parser.skipWhitespace()
            guard let value = try? parser.parseValue(depth: 0) else { return nil }
            parser.skipWhitespace()
            var name: String?
            if parser.peek() == UInt8(ascii: ",") {
                parser.offset += 1
                parser.skipWhitespace()
                guard let key = try? parser.parseString() else { return nil }
                name = key
                parser.skipWhitespace()
            }
            guard parser.offset == buffer.count else { return nil }
            return (value, name)
        }
        guard let (value, name) = parsed, value.isPrimitive else {
            throw RESTParameterError("Constraint index field must be a JSON primitive")
        }
        guard let node = Node(primitive: value) else { throw RESTParameterError("Constraint index field must be a JSON primitive") }
        if index == .key {
            guard case .string = value else { throw RESTParameterError("Provided key index type is invalid, must be string") }
        }
        return Query.Bound(value: node, name: name.map(Query.BoundName.init), inclusive: inclusive)
    }

    /// `shallow=true` with paging parameters and no `orderBy` (as `firebase database:remove` sends):
    /// a key-ordered page whose bounds may be raw keys or JSON strings.
    static func parseShallowPage(_ raw: [String: String]) throws(RESTParameterError) -> Query {
        if raw["equalTo"] != nil || raw["limitToLast"] != nil || raw["endBefore"] != nil {
            throw RESTParameterError("Mixing 'shallow' and querying parameters is not supported")
        }
        var query = Query(index: .key)
        func key(_ text: String) -> Node {
            if case .string(let s)? = try? JSONValue(parsing: text) { return .leaf(.string(s)) }
            return .leaf(.string(text))
        }
        if let t = raw["startAt"] { query.start = .init(value: key(t), inclusive: true) }
        if let t = raw["startAfter"] { query.start = .init(value: key(t), inclusive: false) }
        if let t = raw["endAt"] { query.end = .init(value: key(t), inclusive: true) }
        query.limit = try parseLimit(raw)
        return query
    }
}

/// A bad query parameter: answered with HTTP 400 and the message.
public struct RESTParameterError: HearthError, Equatable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }
}
