import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// `getData()`: answered from complete local data, else asked of the server, failing when offline too long.
extension Repo {
    // MARK: Reads

    func getValue(spec: QuerySpec, completion: @escaping @Sendable (Result<Node, DatabaseError>) -> Void) {
        start()
        state.withLock { state in
            if Repo.isInfo(spec.path) {
                let node = state.infoTree.localValue(at: DatabasePath(keys: Array(spec.path.keys.dropFirst())))
                deliver(&state, events: [], after: [{ completion(.success(node)) }])
                return
            }
            if spec.loadsAllData, let node = state.tree.completeValue(at: spec.path) {
                deliver(&state, events: [], after: [{ completion(.success(node)) }])
                return
            }
            if let node = state.tree.completeWindowShown(for: spec) {
                deliver(&state, events: [], after: [{ completion(.success(node)) }])
                return
            }
            var body: [(key: String, value: JSONValue)] = [("p", ClientWire.path(spec.path))]
            if !spec.loadsAllData, let object = ClientWire.queryObject(spec.query) { body.append(("q", object)) }
            let token = state.machine.makeToken()
            state.operations[token] = .get(path: spec.path, query: spec.query, completion: completion)
            send(&state, state.machine.enqueue(token: token, action: "g", body: .object(body)))
            if state.machine.phase != .connected { failGetIfStillOffline(token: token) }
        }
    }

    /// How long a read made while offline waits for a connection before failing (as iOS: 3 s).
    static let getConnectTimeout: Double = 3_000

    private func failGetIfStillOffline(token: Int) {
        Task { [self] in
            try? await clock.sleep(milliseconds: Repo.getConnectTimeout)
            state.withLock { state in
                guard state.machine.phase != .connected || state.socket == nil,
                      case .get(_, _, let completion)? = state.operations[token] else { return }
                state.operations[token] = nil
                state.machine.cancel(token: token)
                let error = DatabaseError(.disconnected, "The client is offline and has no complete cached data for this location")
                deliver(&state, events: [], after: [{ completion(.failure(error)) }])
            }
        }
    }
}
