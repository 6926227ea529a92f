import HearthStorage
import Synchronization

/// The other live nodes this node subscribes to for commit pushes (as the cluster coordinator last read
/// them), and when each push stream last showed a sign of life: a database whose owner's stream is live
/// waits a moment for the push before it reads the log.
///
/// For example:
/// ```swift
/// peers.update(members.filter(\.alive), me: "node1")
/// peers.heard(from: "node2")
/// if peers.isLive("node2") { /* wait for the push */ }
/// ```
final class PushPeers: Sendable {
    /// A stream that sent nothing (not even a heartbeat) for this long is taken for dead.
    static let silence: Duration = .seconds(1)

    private struct State {
        var wanted: [String: String] = [:]
        var lastHeard: [String: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())

    /// The members to subscribe to: every live one but this node, by name, with its address.
    func update(_ members: [ClusterMember], me: String) {
        let wanted = Dictionary(
            members.filter { $0.alive && $0.name != me && !$0.address.isEmpty }.map { ($0.name, $0.address) },
            uniquingKeysWith: { first, _ in first }
        )
        state.withLock { $0.wanted = wanted }
    }

    var wanted: [String: String] { state.withLock { $0.wanted } }

    func isWanted(_ name: String, at address: String) -> Bool {
        state.withLock { $0.wanted[name] == address }
    }

    func heard(from name: String, at instant: ContinuousClock.Instant = .now) {
        state.withLock { $0.lastHeard[name] = instant }
    }

    /// The stream from `name` ended: until it is back, its databases do not wait for pushes.
    func lost(_ name: String) {
        _ = state.withLock { $0.lastHeard.removeValue(forKey: name) }
    }

    func isLive(_ name: String, now: ContinuousClock.Instant = .now) -> Bool {
        guard let last = state.withLock({ $0.lastHeard[name] }) else { return false }
        return now - last < PushPeers.silence
    }
}
