import Foundation
import HearthCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Identity Toolkit and Secure Token REST calls the Auth client makes, on the server that also
/// serves the database (`/identitytoolkit.googleapis.com/v1/…`, `/securetoken.googleapis.com/v1/token`,
/// as the official SDKs call an emulator).
struct IdentityClient: Sendable {
    /// `http://host:port` (or `https://…`).
    var origin: String
    var apiKey: String
    /// The database's HTTP transport (``Database/httpTransport``), or a test's. Calls are not retried:
    /// a sign-up sent twice would answer `EMAIL_EXISTS`.
    var transport: any HTTPTransport
    /// Sent as the `X-Firebase-Locale` header (``Auth/languageCode``).
    var languageCode: String?
    /// Sent as `tenantId` in Identity Toolkit bodies (``Auth/tenantID``).
    var tenantID: String?

    /// What a sign-in or sign-up returns.
    struct Session: Sendable, Equatable {
        var uid: String
        var idToken: String
        var refreshToken: String
        /// Seconds the ID token lives.
        var expiresIn: Double
    }

    /// Calls an Identity Toolkit operation (`accounts:signUp`, …) with a JSON body.
    func call(_ operation: String, _ body: [(key: String, value: JSONValue)]) async throws -> JSONValue {
        try await post(
            "\(origin)/identitytoolkit.googleapis.com/v1/\(operation)?key=\(apiKey)",
            body: Data(JSONValue.object(body + (tenantID.map { [("tenantId", JSONValue.string($0))] } ?? [])).jsonText.utf8),
            contentType: "application/json"
        )
    }

    /// Exchanges a refresh token for a new ID token.
    func refresh(_ refreshToken: String) async throws -> Session {
        let form = "grant_type=refresh_token&refresh_token=" + PercentEncoding.component(refreshToken)
        let reply = try await post(
            "\(origin)/securetoken.googleapis.com/v1/token?key=\(apiKey)",
            body: Data(form.utf8), contentType: "application/x-www-form-urlencoded"
        )
        guard let uid = reply.text("user_id"), let idToken = reply.text("id_token"), let refresh = reply.text("refresh_token") else {
            throw AuthError(.internalError, "The token response lacks user_id, id_token or refresh_token")
        }
        return Session(uid: uid, idToken: idToken, refreshToken: refresh, expiresIn: Double(reply.text("expires_in") ?? "3600") ?? 3600)
    }

    /// The session in a sign-in or sign-up reply.
    static func session(_ reply: JSONValue) throws -> Session {
        guard let uid = reply.text("localId"), let idToken = reply.text("idToken"), let refresh = reply.text("refreshToken") else {
            throw AuthError(.internalError, "The reply lacks localId, idToken or refreshToken")
        }
        return Session(uid: uid, idToken: idToken, refreshToken: refresh, expiresIn: Double(reply.text("expiresIn") ?? "3600") ?? 3600)
    }

    private func post(_ address: String, body: Data, contentType: String) async throws -> JSONValue {
        guard let url = URL(string: address) else { throw AuthError(.internalError, "Invalid URL \(address)") }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        if let languageCode { request.setValue(languageCode, forHTTPHeaderField: "X-Firebase-Locale") }
        let data: Data
        let response: HTTPURLResponse
        do {
            (data, response) = try await transport.send(request)
        } catch {
            throw AuthError(.networkError, "\(error.localizedDescription)")
        }
        let status = response.statusCode
        let json = (try? JSONValue(parsing: data)) ?? .null
        guard (200..<300).contains(status) else {
            // Firebase's envelope: {"error": {"code": 400, "message": "EMAIL_EXISTS", …}}
            if case .object(let members) = json, case .object(let error)? = members.first(where: { $0.key == "error" })?.value,
               case .string(let message)? = error.first(where: { $0.key == "message" })?.value {
                throw AuthError(serverMessage: message)
            }
            throw AuthError(.internalError, "HTTP \(status) from \(url.path)")
        }
        return json
    }
}

extension JSONValue {
    /// A string member of an object (numbers and booleans as their text).
    func text(_ name: String) -> String? {
        guard case .object(let members) = self, let value = members.first(where: { $0.key == name })?.value else { return nil }
        switch value {
        case .string(let text): return text
        case .number(let number): return number == number.rounded() ? String(Int(number)) : String(number)
        case .bool(let flag): return String(flag)
        default: return nil
        }
    }
}
