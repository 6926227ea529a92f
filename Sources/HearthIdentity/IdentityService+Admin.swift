import Foundation
import HearthAccess
import HearthCore
import HearthStorage

/// The admin-only calls over many users, and session cookies: `accounts:batchGet`, `accounts:batchDelete`,
/// `accounts:query`, `createSessionCookie`. (`accounts:batchCreate` is in IdentityService+Import.swift.)
extension IdentityService {
    /// `GET projects/{p}/accounts:batchGet?maxResults=&nextPageToken=`: users ordered by `localId`.
    func batchGet(_ request: AccountDownload.Request, project: String) async throws -> AccountDownload.Result {
        var limit = 20
        if let value = request.maxResults {
            guard value >= -1, value != 0, value <= 1000 else { throw IdentityError.invalidMaxResults }
            limit = value == -1 ? Int.max - 1 : value
        }
        let after = nonEmpty(request.nextPageToken)
        let page = try await store.users(project: project, after: after, limit: limit + 1)
        let users = Array(page.prefix(limit))
        let nextPageToken = page.count > limit ? users.last?.localId : nil
        return AccountDownload.Result(users: users, nextPageToken: nextPageToken)
    }

    /// `projects/{p}/accounts:batchDelete`: at most 1000 users; without `force`, only disabled ones.
    /// Returns the users not deleted and why.
    func batchDelete(_ request: BatchDelete.Request, project: String) async throws -> [BatchDelete.Refusal] {
        let localIds = request.localIds
        guard localIds.count <= 1000 else { throw IdentityError.invalid("LOCAL_ID_LIST_EXCEEDS_LIMIT") }
        var refusals: [BatchDelete.Refusal] = []
        for (index, localId) in localIds.enumerated() {
            if !request.force, let user = try await store.user(project: project, localId: localId), !user.disabled {
                refusals.append(BatchDelete.Refusal(index: index, localId: localId, message: "NOT_DISABLED : Disable the account before batch deletion."))
                continue
            }
            if try await store.delete(project: project, localId: localId) {
                signer.revocations?.update(project: project, uid: localId, validSince: nil, ended: true)
            }
        }
        return refusals
    }

    /// `projects/{p}/accounts:query`: the count and (by default) every user, ordered by `localId`.
    func query(_ request: AccountQuery.Request, project: String) async throws -> AccountQuery.Result {
        if request.namesExpression || (request.offset ?? 0) != 0 { throw IdentityError.notImplemented }
        let count = try await store.count(project: project)
        guard request.returnUserInfo ?? true else { return AccountQuery.Result(count: count, users: nil) }
        let limit = Int(request.limit ?? 500)
        guard (1...500).contains(limit) else { throw IdentityError.invalid("INVALID_ARGUMENT : limit must be between 1 and 500.") }
        let users = try await store.users(project: project, after: nil, limit: limit)
        return AccountQuery.Result(count: count, users: users)
    }

    /// `projects/{p}:createSessionCookie`: a long-lived JWT with the ID token's claims, for servers
    /// that keep a session in a cookie (`verify_session_cookie`). Signed by the server's key; the
    /// database does not accept it as a credential (its issuer is not the ID-token issuer).
    func createSessionCookie(_ request: SessionCookie.Request, project: String) async throws -> String {
        let now = OperationInstant()
        guard let idToken = request.idToken else { throw IdentityError.missingIDToken }
        let duration = request.validDuration ?? 1_209_600
        guard (300...1_209_600).contains(duration) else { throw IdentityError.invalid("INVALID_DURATION") }
        let (_, claims) = try await user(fromIDToken: idToken, project: project)
        guard case .object(let members) = claims else { throw IdentityError.invalidIDToken }
        var payload: [(key: String, value: JSONValue)] = [
            ("iss", .string("https://session.firebase.google.com/" + project)),
            ("iat", .number(Double(now.seconds))), ("exp", .number(Double(now.seconds + duration))),
        ]
        for member in members where !["iss", "iat", "exp"].contains(member.key) { payload.append(member) }
        return try signer.sign(payload: payload)
    }
}
