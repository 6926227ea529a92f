import Dispatch
import Foundation
import HearthCore
import Synchronization

/// What a sign-in or sign-up returns, as FirebaseAuth's `AuthDataResult`.
public struct AuthDataResult: Sendable {
    public let user: User
}

/// The handle `addStateDidChangeListener` returns.
public typealias AuthStateDidChangeListenerHandle = UInt

/// Accounts on a Hearth server, as FirebaseAuth's `Auth`: sign up, sign in (email and password,
/// anonymously, with a custom token), sign out, and the signed-in user. The database the Auth
/// belongs to sends the user's ID token on its connection (and again after every refresh), so rules
/// see `auth.uid`; signing out sends `unauth`.
///
/// For example:
/// ```swift
/// Database.configure(url: "http://127.0.0.1:9000?ns=demo")
/// let result = try await Auth.auth().createUser(withEmail: "ada@example.com", password: "correct horse")
/// try await Database.database().reference(withPath: "users/\(result.user.uid)").setValue(["name": "Ada"])
/// ```
public final class Auth: Sendable {
    /// The database whose connection carries the user's token; its host serves the identity API.
    public let database: Database
    let clock: any HearthClock
    private let state = Mutex(State())

    private struct State {
        var user: User?
        var apiKey = "hearth"
        var emulatorOrigin: String?
        var transport: (any HTTPTransport)?
        var listeners: [UInt: @Sendable (Auth, User?) -> Void] = [:]
        var nextHandle: UInt = 1
        var streams: [UInt: AsyncStream<User?>.Continuation] = [:]
    }

    private static let instances = Mutex<[ObjectIdentifier: Auth]>([:])

    /// The Auth of the default database (``Database/database()``).
    public static func auth() -> Auth { auth(database: Database.database()) }

    /// The Auth of a database (one per database instance, created on first use).
    public static func auth(database: Database) -> Auth {
        instances.withLock { instances in
            if let existing = instances[ObjectIdentifier(database)] { return existing }
            let auth = Auth(database: database, clock: database.repo.clock)
            instances[ObjectIdentifier(database)] = auth
            return auth
        }
    }

    init(database: Database, clock: any HearthClock) {
        self.database = database
        self.clock = clock
        // A session kept by an earlier launch is the current user again; its token is refreshed on
        // first use (the connection asks for it).
        if let saved = loadSession() {
            state.withLock { $0.user = User(uid: saved.uid, auth: self, profile: saved.profile, tokens: saved.tokens) }
        }
        // A (re)connection asks for the current token, refreshed if it is about to expire.
        database.authTokenProvider = { [weak self] in
            guard let user = self?.currentUser else { return nil }
            return try? await user.getIDToken()
        }
    }

    /// The API key sent with every call (`key=`); a server configured with API keys refuses others.
    public var apiKey: String {
        get { state.withLock { $0.apiKey } }
        set { state.withLock { $0.apiKey = newValue } }
    }

    /// Sends identity calls to a local server or emulator instead of the database's host.
    public func useEmulator(withHost host: String, port: Int) {
        state.withLock { $0.emulatorOrigin = "http://\(host):\(port)" }
    }

    /// The transport identity calls go through: the database's (``Database/httpTransport``) unless a
    /// test replaces it.
    var transport: any HTTPTransport {
        get { state.withLock { $0.transport } ?? database.httpTransport }
        set { state.withLock { $0.transport = newValue } }
    }

    var client: IdentityClient {
        let (origin, key) = state.withLock { ($0.emulatorOrigin, $0.apiKey) }
        if let origin { return IdentityClient(origin: origin, apiKey: key, transport: transport) }
        let info = database.repo.state.withLock { $0.info }
        return IdentityClient(origin: "\(info.secure ? "https" : "http")://\(info.host):\(info.port)", apiKey: key, transport: transport)
    }

    /// The signed-in user, or nil.
    public var currentUser: User? { state.withLock { $0.user } }

    // MARK: Signing in and out

    /// Creates an account with an email and password and signs in as it.
    @discardableResult
    public func createUser(withEmail email: String, password: String) async throws -> AuthDataResult {
        try await signIn("accounts:signUp", [("email", .string(email)), ("password", .string(password)), ("returnSecureToken", .bool(true))])
    }

