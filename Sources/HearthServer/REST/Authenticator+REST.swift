import HearthAccess
import HearthProtocol
import HTTPTypes

/// Who a REST request comes from, with failures in the REST API's error shape.
extension Authenticator {
    func identity(bearer: String?, parameters: RESTParameters) throws(RESTError) -> Identity {
        try authentication(bearer: bearer, parameters: parameters).identity
    }

    /// Who a REST request comes from, and until when its credential is valid.
    func authentication(bearer: String?, parameters: RESTParameters) throws(RESTError) -> Authentication {
        guard let token = bearer ?? parameters.authToken, !token.isEmpty else { return Authentication(identity: .anonymous) }
        do {
            return try authenticate(token, override: parameters.authVariableOverride)
        } catch .expired {
            throw RESTError(.unauthorized, "Auth token is expired")
        } catch .tooManyGuesses {
            throw RESTError(.tooManyRequests, Self.tooManyGuessesMessage)
        } catch {
            throw RESTError(.unauthorized, "Could not parse auth token.")
        }
    }
}
