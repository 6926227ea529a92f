import HearthTestSupport
import ProfilesCore
import Synchronization

/// The shared loopback server, on the Profiles app's namespace: the server installs the app's rules
/// there, so these tests run against the real rules.
typealias TestServer = LoopbackServer

extension LoopbackServer {
    static func run(isolation: isolated (any Actor)? = #isolation, _ test: (LoopbackServer) async throws -> Void) async throws {
        try await run(namespace: "profiles", isolation: isolation, test)
    }

    /// A directory on its own client: two of them are two apps on two connections.
    func directory() throws -> ProfileDirectory {
        ProfileDirectory(database: try client())
    }
}

/// Everything a watch delivered, in order.
final class UpdateLog: Sendable {
    private let updates = Mutex<[ProfileUpdate]>([])

    func append(_ update: ProfileUpdate) { updates.withLock { $0.append(update) } }

    var all: [ProfileUpdate] { updates.withLock { $0 } }
    var latest: ProfileList? { all.last?.list }
    /// Every change after the first delivery, in order.
    var changes: [ProfileChange] { all.flatMap(\.changes) }
}