    @discardableResult
    public func signIn(withEmail email: String, password: String) async throws -> AuthDataResult {
        try await signIn("accounts:signInWithPassword", [("email", .string(email)), ("password", .string(password)), ("returnSecureToken", .bool(true))])
    }

    /// Signs in as a new anonymous account.
    @discardableResult
    public func signInAnonymously() async throws -> AuthDataResult {
        try await signIn("accounts:signUp", [("returnSecureToken", .bool(true))])
    }

    /// Signs in with a custom token minted by the server's admin (`firebase-admin`'s `create_custom_token`).
    @discardableResult
    public func signIn(withCustomToken token: String) async throws -> AuthDataResult {
        try await signIn("accounts:signInWithCustomToken", [("token", .string(token)), ("returnSecureToken", .bool(true))])
    }

    /// As ``createUser(withEmail:password:)``, with a completion handler.
    public func createUser(withEmail email: String, password: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?) {
        complete(completion) { try await self.createUser(withEmail: email, password: password) }
    }

    /// As ``signIn(withEmail:password:)``, with a completion handler.
    public func signIn(withEmail email: String, password: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?) {
        complete(completion) { try await self.signIn(withEmail: email, password: password) }
    }

    /// As ``signInAnonymously()``, with a completion handler.
    public func signInAnonymously(completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?) {
        complete(completion) { try await self.signInAnonymously() }
    }

    /// Signs out: the database connection drops the credential (`unauth`) and listeners hear `nil`.
    public func signOut() throws {
        guard let user = currentUser else { return }
        signedOut(user)
    }

    /// Asks the server to send a password-reset email.
    public func sendPasswordReset(withEmail email: String) async throws {
        _ = try await client.call("accounts:sendOobCode", [("requestType", .string("PASSWORD_RESET")), ("email", .string(email))])
    }

    private func signIn(_ operation: String, _ body: [(key: String, value: JSONValue)]) async throws -> AuthDataResult {
        let client = self.client
        let session = try IdentityClient.session(try await client.call(operation, body))
        let lookup = try await client.call("accounts:lookup", [("idToken", .string(session.idToken))])
        var profile = User.Profile()
        if case .object(let members) = lookup, case .array(let users)? = members.first(where: { $0.key == "users" })?.value, let record = users.first {
            profile = User.profile(of: record)
        }
        let user = User(uid: session.uid, auth: self, profile: profile, tokens: User.Tokens(idToken: "", refreshToken: "", expiry: 0))
        user.adopt(session)
        state.withLock { $0.user = user }
        saveSession(user)
        database.updateAuthToken(session.idToken)
        notify(user)
        return AuthDataResult(user: user)
    }

    private func complete(_ completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?, _ work: @escaping @Sendable () async throws -> AuthDataResult) {
        deliverResult(of: work, on: database.callbackQueue, to: completion)
    }

    // MARK: Changes

    /// A new ID token for the signed-in user: the database connection gets it.
    func tokenChanged(_ user: User) {
        guard state.withLock({ $0.user === user }) else { return }
        saveSession(user)
        database.updateAuthToken(user.tokens.withLock { $0.idToken })
    }

    func signedOut(_ user: User) {
        let changed = state.withLock { state -> Bool in
            guard state.user === user else { return false }
            state.user = nil
            return true
        }
        guard changed else { return }
        saveSession(nil)
        database.updateAuthToken(nil)
        notify(nil)
    }

    // MARK: The session across launches

    /// Where the signed-in session is kept when the database's persistence is on: on Apple platforms
    /// the keychain (``KeychainSessionStore``); elsewhere `auth-session.json` beside the cache
    /// (readable by the user only). It holds the refresh token: treat it as a password.
    var sessionFile: URL? {
        database.repo.state.withLock { state in
            guard state.persistenceEnabled else { return nil }
            return state.persistenceRoot.appendingPathComponent(state.info.storageName, isDirectory: true)
                .appendingPathComponent("auth-session.json")
        }
    }

    #if canImport(Security)
    /// The keychain item of this database's session, when the database's persistence is on.
    var sessionKeychain: KeychainSessionStore? {
        database.repo.state.withLock { state in
            state.persistenceEnabled ? KeychainSessionStore(account: state.info.storageName) : nil
        }
    }
    #endif

