import Foundation
import Hearth
import HearthStore
import HearthStoreTesting
import Observation
import HearthTestSupport
import Testing

// The examples of docs/store-and-models.md. Every ```swift block of the guide must appear here
// verbatim (checked by `everyExampleInTheGuideIsCompiledHere`), and the tests below run them
// against a live server.

// MARK: 1. A controller that owns the database calls

/// One place for the app's database calls, as the seed apps' controllers with their
/// `dataAtEndpoint` and `observeDataAtEndpoint` helpers.
struct DatabaseController: Sendable {
    let database: Database

    /// The children at `endpoint`, decoded; children that do not decode are reported, not dropped.
    func dataAtEndpoint<T: Decodable & Sendable>(_ endpoint: String, as type: T.Type) async throws -> DecodedChildren<T> {
        try await database.reference(withPath: endpoint).getDecodedChildren(as: T.self)
    }

    /// The children at `endpoint` now and after every change, for as long as the loop runs.
    func observeDataAtEndpoint<T: Decodable & Sendable>(_ endpoint: String, as type: T.Type) -> some AsyncSequence<DecodedChildren<T>, any Error> {
        database.reference(withPath: endpoint).decodedChildren(as: T.self)
    }

    /// The posts of every user in `uids`, fetched concurrently, newest first (push IDs sort by time).
    func timeline(of uids: [String]) async throws -> [Post] {
        try await withThrowingTaskGroup(of: [Post].self) { group in
            for uid in uids {
                group.addTask { try await dataAtEndpoint("user-posts/\(uid)", as: Post.self).values }
            }
            var posts: [Post] = []
            for try await userPosts in group { posts += userPosts }
            return posts.sorted { ($0.identifier ?? "") > ($1.identifier ?? "") }
        }
    }
}

// MARK: 2. Models that save themselves

struct Post: DatabaseModel, Equatable {
    var identifier: String?
    var uid: String
    var author: String
    var title: String
    var body: String
    var starCount = 0

    var endpoint: String { "posts" }
    var secondaryEndpoints: [String] { ["user-posts/\(uid)"] }
}

// MARK: 3. A store with typed subscription actions

struct AppState: Equatable, Sendable {
    var posts = SubscribedObjects<Post>()
    var userID: String?
    var problem: String?
}

struct NewPostTapped: Action, Equatable {
    var title: String
    var body: String
}

struct PostNotSaved: Action, Equatable {
    var reason: String
}

let appReducer = Reducer<AppState>.combine(
    .scope(\.posts, .subscribedObjects(Post.self)),
    Reducer { state, action in
        switch action {
        case let login as UserLoggedIn: state.userID = login.userID
        case is UserLoggedOut: state.userID = nil
        case let failed as UserAuthFailed: state.problem = failed.error.description
        case let failed as PostNotSaved: state.problem = failed.reason
        default: break
        }
    }
)

/// Starts the work an action asks for; reducers stay pure.
func appEffects(database: Database) -> @MainActor @Sendable (any Action, AppState) -> Effect<AppState>? {
    { action, state in
        guard let tapped = action as? NewPostTapped, let uid = state.userID else { return nil }
        return Effect { store in
            var post = Post(uid: uid, author: "me", title: tapped.title, body: tapped.body)
            do {
                try await post.save(in: database)
            } catch {
                store.dispatch(PostNotSaved(reason: "\(error)"))
            }
        }
    }
}

// MARK: 4. View models (MVVM)

/// The recent posts, newest first, for a list view; the same code serves every platform.
@MainActor
@Observable
final class PostListViewModel {
    private(set) var posts: [Post] = []
    private(set) var unreadablePostIDs: [String] = []
    private(set) var failure: (any Error)?
    private let query: DatabaseQuery

    init(database: Database) {
        query = database.reference(withPath: "posts").queryLimited(toLast: 100)
    }

    /// Follows the query until the calling task ends (in SwiftUI: `.task { await model.run() }`).
    func run() async {
        do {
            for try await update in query.decodedChildren(as: Post.self) {
                posts = update.values.reversed()
                unreadablePostIDs = update.failures.map(\.key)
            }
        } catch {
            failure = error
        }
    }
}

// MARK: The guide's examples, run

@MainActor
@Suite struct StoreAndModelsGuideTests {
    @Test func theControllerReadsObservesAndFetchesATimelineConcurrently() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            let controller = DatabaseController(database: database)
            var first = Post(uid: "ada", author: "Ada", title: "First", body: "…")
            var second = Post(uid: "grace", author: "Grace", title: "Second", body: "…")
            var third = Post(uid: "alan", author: "Alan", title: "Not followed", body: "…")
            try await first.save(in: database)
            try await second.save(in: database)
            try await third.save(in: database)
            try await database.reference(withPath: "posts/broken").setValue(["title": 7])

