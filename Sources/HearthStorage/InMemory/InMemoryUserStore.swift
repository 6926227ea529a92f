import Synchronization

/// Users kept in memory only: for tests and `hearth serve --in-memory`.
public final class InMemoryUserStore: UserStore {
    private struct Project {
        var users: [String: UserRecord] = [:]
        var byEmail: [String: String] = [:]
    }

    private struct State {
        var projects: [String: Project] = [:]
        var refreshTokens: [String: RefreshTokenRecord] = [:]
        var outbox: [EmailMessage] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func create(_ user: UserRecord, project: String, issuing token: RefreshTokenRecord?) async throws {
        try state.withLock { state throws(UserStoreError) in
            var users = state.projects[project] ?? Project()
            guard users.users[user.localId] == nil else { throw .localIdExists }
            if let email = user.email, users.byEmail[email] != nil { throw .emailExists }
            users.users[user.localId] = user
            if let email = user.email { users.byEmail[email] = user.localId }
            state.projects[project] = users
            if var token {
                token.generation = user.tokenGeneration
                state.refreshTokens[token.tokenHash] = token
            }
        }
    }

    public func update(
        project: String,
        localId: String,
        issuing token: RefreshTokenRecord?,
        _ change: @escaping @Sendable (inout UserRecord) throws -> Void
    ) async throws -> UserRecord {
        try state.withLock { state in
            guard var users = state.projects[project], let old = users.users[localId] else { throw UserStoreError.userNotFound }
            var user = old
            try change(&user)
            user.localId = old.localId
            if let email = user.email, email != old.email, users.byEmail[email] != nil { throw UserStoreError.emailExists }
            if let email = old.email { users.byEmail[email] = nil }
            if let email = user.email { users.byEmail[email] = localId }
            users.users[localId] = user
            state.projects[project] = users
            if var token {
                token.generation = user.tokenGeneration
                state.refreshTokens[token.tokenHash] = token
            }
            return user
        }
    }

    public func delete(project: String, localId: String) async throws -> Bool {
        state.withLock { state in
            guard let user = state.projects[project]?.users.removeValue(forKey: localId) else { return false }
            if let email = user.email { state.projects[project]?.byEmail[email] = nil }
            state.refreshTokens = state.refreshTokens.filter { !($0.value.project == project && $0.value.localId == localId) }
            return true
        }
    }

    public func deleteAll(project: String) async throws {
        state.withLock { state in
            state.projects[project] = nil
            state.refreshTokens = state.refreshTokens.filter { $0.value.project != project }
        }
    }

    public func user(project: String, localId: String) async throws -> UserRecord? {
        state.withLock { $0.projects[project]?.users[localId] }
    }

    public func user(project: String, email: String) async throws -> UserRecord? {
        state.withLock { state in
            state.projects[project]?.byEmail[email].flatMap { state.projects[project]?.users[$0] }
        }
    }

    public func user(project: String, phoneNumber: String) async throws -> UserRecord? {
        state.withLock { state in
            state.projects[project]?.users.values.filter { $0.phoneNumber == phoneNumber }.min { $0.localId < $1.localId }
        }
    }

    public func users(project: String, after: String?, limit: Int) async throws -> [UserRecord] {
        state.withLock { state in
            let all = (state.projects[project]?.users.values).map(Array.init) ?? []
            return Array(all.filter { after == nil || $0.localId > after! }.sorted { $0.localId < $1.localId }.prefix(limit))
        }
    }

    public func count(project: String) async throws -> Int {
        state.withLock { $0.projects[project]?.users.count ?? 0 }
    }

    public func refreshToken(hash: String) async throws -> RefreshTokenRecord? {
        state.withLock { $0.refreshTokens[hash] }
    }

    public func revocations() async throws -> [StoredRevocation] {
        state.withLock { state in
            state.projects.flatMap { project, users in
                users.users.values.filter { $0.disabled || $0.tokenGeneration > 0 }.map {
                    StoredRevocation(project: project, localId: $0.localId, validSince: $0.validSince, disabled: $0.disabled)
                }
            }
        }
    }

    public func recordEmail(_ message: EmailMessage) async throws {
        state.withLock { state in
            state.outbox.append(message)
            let ofProject = state.outbox.filter { $0.project == message.project }
            if ofProject.count > 1000, let oldest = ofProject.first, let index = state.outbox.firstIndex(of: oldest) {
                state.outbox.remove(at: index)
            }
        }
    }

    public func recordRefreshes(_ refreshes: [UserRefresh]) async throws {
        state.withLock { state in
            for refresh in refreshes {
                guard var user = state.projects[refresh.project]?.users[refresh.localId] else { continue }
                user.lastRefreshAt = max(user.lastRefreshAt ?? 0, refresh.at)
                state.projects[refresh.project]?.users[refresh.localId] = user
            }
        }
    }

    public func outbox(project: String, limit: Int) async throws -> [EmailMessage] {
        state.withLock { Array($0.outbox.filter { $0.project == project }.reversed().prefix(limit)) }
    }
}
