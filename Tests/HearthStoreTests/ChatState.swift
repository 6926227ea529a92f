import Hearth
import HearthStore

/// A chat message, the model type the store tests subscribe to.
struct Message: Codable, Equatable, Sendable {
    var text: String
    var author: String
}

/// A second model type, for a second subscription.
struct Alert: Codable, Equatable, Sendable {
    var level: Int
}

/// The app state of the store tests: two subscriptions, the signed-in user, and the outcome of the
/// last write and auth flow.
struct ChatState: Equatable, Sendable {
    var messages = SubscribedObjects<Message>()
    var alerts = SubscribedObjects<Alert>()
    var userID: String?
    var email: String?
    var authError: AuthFlowError?
    var passwordChanges = 0
    var resetEmailsSent: [String] = []
    var written: [String] = []
    var writeError: ObjectWriteError?
}

let chatReducer = Reducer<ChatState>.combine(
    .scope(\.messages, .subscribedObjects(Message.self)),
    .scope(\.alerts, .subscribedObjects(Alert.self)),
    Reducer { state, action in
        switch action {
        case let identified as UserIdentified:
            state.userID = identified.userID
        case let login as UserLoggedIn:
            state.userID = login.userID
            state.email = login.email
            state.authError = nil
        case is UserSignedUp:
            break
        case is PasswordChanged:
            state.passwordChanges += 1
        case let changed as EmailChanged:
            state.email = changed.email
        case let sent as PasswordResetSent:
            state.resetEmailsSent.append(sent.email)
        case is UserLoggedOut:
            state.userID = nil
            state.email = nil
        case let failed as UserAuthFailed:
            state.authError = failed.error
        case let created as ObjectCreated<Message>:
            state.written.append("created \(created.key)")
        case let updated as ObjectUpdated<MessageEdit>:
            state.written.append("updated \(updated.key)")
        case let deleted as ObjectDeleted<Message>:
            state.written.append("deleted \(deleted.key)")
        case let failed as ObjectWriteFailed<Message>:
            state.writeError = failed.error
        case let failed as ObjectWriteFailed<MessageEdit>:
            state.writeError = failed.error
        default:
            break
        }
    }
)

/// A partial change of a message, for merges.
struct MessageEdit: Codable, Equatable, Sendable {
    var text: String
}
