/// Durable storage of users and refresh tokens, per project.
///
/// Every mutating call is atomic and durable: when it returns, the change survives a crash; when it
/// throws, nothing changed. Email uniqueness within a project is enforced by the store, so two
/// concurrent sign-ups with one address cannot both succeed.
///
/// Implementations: ``InMemoryUserStore`` (tests and `--in-memory`) and `SQLiteUserStore`.
///
/// For example:
/// ```swift
/// let store: any UserStore = InMemoryUserStore()
/// try await store.create(UserRecord(localId: "ada", createdAt: 0), project: "demo", issuing: nil)
/// let ada = try await store.user(project: "demo", localId: "ada")
/// ```
public protocol UserStore: Sendable {
    /// Adds a new user, and optionally a refresh token for it, in one transaction. A refresh token
    /// stored with a user takes the user's `tokenGeneration` (after the change, for updates).
    /// - Throws: ``UserStoreError/emailExists``, ``UserStoreError/localIdExists``.
    func create(_ user: UserRecord, project: String, issuing token: RefreshTokenRecord?) async throws
    /// Changes a user with `change` (which may throw to abandon the change), optionally adding a refresh
    /// token, in one transaction; returns the changed user.
    /// - Throws: ``UserStoreError/userNotFound``, ``UserStoreError/emailExists``, or what `change` throws.
    func update(
        project: String,
        localId: String,
        issuing token: RefreshTokenRecord?,
        _ change: @escaping @Sendable (inout UserRecord) throws -> Void
    ) async throws -> UserRecord
    /// Deletes a user and its refresh tokens; false when there was no such user.
    func delete(project: String, localId: String) async throws -> Bool
    /// Deletes every user of a project (the emulator's reset hook).
    func deleteAll(project: String) async throws

    func user(project: String, localId: String) async throws -> UserRecord?
    func user(project: String, email: String) async throws -> UserRecord?
    /// The user with this phone number (E.164, as stored); admin lookups only, so not indexed.
    func user(project: String, phoneNumber: String) async throws -> UserRecord?
    /// Up to `limit` users with `localId` greater than `after`, ordered by `localId`.
    func users(project: String, after: String?, limit: Int) async throws -> [UserRecord]
    func count(project: String) async throws -> Int

    func refreshToken(hash: String) async throws -> RefreshTokenRecord?

    /// Users whose tokens must be refused early: disabled ones and ones with revoked tokens
    /// (`tokenGeneration > 0`), across projects. Read once at start.
    func revocations() async throws -> [StoredRevocation]

    /// Moves users' `lastRefreshAt` forward (never back), many in one transaction: token refreshes are
    /// recorded in batches, not one synced write each. Users no longer stored are skipped.
    func recordRefreshes(_ refreshes: [UserRefresh]) async throws

    /// Keeps a sent email in the outbox (the newest 1,000 per project are kept).
    func recordEmail(_ message: EmailMessage) async throws
    /// The outbox of a project, newest first.
    func outbox(project: String, limit: Int) async throws -> [EmailMessage]
}

/// A token refresh of one user, to be recorded as its `lastRefreshAt`.
///
/// For example:
/// ```swift
/// try await store.recordRefreshes([UserRefresh(project: "demo", localId: "ada", at: 1_700_000_000_000)])
/// ```
public struct UserRefresh: Sendable, Equatable {
    public var project: String
    public var localId: String
    /// Milliseconds since 1970.
    public var at: Int64

    public init(project: String, localId: String, at: Int64) {
        self.project = project
        self.localId = localId
        self.at = at
    }
}

/// A user whose ID tokens end early, as the database must know it.
public struct StoredRevocation: Sendable, Equatable {
    public var project: String
    public var localId: String
    public var validSince: Int64?
    public var disabled: Bool

    public init(project: String, localId: String, validSince: Int64?, disabled: Bool) {
        self.project = project
        self.localId = localId
        self.validSince = validSince
        self.disabled = disabled
    }
}
