import Foundation
import HearthAccess
import HearthCore
import HearthStorage

/// The Identity Toolkit API's JSON, both ways: requests (``IdentityRequestBody``) decoded into the
/// typed requests of ``IdentityService``, and its results and errors encoded as the JSON Firebase
/// answers with, member for member: the same names, order and omissions, numbers where Firebase sends
/// numbers and strings where it sends strings (`expiresIn`, `createdAt`, `validSince`).
///
/// Decoding is lenient as Firebase is (``IdentityRequestBody``): a number where text is expected is
/// its text, a single string where a list is expected is a list of one, unknown fields are ignored.
///
/// For example:
/// ```swift
/// let request = IdentityToolkitCodec.signInWithPassword(body)
/// let json = IdentityToolkitCodec.verifyPasswordResponse(try await service.signInWithPassword(request, project: "demo"))
/// ```
enum IdentityToolkitCodec {
    // MARK: Requests

    static func signUp(_ body: IdentityRequestBody) -> SignUp.Request {
        var request = SignUp.Request(
            email: body.string("email"), password: body.string("password"), displayName: body.string("displayName"),
            localId: body.string("localId"), idToken: namedText(body, "idToken"), photoUrl: body.string("photoUrl"),
            phoneNumber: body.string("phoneNumber"), emailVerified: body.bool("emailVerified"),
            disabled: body.bool("disabled") ?? body.bool("disableUser")
        )
        request.namesLocalId = body.has("localId")
        request.isPasswordAccount = body.has("email") || body.has("password")
        return request
    }

    static func signInWithPassword(_ body: IdentityRequestBody) -> SignInWithPassword.Request {
        SignInWithPassword.Request(email: body.string("email"), password: body.string("password"))
    }

    static func signInWithCustomToken(_ body: IdentityRequestBody) -> SignInWithCustomToken.Request {
        SignInWithCustomToken.Request(token: body.string("token"))
    }

    static func signInWithEmailLink(_ body: IdentityRequestBody) -> SignInWithEmailLink.Request {
        SignInWithEmailLink.Request(oobCode: body.string("oobCode"), email: body.string("email"), idToken: namedText(body, "idToken"))
    }

    /// Form bodies send `grant_type` and `refresh_token`; ``IdentityRequestBody`` makes them camelCase.
    static func tokenRefresh(_ body: IdentityRequestBody) -> TokenRefresh.Request {
        TokenRefresh.Request(grantType: body.string("grantType"), refreshToken: body.string("refreshToken"))
    }

    static func accountLookup(_ body: IdentityRequestBody) -> AccountLookup.Request {
        var federatedIds: [AccountLookup.FederatedID] = []
        if case .array(let federated)? = body.fields["federatedUserId"] {
            federatedIds = federated.compactMap { id in
                guard let providerId = id["providerId"]?.stringValue, let rawId = id["rawId"]?.stringValue else { return nil }
                return AccountLookup.FederatedID(providerId: providerId, rawId: rawId)
            }
        }
        return AccountLookup.Request(
            idToken: namedText(body, "idToken"), localIds: body.strings("localId"), emails: body.strings("email"),
            phoneNumbers: body.strings("phoneNumber"), federatedIds: federatedIds
        )
    }

    static func accountUpdate(_ body: IdentityRequestBody) -> AccountUpdate.Request {
        var request = AccountUpdate.Request(
            idToken: body.string("idToken"), localId: body.string("localId"), oobCode: body.string("oobCode"), email: body.string("email"),
            password: body.string("password"), displayName: profileChange(body.fields["displayName"]),
            photoUrl: profileChange(body.fields["photoUrl"]), customAttributes: body.string("customAttributes"),
            phoneNumber: body.string("phoneNumber"), emailVerified: body.bool("emailVerified"), disableUser: body.bool("disableUser"),
            validSince: body.int64("validSince")
        )
        request.deleteAttributes = body.strings("deleteAttribute")
        request.deleteProviders = body.strings("deleteProvider")
        request.namesCustomAttributes = body.has("customAttributes")
        request.namesDisableUser = body.has("disableUser")
        return request
    }

    static func accountDeletion(_ body: IdentityRequestBody) -> AccountDeletion.Request {
        AccountDeletion.Request(idToken: body.string("idToken"), localId: body.string("localId"))
    }

