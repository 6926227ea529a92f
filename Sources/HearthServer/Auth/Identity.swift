public import HearthCore

/// Who makes a request, as the rules see it.
public enum Identity: Sendable, Equatable {
    /// The admin secret (or `owner` in emulator mode): bypasses rules.
    case admin
    /// No credential: `auth == null`.
    case anonymous
    /// A signed-in user (or `auth_variable_override`): the `auth` value the rules see.
    case user(JSONValue)

    public var isAdmin: Bool { self == .admin }
}