    private func saveSession(_ user: User?) {
        let data = user.map(Self.encodeSession)
        #if canImport(Security)
        guard let keychain = sessionKeychain else { return }
        if let data { keychain.write(data) } else { keychain.delete() }
        #else
        guard let file = sessionFile else { return }
        guard let data else {
            try? FileManager.default.removeItem(at: file)
            return
        }
        do {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: file, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        } catch {
            // The session still works; only its survival of a restart is lost.
        }
        #endif
    }

    /// The saved session of an earlier launch, if any.
    private func loadSession() -> (uid: String, profile: User.Profile, tokens: User.Tokens)? {
        #if canImport(Security)
        guard let data = sessionKeychain?.read() else { return nil }
        #else
        guard let file = sessionFile, let data = try? Data(contentsOf: file) else { return nil }
        #endif
        return Self.decodeSession(data)
    }

    private static func encodeSession(_ user: User) -> Data {
        let profile = user.profile.withLock { $0 }
        let members: [(key: String, value: JSONValue)] = [
            ("uid", .string(user.uid)), ("refreshToken", .string(user.refreshToken)),
            ("email", profile.email.map(JSONValue.string) ?? .null), ("displayName", profile.displayName.map(JSONValue.string) ?? .null),
            ("photoURL", profile.photoURL.map { .string($0.absoluteString) } ?? .null),
            ("emailVerified", .bool(profile.emailVerified)), ("isAnonymous", .bool(profile.isAnonymous)),
            ("record", profile.record ?? .null),
        ]
        return Data(JSONValue.object(members).jsonText.utf8)
    }

    private static func decodeSession(_ data: Data) -> (uid: String, profile: User.Profile, tokens: User.Tokens)? {
        guard let json = try? JSONValue(parsing: data), let uid = json.text("uid"), let refresh = json.text("refreshToken") else { return nil }
        var profile = User.Profile()
        profile.email = json.text("email")
        profile.displayName = json.text("displayName")
        profile.photoURL = json.text("photoURL").flatMap(URL.init(string:))
        profile.emailVerified = json.text("emailVerified") == "true"
        profile.isAnonymous = json.text("isAnonymous") == "true"
        if let record = json["record"], record != .null { profile.record = record }
        // No ID token yet: the first use refreshes it.
        return (uid, profile, User.Tokens(idToken: "", refreshToken: refresh, expiry: 0))
    }

    /// Calls `listener` now with the current user and after every sign-in and sign-out, on the
    /// database's callback queue.
    @discardableResult
    public func addStateDidChangeListener(_ listener: @escaping @Sendable (Auth, User?) -> Void) -> AuthStateDidChangeListenerHandle {
        let (handle, user) = state.withLock { state -> (UInt, User?) in
            let handle = state.nextHandle
            state.nextHandle += 1
            state.listeners[handle] = listener
            return (handle, state.user)
        }
        database.callbackQueue.async { listener(self, user) }
        return handle
    }

    public func removeStateDidChangeListener(_ handle: AuthStateDidChangeListenerHandle) {
        state.withLock { _ = $0.listeners.removeValue(forKey: handle) }
    }

    /// The signed-in user now and after every change, as an `AsyncSequence` (ends when the task that
    /// iterates it is cancelled). Buffers only the newest value: a slow reader sees the latest user.
    ///
    /// ```swift
    /// for await user in Auth.auth().authStates { print(user?.uid ?? "signed out") }
    /// ```
    public var authStates: AsyncStream<User?> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let handle = state.withLock { state -> UInt in
                let handle = state.nextHandle
                state.nextHandle += 1
                state.streams[handle] = continuation
                continuation.yield(state.user)
                return handle
            }
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.streams.removeValue(forKey: handle) }
            }
        }
    }

    private func notify(_ user: User?) {
        let (listeners, streams) = state.withLock { (Array($0.listeners.values), Array($0.streams.values)) }
        for stream in streams { stream.yield(user) }
        let queue = database.callbackQueue
        for listener in listeners { queue.async { listener(self, user) } }
    }
}
