import Hearth
import Observation

/// The sign-up / log-in screen and the signed-in session, for a UI to bind to: both modes of the
/// form, the remembered session, the signed-in user's profile (kept current live, so an edit made
/// in another window shows), profile editing and logging out.
///
/// For example, in SwiftUI:
/// ```swift
/// @State var session = SessionController(users: UserController(database: database, auth: auth))
///
/// if let me = session.user { TimelineView(me) } else { SignInView(session) }
///     .task { await session.restore() }
/// Button(session.mode == .signUp ? "Sign up" : "Log in") { Task { await session.submit() } }
/// ```
@MainActor
@Observable
public final class SessionController {
    public enum Mode: Equatable, Sendable {
        case logIn
        case signUp
    }

    public let users: UserController
    /// The signed-in user's profile; nil when signed out (the UI shows the sign-in screen).
    public private(set) var user: TimelineUser?
    public var mode: Mode = .logIn {
        didSet { errorMessage = nil }
    }
    public var email = ""
    public var password = ""
    /// The sign-up form's profile fields (username, bio, web address).
    public var profile = ProfileForm()
    /// Why the last submit or save failed, worded for a person.
    public private(set) var errorMessage: String?
    public private(set) var isWorking = false

    @ObservationIgnored private var profileWatch: Task<Void, Never>?

    public init(users: UserController) {
        self.users = users
    }

    public var isSignedIn: Bool { user != nil }

    /// Picks up a remembered session (the SDK keeps it when persistence is on).
    public func restore() async {
        do {
            if let restored = try await users.restoredSession() { signedIn(restored) }
        } catch {
            errorMessage = TimelineError(error).description
        }
    }

    /// Logs in or signs up, as ``mode`` says; true when signed in. The password is cleared either way.
    @discardableResult
    public func submit() async -> Bool {
        errorMessage = nil
        isWorking = true
        defer { isWorking = false; password = "" }
        do {
            let user = switch mode {
            case .logIn: try await users.logIn(email: email, password: password)
            case .signUp: try await users.signUp(email: email, password: password, profile: profile)
            }
            signedIn(user)
            email = ""
            profile = ProfileForm()
            return true
        } catch {
            errorMessage = TimelineError(error).description
            return false
        }
    }

    /// Saves the signed-in user's profile; true when saved (``user`` then shows it).
    @discardableResult
    public func saveProfile(_ form: ProfileForm) async -> Bool {
        errorMessage = nil
        do {
            let fields = try await users.saveProfile(form)
            user?.username = fields.username
            user?.bio = fields.bio
            user?.url = fields.url
            return true
        } catch {
            errorMessage = TimelineError(error).description
            return false
        }
    }

    public func logOut() {
        profileWatch?.cancel()
        profileWatch = nil
        do {
            try users.logOut()
        } catch {
            errorMessage = TimelineError(error).description
        }
        user = nil
    }

    private func signedIn(_ user: TimelineUser) {
        self.user = user
        profileWatch?.cancel()
        let location = users.database.reference(withPath: TimelineUser.collection).child(user.uid)
        profileWatch = Task { [weak self] in
            do {
                for try await snapshot in location.values where snapshot.exists() {
                    guard let self, self.user?.uid == user.uid else { return }
                    if let current = try? snapshot.decoded(as: TimelineUser.self) { self.user = current }
                }
            } catch {
                self?.errorMessage = TimelineError(error).description
            }
        }
    }
}