    /// `GetOobCodeRequest.requestType`'s cases in the schema's order, for clients that send the index.
    static let oobRequestTypes = [
        "OOB_REQ_TYPE_UNSPECIFIED", "PASSWORD_RESET", "OLD_EMAIL_AGREE", "NEW_EMAIL_ACCEPT", "VERIFY_EMAIL", "RECOVER_EMAIL", "EMAIL_SIGNIN",
        "VERIFY_AND_CHANGE_EMAIL", "REVERT_SECOND_FACTOR_ADDITION",
    ]

    static func sendOobCode(_ body: IdentityRequestBody, apiKey: String?) -> SendOobCode.Request {
        SendOobCode.Request(
            requestType: body.enumeration("requestType", cases: oobRequestTypes), email: body.string("email"), idToken: body.string("idToken"),
            newEmail: body.string("newEmail"), continueUrl: body.string("continueUrl"), returnOobLink: body.bool("returnOobLink") == true,
            apiKey: apiKey
        )
    }

    static func passwordReset(_ body: IdentityRequestBody) -> PasswordReset.Request {
        PasswordReset.Request(oobCode: body.string("oobCode"), newPassword: body.string("newPassword"))
    }

    /// The query string of `accounts:batchGet`; a `maxResults` that is not a number is refused here.
    static func accountDownload(_ query: IdentityRequestBody) throws(IdentityError) -> AccountDownload.Request {
        var maxResults: Int?
        if let text = query.string("maxResults") {
            guard let value = Int(text) else { throw .invalidMaxResults }
            maxResults = value
        }
        return AccountDownload.Request(maxResults: maxResults, nextPageToken: query.string("nextPageToken"))
    }

    static func batchCreate(_ body: IdentityRequestBody) -> BatchCreate.Request {
        var users: [BatchCreate.ImportedUser]?
        if case .array(let entries)? = body.fields["users"] { users = entries.map(importedUser) }
        return BatchCreate.Request(
            users: users, hashAlgorithm: body.string("hashAlgorithm"), signerKey: body.string("signerKey"),
            saltSeparator: body.string("saltSeparator"), rounds: body.int64("rounds"), memoryCost: body.int64("memoryCost")
        )
    }

    /// One user of `accounts:batchCreate`, in Firebase's `auth:export` shape. Anything but an object
    /// is a user without fields (refused for its missing `localId`).
    static func importedUser(_ entry: JSONValue) -> BatchCreate.ImportedUser {
        var fields: [String: JSONValue] = [:]
        if case .object(let members) = entry {
            fields = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
        }
        let body = IdentityRequestBody(fields: fields)
        var providers: [BatchCreate.ImportedProvider]?
        // Provider entries are read strictly: only text counts.
        if case .array(let entries)? = body.fields["providerUserInfo"] {
            providers = entries.map { provider in
                BatchCreate.ImportedProvider(
                    providerId: provider["providerId"]?.stringValue, rawId: provider["rawId"]?.stringValue,
                    email: provider["email"]?.stringValue, displayName: provider["displayName"]?.stringValue,
                    photoUrl: provider["photoUrl"]?.stringValue
                )
            }
        }
        return BatchCreate.ImportedUser(
            localId: body.string("localId"), email: body.string("email"), emailVerified: body.bool("emailVerified"),
            displayName: body.string("displayName"), photoUrl: body.string("photoUrl"), disabled: body.bool("disabled"),
            createdAt: body.int64("createdAt"),
            // `lastSignedInAt` is the name in Firebase's `auth:export` files.
            lastLoginAt: body.int64("lastLoginAt") ?? body.int64("lastSignedInAt"),
            customAttributes: body.string("customAttributes"), phoneNumber: body.string("phoneNumber"), providers: providers,
            passwordHash: body.string("passwordHash"), salt: body.string("salt")
        )
    }

    static func batchDelete(_ body: IdentityRequestBody) -> BatchDelete.Request {
        BatchDelete.Request(localIds: body.strings("localIds"), force: body.bool("force") ?? false)
    }

    static func accountQuery(_ body: IdentityRequestBody) -> AccountQuery.Request {
        AccountQuery.Request(
            namesExpression: body.has("expression"), offset: body.int64("offset"), returnUserInfo: body.bool("returnUserInfo"),
            limit: body.int64("limit")
        )
    }

