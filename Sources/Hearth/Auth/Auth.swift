import Dispatch
import Foundation
import HearthCore
import Synchronization

/// What a sign-in or sign-up returns, as FirebaseAuth's `AuthDataResult`.
public final class AuthDataResult: Sendable {
    public let user: User
    /// Whether the sign-in made the account, and its provider.
    public let additionalUserInfo: AdditionalUserInfo?
    /// The identity provider's credential: always nil in Hearth (no sign-in goes through one).
    public let credential: OAuthCredential?

    init(user: User, additionalUserInfo: AdditionalUserInfo? = nil, credential: OAuthCredential? = nil) {
        self.user = user
        self.additionalUserInfo = additionalUserInfo
        self.credential = credential
    }
}

/// The handle `addStateDidChangeListener` returns, as FirebaseAuth's: an object to keep and hand back.
public typealias AuthStateDidChangeListenerHandle = any NSObjectProtocol

/// The handle `addIDTokenDidChangeListener` returns.
public typealias IDTokenDidChangeListenerHandle = any NSObjectProtocol

/// The object behind a listener handle: its number in the ``Auth``'s listeners.
final class AuthListenerHandle: NSObject, @unchecked Sendable {
    // @unchecked: immutable.
    let number: UInt
    init(_ number: UInt) { self.number = number }
}

/// Settings of an ``Auth``, as FirebaseAuth's `AuthSettings`.
///
/// Hearth verifies no app (it has no phone sign-in), so the flag changes nothing; it is kept for
/// code that sets it in tests:
/// ```swift
/// Auth.auth().settings?.isAppVerificationDisabledForTesting = true
/// ```
public final class AuthSettings: @unchecked Sendable {
    private let disabled = Mutex(false)

    public init() {}

    /// Whether app verification is off for testing.
    public var appVerificationDisabledForTesting: Bool {
        get { disabled.withLock { $0 } }
        set { disabled.withLock { $0 = newValue } }
    }

