public import HTTPTypes

extension HTTPFields {
    /// The value of the field `name`, as `self[name]` answers it (repeated fields joined by `, `), without
    /// making a new string when the field appears once, as it nearly always does: `self[name]` joins even
    /// one value into a copy, an allocation on every request for a bearer token.
    ///
    /// For example:
    /// ```swift
    /// let token = Authenticator.bearerToken(request.headers.value(of: .authorization))
    /// ```
    package func value(of name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}