    static func sessionCookie(_ body: IdentityRequestBody) -> SessionCookie.Request {
        SessionCookie.Request(idToken: body.string("idToken"), validDuration: body.int64("validDuration"))
    }

    /// A field's text; empty when it was sent without text (an array, an object), nil when not sent.
    /// For the token fields whose presence alone chooses what an operation does.
    static func namedText(_ body: IdentityRequestBody, _ key: String) -> String? {
        body.has(key) ? body.string(key) ?? "" : nil
    }

    /// `displayName` / `photoUrl` in `accounts:update`: text sets it (empty text removes it), `null`
    /// removes it, anything else leaves it.
    static func profileChange(_ value: JSONValue?) -> AccountUpdate.ProfileChange? {
        switch value {
        case .string(let text)?: text.isEmpty ? .remove : .set(text)
        case .null?: .remove
        default: nil
        }
    }

    // MARK: Results

    static func signUpResponse(_ result: SignUp.Result) -> JSONValue {
        let user = result.user
        return .object(compact([
            ("kind", .string("identitytoolkit#SignupNewUserResponse")), ("localId", .string(user.localId)),
            ("email", user.email.map(JSONValue.string)), ("displayName", user.displayName.map(JSONValue.string)),
        ] + tokenMembers(result.tokens)))
    }

    static func verifyPasswordResponse(_ result: SignInResult) -> JSONValue {
        let user = result.user
        return .object(compact([
            ("kind", .string("identitytoolkit#VerifyPasswordResponse")), ("registered", .bool(true)),
            ("localId", .string(user.localId)), ("email", user.email.map(JSONValue.string)),
            ("displayName", .string(user.displayName ?? "")), ("profilePicture", user.photoUrl.map(JSONValue.string)),
        ] + tokenMembers(result.tokens)))
    }

    static func verifyCustomTokenResponse(_ result: SignInResult) -> JSONValue {
        .object(compact([
            ("kind", .string("identitytoolkit#VerifyCustomTokenResponse")), ("isNewUser", .bool(result.isNewUser)),
        ] + tokenMembers(result.tokens)))
    }

    static func emailLinkSigninResponse(_ result: SignInResult) -> JSONValue {
        let user = result.user
        return .object(compact([
            ("kind", .string("identitytoolkit#EmailLinkSigninResponse")), ("localId", .string(user.localId)),
            ("email", user.email.map(JSONValue.string)),
        ] + tokenMembers(result.tokens) + [("isNewUser", .bool(result.isNewUser))]))
    }

    /// The secure-token API's answer, in its snake_case names.
    static func tokenResponse(_ result: TokenRefresh.Result) -> JSONValue {
        .object([
            ("id_token", .string(result.tokens.idToken)), ("access_token", .string(result.tokens.idToken)),
            ("expires_in", .string(String(result.tokens.expiresIn))), ("refresh_token", .string(result.tokens.refreshToken)),
            ("token_type", .string("Bearer")), ("user_id", .string(result.localId)), ("project_id", .string("12345")),
        ])
    }

