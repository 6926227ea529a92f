import Foundation
import HearthCore
import HearthProtocol
import HTTPTypes

/// Decides who a request comes from, from its `Authorization: Bearer` header or `auth=` parameter.
///
/// The admin secret is admin. In emulator mode, `owner` is admin too, as in Firebase's emulator; in the
/// default mode it is just an unknown token. With an admin credential, `auth_variable_override` makes
/// the request act as the given `auth` value (`null` meaning unauthenticated).
struct Authenticator: Sendable {
    let adminSecret: AdminSecret?
    let emulatorMode: Bool
    let tokens: TokenSigner?

    func identity(bearer: String?, parameters: RESTParameters) throws(RESTError) -> Identity {
        guard let token = bearer ?? parameters.authToken, !token.isEmpty else { return .anonymous }
        let isAdmin = (adminSecret?.verify(token) ?? false) || (emulatorMode && token == "owner")
        guard isAdmin else {
            // Not admin: an ID token (signed by this server, or unsigned in emulator mode).
            guard let tokens else { throw RESTError(.unauthorized, "Could not parse auth token.") }
            do {
                return .user(try tokens.verify(token, now: Date(), allowUnsigned: emulatorMode))
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