            let all = try await controller.dataAtEndpoint("posts", as: Post.self)
            #expect(all.values == [first, second, third])
            #expect(all.failures.map(\.key) == ["broken"])

            var updates = controller.observeDataAtEndpoint("user-posts/ada", as: Post.self).makeAsyncIterator()
            #expect(try await updates.next()?.values == [first])

            #expect(try await controller.timeline(of: ["ada", "grace"]) == [second, first])
        }
    }

    @Test func aModelSavesMergesAndDeletesItself() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            let uid = "ada"
            // The guide's example, as written there:
            var post = Post(uid: uid, author: "ada", title: "Hello", body: "First post")
            try await post.save(in: database)   // posts/<new id> and user-posts/<uid>/<new id>, atomically
            post.title = "Hello, Hearth"
            try await post.save(in: database)   // merges the fields into both copies
            let id = try #require(post.identifier)
            #expect(try await server.value(at: "user-posts/ada/\(id)/title") as? String == "Hello, Hearth")
            try await post.delete(in: database) // removes both copies
            #expect(try await server.json(at: "posts") == "null")
            #expect(try await server.json(at: "user-posts") == "null")
        }
    }

    @Test func theStoreLogsInSubscribesAndPostsThroughAnEffect() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            let auth = Auth.auth(database: database)
            try await auth.createUser(withEmail: "ada@example.com", password: "correct horse")
            try auth.signOut()

            let store = TestStore(initialState: AppState(), reducer: appReducer, effects: appEffects(database: database))
            store.store.logIn(email: "ada@example.com", password: "correct horse", using: auth)
            let login = await store.receive(UserLoggedIn.self) { state, login in state.userID = login.userID }
            let uid = try #require(login?.userID)

            store.store.subscribe(Post.self, to: database.reference(withPath: "posts"), isSubscribed: \.posts.isSubscribed)
            await store.receive(ObjectSubscribed<Post>(isSubscribed: true)) { $0.posts.isSubscribed = true }

            store.send(NewPostTapped(title: "Hello", body: "First post"))
            await store.receive(ObjectAdded<Post>.self, where: { $0.object.title == "Hello" && $0.object.uid == uid }) { state, added in
                state.posts.objects[added.key] = added.object
            }
            #expect(store.state.posts.inKeyOrder.map(\.title) == ["Hello"])

            store.store.unsubscribe(\.posts.isSubscribed)
            await store.receive(ObjectSubscribed<Post>(isSubscribed: false)) { $0.posts.isSubscribed = false }
            await store.finish()
        }
    }

    @Test func theViewModelFollowsTheQuery() async throws {
        try await TestServer.run { server in
            let database = try server.client()
            let model = PostListViewModel(database: database)
            let following = Task { await model.run() }
            defer { following.cancel() }

            var hello = Post(uid: "ada", author: "Ada", title: "Hello", body: "…")
            try await hello.save(in: database)
            var again = Post(uid: "ada", author: "Ada", title: "Again", body: "…")
            try await again.save(in: database)
            await eventually { model.posts.map(\.title) == ["Again", "Hello"] }

            try await database.reference(withPath: "posts/zzz").setValue(["title": 1])
            await eventually { model.unreadablePostIDs == ["zzz"] }
            #expect(model.posts.count == 2)
            #expect(model.failure == nil)
        }
    }

    @Test func everyExampleInTheGuideIsCompiledHere() throws {
        let here = URL(fileURLWithPath: #filePath)
        let guide = here.deletingLastPathComponent().appendingPathComponent("../../docs/store-and-models.md").standardized
        let examples = try Self.lines(of: String(contentsOf: here, encoding: .utf8))
        let blocks = try Self.swiftBlocks(in: String(contentsOf: guide, encoding: .utf8))
        #expect(blocks.count >= 6)
        for block in blocks {
            let found = examples.indices.contains { start in
                examples[start...].starts(with: block)
            }
            #expect(found, "Not in \(here.lastPathComponent):\n\(block.joined(separator: "\n"))")
        }
    }

    /// The lines of `text` without indentation or blank lines, so a block matches wherever it sits.
    static func lines(of text: some StringProtocol) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    static func swiftBlocks(in markdown: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                current = []
            } else if let block = current, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append(lines(of: block.joined(separator: "\n")))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }
}

/// Waits until `condition` holds, checking after each turn of the main actor; records an issue
/// after a generous deadline (it only matters when something is broken).
@MainActor
func eventually(timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("Condition not met within \(timeout)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(2))
    }
}
