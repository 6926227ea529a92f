import Foundation
import HearthCore

/// An ID token with what it says, as FirebaseAuth's `AuthTokenResult`: when it was issued and
/// expires, when the user signed in and how, and every claim (custom claims included).
///
/// For example:
/// ```swift
/// let result = try await Auth.auth().currentUser!.getIDTokenResult()
/// if result.claims["admin"] as? Bool == true { showAdminTools() }
/// print(result.signInProvider, result.expirationDate)
/// ```
///
/// A class, as Firebase's; immutable, and its claims hold only JSON values (strings, numbers, Booleans,
/// `NSNull`, arrays and dictionaries of them), which is why it may be shared across tasks.
public final class AuthTokenResult: @unchecked Sendable {
    /// The ID token itself.
    public let token: String
    public let expirationDate: Date
    /// When the user signed in (the `auth_time` claim).
    public let authDate: Date
    public let issuedAtDate: Date
    /// `password`, `anonymous`, `custom`, … (`firebase.sign_in_provider`).
    public let signInProvider: String
    /// The second factor used, if any (`firebase.sign_in_second_factor`).
    public let signInSecondFactor: String
    /// Every claim of the token, as Foundation values.
    public let claims: [String: Any]

    init(token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URLDecoded(parts[1]), case .object(let members)? = try? JSONValue(parsing: payload) else {
            throw AuthError(.internalError, "The ID token is malformed")
        }
        func seconds(_ name: String) -> Date {
            if case .number(let value)? = members.first(where: { $0.key == name })?.value { return Date(timeIntervalSince1970: value) }
            return Date(timeIntervalSince1970: 0)
        }
        let firebase = members.first { $0.key == "firebase" }?.value
        self.token = token
        expirationDate = seconds("exp")
        authDate = seconds("auth_time")
        issuedAtDate = seconds("iat")
        signInProvider = firebase?["sign_in_provider"]?.stringValue ?? ""
        signInSecondFactor = firebase?["sign_in_second_factor"]?.stringValue ?? ""
        var claims: [String: Any] = [:]
        for (key, value) in members { claims[key] = Self.foundation(value) }
        self.claims = claims
    }

    static func foundation(_ value: JSONValue) -> Any {
        switch value {
        case .null: NSNull()
        case .bool(let flag): flag
        case .number(let number): number == number.rounded() && abs(number) < 9_007_199_254_740_992 ? Int(number) as Any : number
        case .string(let text): text
        case .array(let items): items.map(foundation)
        case .object(let members): Dictionary(members.map { ($0.key, foundation($0.value)) }, uniquingKeysWith: { _, last in last })
        }
    }

    static func base64URLDecoded(_ text: Substring) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard)
    }
}

extension User {
    /// The ID token and its claims, refreshed first as ``getIDToken(forcingRefresh:)`` does.
    public func getIDTokenResult(forcingRefresh: Bool = false) async throws -> AuthTokenResult {
        try AuthTokenResult(token: try await getIDToken(forcingRefresh: forcingRefresh))
    }

    /// As ``getIDTokenResult(forcingRefresh:)``, with a completion handler.
    public func getIDTokenResult(forcingRefresh: Bool = false, completion: (@Sendable (AuthTokenResult?, (any Error)?) -> Void)?) {
        deliverResult(of: { try await self.getIDTokenResult(forcingRefresh: forcingRefresh) }, on: auth.database.callbackQueue, to: completion)
    }
}