    /// No match: `users` is absent, which the admin SDKs read as "not found".
    static func getAccountInfoResponse(_ users: [UserRecord]) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("kind", .string("identitytoolkit#GetAccountInfoResponse"))]
        if !users.isEmpty { members.append(("users", .array(users.map(userInfo)))) }
        return .object(members)
    }

    static func setAccountInfoResponse(_ result: AccountUpdate.Result) -> JSONValue {
        switch result {
        case .updated(let user, let tokens):
            return .object(compact([
                ("kind", .string("identitytoolkit#SetAccountInfoResponse")), ("localId", .string(user.localId)),
                ("email", user.email.map(JSONValue.string)), ("displayName", user.displayName.map(JSONValue.string)),
                ("photoUrl", user.photoUrl.map(JSONValue.string)), ("emailVerified", .bool(user.emailVerified)),
                ("providerUserInfo", .array(providerUserInfo(user))),
                ("passwordHash", user.passwordHash == nil ? nil : .string(IdentityService.redactedPasswordHash)),
            ] + tokenMembers(tokens)))
        case .oobCodeApplied(let user):
            return .object(compact([
                ("kind", .string("identitytoolkit#SetAccountInfoResponse")), ("localId", .string(user.localId)),
                ("email", user.email.map(JSONValue.string)), ("emailVerified", .bool(user.emailVerified)),
                ("providerUserInfo", .array(providerUserInfo(user))),
            ]))
        }
    }

    static let deleteAccountResponse = JSONValue.object([("kind", .string("identitytoolkit#DeleteAccountResponse"))])

    static func getOobConfirmationCodeResponse(_ result: SendOobCode.Result) -> JSONValue {
        .object(compact([
            ("kind", .string("identitytoolkit#GetOobConfirmationCodeResponse")), ("email", .string(result.email)),
            ("oobLink", result.link.map { .string($0.oobLink) }), ("oobCode", result.link.map { .string($0.oobCode) }),
        ]))
    }

    static func resetPasswordResponse(_ result: PasswordReset.Result) -> JSONValue {
        .object(compact([
            ("kind", .string("identitytoolkit#ResetPasswordResponse")), ("email", result.email.map(JSONValue.string)),
            ("newEmail", result.newEmail.map(JSONValue.string)), ("requestType", .string(result.requestType)),
        ]))
    }

    static func downloadAccountResponse(_ result: AccountDownload.Result) -> JSONValue {
        .object(compact([
            ("kind", .string("identitytoolkit#DownloadAccountResponse")), ("users", .array(result.users.map(downloadedUserInfo))),
            ("nextPageToken", result.nextPageToken.map(JSONValue.string)),
        ]))
    }

    static func uploadAccountResponse(_ refusals: [BatchCreate.Refusal]) -> JSONValue {
        let errors = refusals.map { refusal -> JSONValue in .object([("index", .number(Double(refusal.index))), ("message", .string(refusal.message))]) }
        return .object(compact([
            ("kind", .string("identitytoolkit#UploadAccountResponse")), ("error", errors.isEmpty ? nil : .array(errors)),
        ]))
    }

    static func batchDeleteAccountsResponse(_ refusals: [BatchDelete.Refusal]) -> JSONValue {
        let errors = refusals.map { refusal -> JSONValue in
            .object([("index", .number(Double(refusal.index))), ("localId", .string(refusal.localId)), ("message", .string(refusal.message))])
        }
        return .object(compact([
            ("kind", .string("identitytoolkit#BatchDeleteAccountsResponse")), ("errors", errors.isEmpty ? nil : .array(errors)),
        ]))
    }

    static func queryAccountsResponse(_ result: AccountQuery.Result) -> JSONValue {
        .object(compact([("recordsCount", .string(String(result.count))), ("userInfo", result.users.map { .array($0.map(userInfo)) })]))
    }

    static func sessionCookieResponse(_ cookie: String) -> JSONValue {
        .object([("sessionCookie", .string(cookie))])
    }

    /// `GET /v1/projects`: what the web SDK asks before popup and redirect sign-ins.
    /// `authorizedDomains` are where a `continueUrl` may lead (``ActionLinks``); the action page asks
    /// for them before it follows one.
    static func projectConfig(authorizedDomains: [String]) -> JSONValue {
        .object([("projectId", .string("12345")), ("authorizedDomains", .array(authorizedDomains.map(JSONValue.string)))])
    }

    /// `idToken`, `refreshToken`, `expiresIn` (seconds, as a string), when there are tokens.
    static func tokenMembers(_ tokens: SessionTokens?) -> [(key: String, value: JSONValue?)] {
        guard let tokens else { return [] }
        return [
            ("idToken", .string(tokens.idToken)), ("refreshToken", .string(tokens.refreshToken)),
            ("expiresIn", .string(String(tokens.expiresIn))),
        ]
    }

    // MARK: Users

    /// A user as `accounts:lookup` and the admin listings return it (Firebase's `UserInfo`).
    static func userInfo(_ user: UserRecord) -> JSONValue {
        .object(compact([
            ("localId", .string(user.localId)), ("email", user.email.map(JSONValue.string)),
            ("emailVerified", .bool(user.emailVerified)), ("displayName", user.displayName.map(JSONValue.string)),
            ("photoUrl", user.photoUrl.map(JSONValue.string)), ("phoneNumber", user.phoneNumber.map(JSONValue.string)),
            ("passwordHash", user.passwordHash == nil ? nil : .string(IdentityService.redactedPasswordHash)),
            ("passwordUpdatedAt", user.passwordUpdatedAt.map { .number(Double($0)) }),
            ("providerUserInfo", .array(providerUserInfo(user))),
            ("validSince", user.validSince.map { .string(String($0)) }), ("disabled", .bool(user.disabled)),
            ("createdAt", .string(String(user.createdAt))), ("lastLoginAt", user.lastLoginAt.map { .string(String($0)) }),
            ("lastRefreshAt", user.lastRefreshAt.map { .string(IdentityService.rfc3339($0)) }),
            ("customAttributes", user.customAttributes.map(JSONValue.string)),
            ("customAuth", user.customAuth ? .bool(true) : nil), ("initialEmail", user.initialEmail.map(JSONValue.string)),
            ("emailLinkSignin", user.emailLinkSignin == true ? .bool(true) : nil),
        ]))
    }

    /// A user as an admin's download (`accounts:batchGet`, firebase-admin's `list_users`) shows it: as
    /// lookup does, plus the password's hash and salt in base64, which Firebase gives an admin so users
    /// can move elsewhere. For Hearth's scrypt they are the derived key and the salt (Firebase's
    /// `STANDARD_SCRYPT` with the cost in the stored hash, 32 bytes); for an imported Firebase hash, its
    /// hash and salt (Firebase's `SCRYPT` with the project's parameters).
    static func downloadedUserInfo(_ user: UserRecord) -> JSONValue {
        guard case .object(var members) = userInfo(user), let stored = user.passwordHash else { return userInfo(user) }
        let parts: (hash: [UInt8], salt: [UInt8])?
        if let parsed = PasswordHasher.parse(stored) {
            parts = (parsed.key, parsed.salt)
        } else if let imported = FirebaseScryptHash(stored) {
            parts = (imported.hash, imported.salt)
        } else {
            parts = nil
        }
        guard let parts, let index = members.firstIndex(where: { $0.key == "passwordHash" }) else { return .object(members) }
        members[index].value = .string(Data(parts.hash).base64EncodedString())
        members.insert((key: "salt", value: .string(Data(parts.salt).base64EncodedString())), at: index + 1)
        return .object(members)
    }

    static func providerUserInfo(_ user: UserRecord) -> [JSONValue] {
        var providers: [JSONValue] = []
        if let email = user.email, user.passwordHash != nil || user.emailLinkSignin == true {
            providers.append(.object(compact([
                ("providerId", .string("password")), ("email", .string(email)), ("federatedId", .string(email)), ("rawId", .string(email)),
                ("displayName", user.displayName.map(JSONValue.string)), ("photoUrl", user.photoUrl.map(JSONValue.string)),
            ])))
        }
        if let phone = user.phoneNumber {
            providers.append(.object([("providerId", .string("phone")), ("phoneNumber", .string(phone)), ("rawId", .string(phone))]))
        }
        for linked in user.linkedProviders ?? [] {
            providers.append(.object(compact([
                ("providerId", .string(linked.providerId)), ("rawId", .string(linked.rawId)), ("federatedId", .string(linked.rawId)),
                ("email", linked.email.map(JSONValue.string)), ("displayName", linked.displayName.map(JSONValue.string)),
                ("photoUrl", linked.photoUrl.map(JSONValue.string)),
            ])))
        }
        return providers
    }
}

extension IdentityError {
    /// The error in Firebase's envelope, with the status as `code`.
    var body: JSONValue {
        var entry: [(key: String, value: JSONValue)] = [("message", .string(code == 401 ? "Invalid Credentials" : message)), ("reason", .string(reason))]
        if reason != "notFound" { entry.append(("domain", .string("global"))) }
        if code == 401 {
            entry += [("location", .string("Authorization")), ("locationType", .string("header"))]
        }
        var error: [(key: String, value: JSONValue)] = [
            ("code", .number(Double(code))), ("message", .string(message)), ("errors", .array([.object(entry)])),
        ]
        if let status { error.append(("status", .string(status))) }
        return .object([("error", .object(error))])
    }
}
