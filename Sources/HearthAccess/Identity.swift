public import HearthCore
public import HearthRules

/// Who makes a request, as the rules see it.
public enum Identity: Sendable, Equatable {
    /// The admin secret (or `owner` in emulator mode): bypasses rules.
    case admin
    /// No credential: `auth == null`.
    case anonymous
    /// A signed-in user (or `auth_variable_override`): the `auth` value the rules see.
    case user(JSONValue)

    public var isAdmin: Bool { self == .admin }

    /// Who the rules see: admin bypasses them; everyone else is an `auth` value (`null` when anonymous).
    public var ruleSubject: RulesDocument.Subject {
        switch self {
        case .admin: .admin
        case .anonymous: .auth(.null)
        case .user(let auth): .auth(auth)
        }
    }
}
