import Hearth
import Observation

/// The user search screen: everyone but the signed-in user whose username contains the term,
/// ignoring case, by username (everyone for an empty term).
///
/// For example, in SwiftUI:
/// ```swift
/// @State var search = SearchController(users: users)
///
/// List(search.results) { person in NavigationLink(person.username) { ProfileScreen(uid: person.uid) } }
///     .searchable(text: $search.term)
///     .task(id: search.term) { await search.run() }
/// ```
@MainActor
@Observable
public final class SearchController {
    public let users: UserController
    public var term = ""
    public private(set) var results: [TimelineUser] = []
    public private(set) var errorMessage: String?

    public init(users: UserController) {
        self.users = users
    }

    public func run() async {
        do {
            results = try await users.search(term)
            errorMessage = nil
        } catch {
            errorMessage = TimelineError(error).description
        }
    }
}
