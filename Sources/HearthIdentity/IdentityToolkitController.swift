import Foundation
import HearthAccess
import HearthCore
import HearthStorage
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Serves Firebase Authentication's REST API on the database's port, at the paths the Auth emulator
/// uses (auth-storage.md §1, §3): `/identitytoolkit.googleapis.com/v1/…`, `/securetoken.googleapis.com/v1/token`,
/// the legacy `/www.googleapis.com/identitytoolkit/v3/relyingparty/…` names, and in emulator mode the
/// `/emulator/v1/projects/{p}/…` hooks.
///
/// Clients authenticate with an API key (`?key=` or `x-goog-api-key`); admin calls with
/// `Authorization: Bearer <admin secret>` (or `Bearer owner` in emulator mode). Every answer is JSON,
/// errors in Firebase's envelope, with CORS headers for browsers.
package struct IdentityToolkitController: Sendable {
    let service: IdentityService
    let adminSecret: AdminSecret?
    let emulatorMode: Bool
    /// The origin of the links in account emails and the authorized domains of `continueUrl`.
    let links: ActionLinks
    let logger: Logger
    /// The web console's sessions act as the admin too.
    var consoleSessions: ConsoleSessions?

    package init(
        service: IdentityService, adminSecret: AdminSecret?, emulatorMode: Bool, links: ActionLinks, logger: Logger,
        consoleSessions: ConsoleSessions? = nil
    ) {
        self.service = service
        self.adminSecret = adminSecret
        self.emulatorMode = emulatorMode
        self.links = links
        self.logger = logger
        self.consoleSessions = consoleSessions
    }

    var configuration: IdentityConfiguration { service.configuration }

    static let maximumBodyBytes = 1024 * 1024
    static let apiKeyHeader = HTTPField.Name("x-goog-api-key")!
    static let privateNetworkRequest = HTTPField.Name("Access-Control-Request-Private-Network")!
    static let privateNetworkAllow = HTTPField.Name("Access-Control-Allow-Private-Network")!

    /// v3 RPC names (the iOS SDK's) and their v1 operations.
    static let legacyNames: [String: String] = [
        "signupNewUser": "accounts:signUp", "verifyPassword": "accounts:signInWithPassword",
        "verifyCustomToken": "accounts:signInWithCustomToken", "getAccountInfo": "accounts:lookup",
        "setAccountInfo": "accounts:update", "deleteAccount": "accounts:delete",
        "getOobConfirmationCode": "accounts:sendOobCode", "resetPassword": "accounts:resetPassword",
        "createAuthUri": "accounts:createAuthUri", "emailLinkSignin": "accounts:signInWithEmailLink",
        "verifyAssertion": "accounts:signInWithIdp", "sendVerificationCode": "accounts:sendVerificationCode",
        "verifyPhoneNumber": "accounts:signInWithPhoneNumber", "signOutUser": "signOutUser",
        "uploadAccount": "accounts:batchCreate",
    ]

    /// Operations Firebase has that this server does not implement yet: 501, not 404.
    static let unimplemented: Set<String> = [
        "accounts:createAuthUri",
        "accounts:signInWithIdp", "accounts:sendVerificationCode", "accounts:signInWithPhoneNumber",
        "accounts:revokeToken", "signOutUser",
    ]

    package func register(on router: Router<HearthRequestContext>) {
        var prefixes = ["/identitytoolkit.googleapis.com/**", "/securetoken.googleapis.com/**", "/www.googleapis.com/identitytoolkit/v3/relyingparty/**"]
        if emulatorMode { prefixes.append("/emulator/v1/**") }
        for prefix in prefixes {
            for method: HTTPRequest.Method in [.get, .post, .patch, .delete, .options] {
                router.on(RouterPath(prefix), method: method) { request, context in await self.respond(to: request, context: context) }
            }
        }
    }

    func respond(to request: Request, context: HearthRequestContext) async -> Response {
        let origin = request.headers[.origin]
        if request.method == .options { return preflight(request) }
        do {
            return json(try await handle(request, address: clientAddress(request, context: context)), status: 200, origin: origin)
        } catch let error as IdentityError {
            return json(error.body, status: error.code, origin: origin)
        } catch let error as UserStoreError {
            switch error {
            case .emailExists: return json(IdentityError.emailExists.body, status: 400, origin: origin)
            case .localIdExists: return json(IdentityError.duplicateLocalID.body, status: 400, origin: origin)
            case .userNotFound: return json(IdentityError.userNotFound.body, status: 400, origin: origin)
            case .unavailable(let reason):
                context.logger.error("User store failed", metadata: ["hearth.error": "\(reason)"])
                return json(IdentityError(code: 500, message: "INTERNAL_ERROR", reason: "backendError").body, status: 500, origin: origin)
            }
        } catch {
            context.logger.error("Identity request failed", metadata: ["hearth.error": "\(error)"])
            return json(IdentityError(code: 500, message: "INTERNAL_ERROR", reason: "backendError").body, status: 500, origin: origin)
        }
    }

    /// What a request path names: the operation and the project named in the path, if any.
    struct Route: Equatable {
        var operation: String
        var project: String?
    }

    static func route(_ rawPath: String) -> Route? {
        let path = rawPath.removingPercentEncoding ?? rawPath
        if path == "/securetoken.googleapis.com/v1/token" { return Route(operation: "token") }
        if let name = path.dropPrefix("/www.googleapis.com/identitytoolkit/v3/relyingparty/") {
            return legacyNames[name].map { Route(operation: $0) }
        }
        if let rest = path.dropPrefix("/emulator/v1/projects/") {
            let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else { return nil }
            return Route(operation: "emulator/" + parts[1], project: String(parts[0]))
        }
        guard let rest = path.dropPrefix("/identitytoolkit.googleapis.com/v1/") else { return nil }
        guard let projectPath = rest.dropPrefix("projects/") else { return Route(operation: rest) }
        // projects/{p}/accounts:lookup, projects/{p}/accounts, projects/{p}:queryAccounts
        if let slash = projectPath.firstIndex(of: "/") {
            let project = String(projectPath[..<slash])
            let operation = String(projectPath[projectPath.index(after: slash)...])
            guard !project.isEmpty, !operation.contains("/") else { return nil }
            return Route(operation: operation, project: project)
        }
        if let colon = projectPath.firstIndex(of: ":") {
            return Route(operation: String(projectPath[colon...]), project: String(projectPath[..<colon]))
        }
        return nil
    }

    /// The Auth emulator's project configuration as `GET …/config` answers it.
    var emulatorConfig: JSONValue { service.emulatorConfig }

    func handle(_ request: Request, address: String? = nil) async throws -> JSONValue {
        guard let route = IdentityToolkitController.route(request.uri.path) else { throw IdentityError.notFound }
        let query = IdentityRequestBody(form: request.uri.query ?? "")

        // The emulator's hooks need no credential (they exist only in emulator mode).
        if route.operation.hasPrefix("emulator/"), let project = route.project {
            switch (route.operation, request.method) {
            case ("emulator/accounts", .delete):
                try await service.store.deleteAll(project: project)
                return .object([])
            case ("emulator/oobCodes", .get):
                let codes = service.oobCodes.pending(project: project, now: OperationInstant().millis).map { pending -> JSONValue in
                    .object(compact([
                        ("email", .string(pending.entry.recipient)), ("requestType", .string(pending.entry.requestType)),
                        ("oobCode", .string(pending.code)),
                        ("oobLink", .string(service.oobLink(code: pending.code, requestType: pending.entry.requestType, origin: links.origin))),
                    ]))
                }
                return .object([("oobCodes", .array(codes))])
            case ("emulator/config", .get):
                return emulatorConfig
            case ("emulator/config", .patch):
                // Only the fields sent change; a body with neither resets both (the emulator's rule).
                let body = try await self.body(of: request)
                let duplicates = body.fields["signIn"]?["allowDuplicateEmails"]
                let privacy = body.fields["emailPrivacyConfig"]?["enableImprovedEmailPrivacy"]
                if case .bool(true)? = duplicates {
                    throw IdentityError(
                        code: 400, message: "INVALID_ARGUMENT : allowDuplicateEmails is not supported: Hearth keeps one account per email",
                        reason: "invalid", status: "INVALID_ARGUMENT"
                    )
                }
                switch privacy {
                case .bool(let enabled)?: service.emulatorSettings.improvedEmailPrivacy = enabled
                case nil where duplicates == nil: service.emulatorSettings.improvedEmailPrivacy = false
                default: break
                }
                return emulatorConfig
            default:
                throw IdentityError.notFound
            }
        }

        let caller = try self.caller(request, query: query)
        let project = try self.project(route.project, caller: caller)
        if IdentityToolkitController.unimplemented.contains(route.operation) {
            throw IdentityError.notImplemented
        }
        let body = request.method == .get ? query : try await self.body(of: request)
        // The app's key, for the links of the mails an operation sends.
        let apiKey = query.string("key") ?? request.headers[IdentityToolkitController.apiKeyHeader]

        typealias Codec = IdentityToolkitCodec
        switch (route.operation, request.method) {
        case ("token", .post):
            return Codec.tokenResponse(try await service.refresh(Codec.tokenRefresh(body), project: project))
        case ("accounts:signUp", .post):
            let signedUp = try await service.signUp(Codec.signUp(body), project: project, caller: caller, address: address, links: links, apiKey: apiKey)
            return Codec.signUpResponse(signedUp)
        case ("accounts", .post) where route.project != nil:
            try requireAdmin(caller)
            return Codec.signUpResponse(try await service.signUp(Codec.signUp(body), project: project, caller: .admin))
        case ("accounts:signInWithPassword", .post):
            return Codec.verifyPasswordResponse(try await service.signInWithPassword(Codec.signInWithPassword(body), project: project, address: address))
        case ("accounts:signInWithCustomToken", .post):
            return Codec.verifyCustomTokenResponse(try await service.signInWithCustomToken(Codec.signInWithCustomToken(body), project: project))
        case ("accounts:lookup", .post):
            return Codec.getAccountInfoResponse(try await service.lookup(Codec.accountLookup(body), project: project, caller: caller))
        case ("accounts:sendOobCode", .post), (":sendOobCode", .post):
            let sent = try await service.sendOobCode(Codec.sendOobCode(body, apiKey: apiKey), project: project, caller: caller, links: links, address: address)
            return Codec.getOobConfirmationCodeResponse(sent)
        case ("accounts:signInWithEmailLink", .post):
            return Codec.emailLinkSigninResponse(try await service.signInWithEmailLink(Codec.signInWithEmailLink(body), project: project))
        case ("accounts:resetPassword", .post):
            return Codec.resetPasswordResponse(try await service.resetPassword(Codec.passwordReset(body), project: project))
        case ("accounts:update", .post):
            let update = try await service.update(Codec.accountUpdate(body), project: project, caller: caller, address: address, links: links, apiKey: apiKey)
            return Codec.setAccountInfoResponse(update)
        case ("accounts:delete", .post):
            try await service.delete(Codec.accountDeletion(body), project: project, caller: caller)
            return Codec.deleteAccountResponse
        case ("accounts:batchGet", .get):
            try requireAdmin(caller)
            return Codec.downloadAccountResponse(try await service.batchGet(Codec.accountDownload(query), project: project))
        case ("accounts:batchCreate", .post):
            try requireAdmin(caller)
            return Codec.uploadAccountResponse(try await service.batchCreate(Codec.batchCreate(body), project: project))
        case ("accounts:batchDelete", .post):
            try requireAdmin(caller)
            return Codec.batchDeleteAccountsResponse(try await service.batchDelete(Codec.batchDelete(body), project: project))
        case ("accounts:query", .post), (":queryAccounts", .post):
            try requireAdmin(caller)
            return Codec.queryAccountsResponse(try await service.query(Codec.accountQuery(body), project: project))
        case (":createSessionCookie", .post):
            try requireAdmin(caller)
            return Codec.sessionCookieResponse(try await service.createSessionCookie(Codec.sessionCookie(body), project: project))
        case ("projects", .get):
            return Codec.projectConfig(authorizedDomains: links.authorizedDomains)
        default:
            throw IdentityError.notFound
        }
    }

    /// The client's IP address, which the per-address limits count under: the connection's peer, or with
    /// ``IdentityConfiguration/trustForwardedFor`` the last `X-Forwarded-For` entry (appended by the
    /// proxy in front; earlier entries come from the client and could be anything).
    func clientAddress(_ request: Request, context: HearthRequestContext) -> String? {
        RequestClient.address(of: request, remote: context.remoteAddress?.ipAddress, trustForwardedFor: configuration.trustForwardedFor)
    }

    /// The last address of one or more `X-Forwarded-For` fields (`client, proxy1, proxy2`), or nil when empty.
    static func lastForwardedAddress(_ fields: [String]) -> String? {
        RequestClient.lastForwardedAddress(fields)
    }

    /// Admin with the admin secret (or `owner` in emulator mode) as a Bearer token; otherwise a client
    /// with an API key. Any other Bearer token is refused, as Google does. A client address that sent
    /// too many wrong secrets (anywhere) is refused with `TOO_MANY_ATTEMPTS_TRY_LATER` (429).
    func caller(_ request: Request, query: IdentityRequestBody) throws -> IdentityCaller {
        if let token = Authenticator.bearerToken(request.headers[.authorization]) {
            if (emulatorMode && token.lowercased() == "owner") || consoleSessions?.isValid(token) == true { return .admin }
            if let adminSecret {
                switch RequestClient.checkAdminSecret(token, against: adminSecret) {
                case .admin: return .admin
                case .locked: throw IdentityError.tooManyAdminSecretGuesses
                case .notAdmin: break
                }
            }
            throw IdentityError.badCredentials
        }
        guard let key = nonEmpty(query.string("key") ?? request.headers[IdentityToolkitController.apiKeyHeader]) else {
            throw IdentityError.missingAPIKey
        }
        if !emulatorMode, !configuration.apiKeys.isEmpty, !configuration.apiKeys.contains(key) { throw IdentityError.invalidAPIKey }
        return .client
    }

    /// The project a request acts on: the one in its path (admin only; in the default mode it must be the
    /// server's), else the server's.
    func project(_ named: String?, caller: IdentityCaller) throws -> String {
        guard let named else { return configuration.projectID }
        guard caller == .admin else {
            throw IdentityError.invalid("INSUFFICIENT_PERMISSION : Only authenticated requests can specify target_project_id.")
        }
        if !emulatorMode, named != configuration.projectID { throw IdentityError.invalid("CONFIGURATION_NOT_FOUND") }
        return named
    }

    func requireAdmin(_ caller: IdentityCaller) throws {
        guard caller == .admin else { throw IdentityError.adminOnly }
    }

    func body(of request: Request) async throws -> IdentityRequestBody {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: IdentityToolkitController.maximumBodyBytes)
        } catch {
            throw IdentityError(code: 413, message: "Request body too large", reason: "invalid", status: "INVALID_ARGUMENT")
        }
        let bytes = Array(buffer.readableBytesView)
        if request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true {
            return IdentityRequestBody(form: String(decoding: bytes, as: UTF8.self))
        }
        return try IdentityRequestBody(json: bytes)
    }

    // MARK: Responses

    func json(_ value: JSONValue, status: Int, origin: String?) -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let origin {
            headers[.accessControlAllowOrigin] = origin
            headers[.vary] = "Origin"
        }
        return Response(status: HTTPResponse.Status(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: value.jsonText)))
    }

    /// CORS preflight: the origin and requested headers reflected, 204, as the Auth emulator answers.
    func preflight(_ request: Request) -> Response {
        var headers: HTTPFields = [
            .accessControlAllowOrigin: request.headers[.origin] ?? "*",
            .accessControlAllowMethods: "GET, POST, PATCH, DELETE, OPTIONS",
            .accessControlMaxAge: "86400",
            .vary: "Origin",
        ]
        if let requested = request.headers[.accessControlRequestHeaders] { headers[.accessControlAllowHeaders] = requested }
        if request.headers[IdentityToolkitController.privateNetworkRequest] != nil {
            headers[IdentityToolkitController.privateNetworkAllow] = "true"
        }
        return Response(status: .noContent, headers: headers)
    }
}

extension String {
    /// The rest of the string after `prefix`, or nil when it does not start with it.
    func dropPrefix(_ prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}