    /// As ``appVerificationDisabledForTesting``.
    public var isAppVerificationDisabledForTesting: Bool {
        get { appVerificationDisabledForTesting }
        set { appVerificationDisabledForTesting = newValue }
    }
}

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
    /// Held across a change of the signed-in user or of their token and its effects (the saved
    /// session, the database's credential, the listeners' calls), so that those effects happen in the
    /// order of the changes: a token refresh that finishes during a sign-out cannot bring the user back.
    private let transitions = Mutex(())

    private struct State {
        var user: User?
        var apiKey = "hearth"
        var emulatorOrigin: String?
        var transport: (any HTTPTransport)?
        var listeners: [UInt: @Sendable (Auth, User?) -> Void] = [:]
        var tokenListeners: [UInt: @Sendable (Auth, User?) -> Void] = [:]
        var languageCode: String?
        var tenantID: String?
        var settings: AuthSettings? = AuthSettings()
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
        let (origin, key, language, tenant) = state.withLock { ($0.emulatorOrigin, $0.apiKey, $0.languageCode, $0.tenantID) }
        var client: IdentityClient
        if let origin {
            client = IdentityClient(origin: origin, apiKey: key, transport: transport)
        } else {
            let info = database.repo.state.withLock { $0.info }
            client = IdentityClient(origin: "\(info.secure ? "https" : "http")://\(info.host):\(info.port)", apiKey: key, transport: transport)
        }
        client.languageCode = language
        client.tenantID = tenant
        return client
    }

    /// The language of the emails and pages the server sends for this Auth (sent as the
    /// `X-Firebase-Locale` header of identity calls); nil for the server's default.
    public var languageCode: String? {
        get { state.withLock { $0.languageCode } }
        set { state.withLock { $0.languageCode = newValue } }
    }

    /// Sets ``languageCode`` to the app's preferred language.
    public func useAppLanguage() {
        let language = Locale.preferredLanguages.first
        state.withLock { $0.languageCode = language }
    }

    /// The tenant the Auth signs users in to, sent as `tenantId` with identity calls. Hearth's server
    /// has no tenants (one user pool per project) and ignores it.
    public var tenantID: String? {
        get { state.withLock { $0.tenantID } }
        set { state.withLock { $0.tenantID = newValue } }
    }

    /// The Auth's settings.
    public var settings: AuthSettings? {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// The signed-in user, or nil.
    public var currentUser: User? { state.withLock { $0.user } }

    // MARK: Signing in and out

    /// Creates an account with an email and password and signs in as it
    /// (`additionalUserInfo.isNewUser` is true). An address in use fails with `emailAlreadyInUse`,
    /// the address under `AuthErrorUserInfoEmailKey`.
    @discardableResult
    public func createUser(withEmail email: String, password: String) async throws -> AuthDataResult {
        do {
            return try await signIn(
                "accounts:signUp", [("email", .string(email)), ("password", .string(password)), ("returnSecureToken", .bool(true))],
                providerID: EmailAuthProvider.id, isNewUser: { _ in true }
            )
        } catch let error as AuthError where error.code == .emailAlreadyInUse {
            throw error.concerning(email: email)
        }
    }

    /// Signs in with an email and password.
    @discardableResult
    public func signIn(withEmail email: String, password: String) async throws -> AuthDataResult {
        try await signIn(
            "accounts:signInWithPassword", [("email", .string(email)), ("password", .string(password)), ("returnSecureToken", .bool(true))],
            providerID: EmailAuthProvider.id, isNewUser: { _ in false }
        )
    }

    /// Signs in as a new anonymous account.
    @discardableResult
    public func signInAnonymously() async throws -> AuthDataResult {
        try await signIn("accounts:signUp", [("returnSecureToken", .bool(true))], providerID: "", isNewUser: { _ in true })
    }

    /// Signs in with a custom token minted by the server's admin (`firebase-admin`'s `create_custom_token`);
    /// `additionalUserInfo.isNewUser` says whether the sign-in made the account.
    @discardableResult
    public func signIn(withCustomToken token: String) async throws -> AuthDataResult {
        try await signIn(
            "accounts:signInWithCustomToken", [("token", .string(token)), ("returnSecureToken", .bool(true))],
            providerID: "", isNewUser: { $0.text("isNewUser") == "true" }
        )
    }

    /// As ``createUser(withEmail:password:)``, with a completion handler.
    public func createUser(withEmail email: String, password: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        complete(completion) { try await self.createUser(withEmail: email, password: password) }
    }

    /// As ``signIn(withEmail:password:)``, with a completion handler.
    public func signIn(withEmail email: String, password: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        complete(completion) { try await self.signIn(withEmail: email, password: password) }
    }

    /// As ``signInAnonymously()``, with a completion handler.
    public func signInAnonymously(completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        complete(completion) { try await self.signInAnonymously() }
    }

    /// As ``signIn(withCustomToken:)``, with a completion handler.
    ///
    /// ```swift
    /// Auth.auth().signIn(withCustomToken: token) { result, error in print(result?.user.uid ?? "failed") }
    /// ```
    public func signIn(withCustomToken token: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)? = nil) {
        complete(completion) { try await self.signIn(withCustomToken: token) }
    }

    /// Makes `user` the signed-in user (one signed out earlier, or one of another Auth). A user of
    /// another Auth has its token refreshed through this one first (which confirms the server knows
    /// it), and this Auth's ``currentUser`` is then a new `User` object with its uid and profile.
    ///
    /// ```swift
    /// try await Auth.auth().updateCurrentUser(otherAuth.currentUser!)
    /// ```
    public func updateCurrentUser(_ user: User) async throws {
        var adopted = user
        if user.auth !== self {
            let session = try await client.refresh(user.tokens.withLock { $0.refreshToken })
            adopted = User(uid: session.uid, auth: self, profile: user.profile.withLock { $0 }, tokens: User.Tokens(idToken: "", refreshToken: "", expiry: 0))
            adopted.adopt(session)
        }
        let token = try await adopted.getIDToken()
        transitions.withLock { _ in
            let changed = state.withLock { state -> Bool in
                guard state.user !== adopted else { return false }
                state.user = adopted
                return true
            }
            guard changed else { return }
            saveSession(adopted)
            database.updateAuthToken(token)
            notify(adopted)
        }
    }

    /// As ``updateCurrentUser(_:)``, with a completion handler; a nil user fails with `nullUser`.
    public func updateCurrentUser(_ user: User?, completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        deliverCompletion(completion) {
            guard let user else { throw AuthError(.nullUser, "NULL_USER") }
            try await self.updateCurrentUser(user)
        }
    }

    /// Signs out: the database connection drops the credential (`unauth`) and listeners hear `nil`.
    public func signOut() throws {
        guard let user = currentUser else { return }
        signedOut(user)
    }

    /// Asks the server to send a password-reset email; its link leads on to the settings' `url`.
    ///
    /// ```swift
    /// try await Auth.auth().sendPasswordReset(withEmail: "ada@example.com")
    /// ```
    public func sendPasswordReset(withEmail email: String, actionCodeSettings: ActionCodeSettings? = nil) async throws {
        _ = try await client.call(
            "accounts:sendOobCode",
            [("requestType", .string("PASSWORD_RESET")), ("email", .string(email))] + (actionCodeSettings?.requestMembers ?? [])
        )
    }

    /// As ``sendPasswordReset(withEmail:actionCodeSettings:)``, with a completion handler.
    public func sendPasswordReset(withEmail email: String, completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        deliverCompletion(completion) { try await self.sendPasswordReset(withEmail: email, actionCodeSettings: nil) }
    }

    /// As ``sendPasswordReset(withEmail:actionCodeSettings:)``, with a completion handler.
    public func sendPasswordReset(
        withEmail email: String, actionCodeSettings: ActionCodeSettings?, completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        deliverCompletion(completion) { try await self.sendPasswordReset(withEmail: email, actionCodeSettings: actionCodeSettings) }
    }

    func signIn(
        _ operation: String, _ body: [(key: String, value: JSONValue)], providerID: String, isNewUser: (JSONValue) -> Bool
    ) async throws -> AuthDataResult {
        let client = self.client
        let reply = try await client.call(operation, body)
        let session = try IdentityClient.session(reply)
        let lookup = try await client.call("accounts:lookup", [("idToken", .string(session.idToken))])
        var profile = User.Profile()
        if case .object(let members) = lookup, case .array(let users)? = members.first(where: { $0.key == "users" })?.value, let record = users.first {
            profile = User.profile(of: record)
        }
        let user = User(uid: session.uid, auth: self, profile: profile, tokens: User.Tokens(idToken: "", refreshToken: "", expiry: 0))
        user.adopt(session)
        transitions.withLock { _ in
            state.withLock { $0.user = user }
            saveSession(user)
            database.updateAuthToken(session.idToken)
            notify(user)
        }
        return AuthDataResult(user: user, additionalUserInfo: AdditionalUserInfo(providerID: providerID, isNewUser: isNewUser(reply)))
    }

    private func complete(_ completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?, _ work: @escaping @Sendable () async throws -> AuthDataResult) {
        deliverResult(of: work, on: database.callbackQueue, to: completion)
    }

    /// Runs `work` and calls `completion` with its error (or nil) on the database's callback queue.
    func deliverCompletion(_ completion: (@Sendable ((any Error)?) -> Void)?, _ work: @escaping @Sendable () async throws -> Void) {
        let queue = database.callbackQueue
        Task {
            do {
                try await work()
                queue.async { completion?(nil) }
            } catch {
                queue.async { completion?(error) }
            }
        }
    }

    // MARK: Changes

    /// A new ID token for the signed-in user: the database connection gets it.
    func tokenChanged(_ user: User) {
        transitions.withLock { _ in
            guard state.withLock({ $0.user === user }) else { return }
            saveSession(user)
            database.updateAuthToken(user.tokens.withLock { $0.idToken })
            notifyTokenListeners(user)
        }
    }

    func signedOut(_ user: User) {
        transitions.withLock { _ in
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
            ("uid", .string(user.uid)), ("refreshToken", .string(user.tokens.withLock { $0.refreshToken })),
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
        AuthListenerHandle(addListener(listener, to: .state))
    }

    public func removeStateDidChangeListener(_ listenerHandle: AuthStateDidChangeListenerHandle) {
        guard let handle = listenerHandle as? AuthListenerHandle else { return }
        removeListener(handle.number, from: .state)
    }

    /// Calls `listener` now with the current user, after every sign-in and sign-out, and whenever the
    /// signed-in user's ID token changes (a refresh, a password or email change), on the database's
    /// callback queue.
    ///
    /// ```swift
    /// let handle = Auth.auth().addIDTokenDidChangeListener { auth, user in sendTokenToBackend(user) }
    /// Auth.auth().removeIDTokenDidChangeListener(handle)
    /// ```
    @discardableResult
    public func addIDTokenDidChangeListener(_ listener: @escaping @Sendable (Auth, User?) -> Void) -> IDTokenDidChangeListenerHandle {
        AuthListenerHandle(addListener(listener, to: .idToken))
    }

    public func removeIDTokenDidChangeListener(_ listenerHandle: IDTokenDidChangeListenerHandle) {
        guard let handle = listenerHandle as? AuthListenerHandle else { return }
        removeListener(handle.number, from: .idToken)
    }

    /// Which listeners a listener joins: those of sign-ins and sign-outs, or those of ID tokens too.
    enum Listeners: Sendable {
        case state, idToken
    }

    /// Adds a listener, calls it with the current user, and returns its number.
    func addListener(_ listener: @escaping @Sendable (Auth, User?) -> Void, to listeners: Listeners) -> UInt {
        state.withLock { state in
            let number = state.nextHandle
            state.nextHandle += 1
            switch listeners {
            case .state: state.listeners[number] = listener
            case .idToken: state.tokenListeners[number] = listener
            }
            // Queued under the lock, so that a change made meanwhile is heard after this first call.
            let user = state.user
            database.callbackQueue.async { listener(self, user) }
            return number
        }
    }

    func removeListener(_ number: UInt, from listeners: Listeners) {
        state.withLock { state in
            switch listeners {
            case .state: _ = state.listeners.removeValue(forKey: number)
            case .idToken: _ = state.tokenListeners.removeValue(forKey: number)
            }
        }
    }

    /// Posted (object: the Auth) on the database's callback queue after every sign-in and sign-out and
    /// whenever the signed-in user's ID token changes, as FirebaseAuth's.
    public static let authStateDidChangeNotification = Notification.Name(rawValue: "FIRAuthStateDidChangeNotification")

    private func notifyTokenListeners(_ user: User?) {
        let queue = database.callbackQueue
        // Queued under the lock, as a new listener's first call is: every listener hears the users in order.
        state.withLock { state in
            for listener in state.tokenListeners.values { queue.async { listener(self, user) } }
        }
        queue.async { NotificationCenter.default.post(name: Self.authStateDidChangeNotification, object: self) }
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
        let queue = database.callbackQueue
        state.withLock { state in
            for stream in state.streams.values { stream.yield(user) }
            for listener in state.listeners.values { queue.async { listener(self, user) } }
        }
        notifyTokenListeners(user)
    }
}
