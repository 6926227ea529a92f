import HearthAccess
@testable import HearthCluster
import HearthCore
import HearthEngine
@testable import HearthProtocol
@testable import HearthServer
import Testing

/// The identity a connection's onDisconnect writes run as when it closes, and when another node runs
/// them after the connection's node died: never more than the connection may do by then.
@Suite struct OnDisconnectIdentityTests {
    static let alice = Identity.user(.object([
        (key: "uid", value: .string("alice")),
        (key: "token", value: .object([(key: "exp", value: .number(2_000))])),
    ]))

    static func state(_ jobs: [RealtimeSession.Job] = []) -> RealtimeSession.State {
        var state = RealtimeSession.State()
        state.identity = alice
        state.identityExpires = 2_000
        state.authGeneration = 3
        state.jobs.append(contentsOf: jobs)
        return state
    }

    static func request(_ action: WireAction) -> RealtimeSession.Job {
        .request(WireRequest(number: 9, action: action), bytes: 10)
    }

    @Test func theConnectionsIdentityWhileItsCredentialHolds() {
        let state = Self.state([Self.request(.stats), .authExpired(generation: 2)])
        #expect(state.identityAtClose(now: 1_999) { _ in false } == Self.alice)
    }

    @Test(arguments: [
        ("an unauth still queued", [request(.unauth)]),
        ("an auth still queued", [request(.auth(credential: "other", override: .none))]),
        ("its credential's expiry still queued", [RealtimeSession.Job.authExpired(generation: 3)]),
    ])
    func unauthenticatedWhenAChangeIsStillQueued(_ what: String, _ jobs: [RealtimeSession.Job]) {
        #expect(Self.state(jobs).identityAtClose(now: 1_000) { _ in false } == .anonymous, "\(what)")
    }

    @Test func unauthenticatedOnceTheCredentialExpiredOrWasRevoked() {
        #expect(Self.state().identityAtClose(now: 2_000) { _ in false } == .anonymous)
        #expect(Self.state().identityAtClose(now: 1_000) { _ in true } == .anonymous)
    }

    @Test func aDeadNodesWritesRunUnauthenticatedOnceTheirTokenExpired() {
        let write = WriteRequest(.set(.root, .string("offline")), identity: Self.alice)
        #expect(ClusterCoordinator.unauthenticatingExpired([write], now: 1_999).map(\.identity) == [Self.alice])
        #expect(ClusterCoordinator.unauthenticatingExpired([write], now: 2_000).map(\.identity) == [.anonymous])
        let admin = WriteRequest(.set(.root, .string("offline")), identity: .admin)
        #expect(ClusterCoordinator.unauthenticatingExpired([admin], now: 9_999).map(\.identity) == [.admin])
    }
}
