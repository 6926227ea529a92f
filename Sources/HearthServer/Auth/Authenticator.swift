import Foundation
import HearthCore
import HearthProtocol
import HTTPTypes
import Synchronization

/// Decides who a request comes from, from its `Authorization: Bearer` header or `auth=` parameter.
///
/// The admin secret is admin. In emulator mode, `owner` is admin too, as in Firebase's emulator; in the
/// default mode it is just an unknown token. With an admin credential, `auth_variable_override` makes
/// the request act as the given `auth` value (`null` meaning unauthenticated).
struct Authenticator: Sendable {
    let adminSecret: AdminSecret?
    let emulatorMode: Bool
    let tokens: TokenSigner?
    /// Signature checks cost tens of microseconds; a client sends the same token many times.
    let verified = VerifiedTokenCache()

    func identity(bearer: String?, parameters: RESTParameters) throws(RESTError) -> Identity {
        guard let token = bearer ?? parameters.authToken, !token.isEmpty else { return .anonymous }
        let isAdmin = (adminSecret?.verify(token) ?? false) || (emulatorMode && token == "owner")
        guard isAdmin else {
            // Not admin: an ID token (signed by this server, or unsigned in emulator mode).
            guard let tokens else { throw RESTError(.unauthorized, "Could not parse auth token.") }
            do {
                return .user(try verified.auth(for: token, now: Date(), skew: tokens.allowedSkew) { token, now throws(TokenError) in
                    try tokens.verify(token, now: now, allowUnsigned: emulatorMode)
                })
            } catch .expired {
                throw RESTError(.unauthorized, "Auth token is expired")
            } catch {
                throw RESTError(.unauthorized, "Could not parse auth token.")
            }
        }
        switch parameters.authVariableOverride {
        case nil: return .admin
        case .null?: return .anonymous
        case let override?: return .user(override)
        }
    }

    /// The token from an `Authorization: Bearer <token>` header value.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingCharacters(in: .whitespaces)
    }
}

/// Tokens whose signature was already checked, with their `auth` and expiry. Bounded: emptied when full.
/// Expiry is checked on every use, so a cached token stops working when it expires.
final class VerifiedTokenCache: Sendable {
    struct Entry {
        var auth: JSONValue
        var expires: Double
    }

    private let entries = Mutex<[String: Entry]>([:])
    let capacity = 10_000

    func auth(
        for token: String,
        now: Date,
        skew: Double,
        verify: (String, Date) throws(TokenError) -> JSONValue
    ) throws(TokenError) -> JSONValue {
        let seconds = now.timeIntervalSince1970
        if let entry = entries.withLock({ $0[token] }) {
            guard entry.expires + skew > seconds else { throw TokenError.expired }
            return entry.auth
        }
        let auth = try verify(token, now)
        guard case .number(let expires)? = auth["token"]?["exp"] else { return auth }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = Entry(auth: auth, expires: expires)
        }
        return auth
    }
}
