import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// onDisconnect operations: queued for the server, and shown locally when the connection drops.
extension Repo {
    // MARK: onDisconnect

    func onDisconnect(action: String, path: DatabasePath, data: JSONValue?, completion: WriteCompletion?) {
        start()
        state.withLock { state in
            var body: [(key: String, value: JSONValue)] = [("p", ClientWire.path(path))]
            if let data { body.append(("d", data)) }
            switch action {
            case "oc":
                state.onDisconnect.removeAll { path.contains($0.path) }
            case "om":
                if case .object(let members)? = data {
                    for (key, value) in members {
                        if let relative = try? DatabasePath(updateKey: key) { state.onDisconnect.append((path.appending(relative), value)) }
                    }
                }
            default:
                state.onDisconnect.removeAll { path.contains($0.path) }
                state.onDisconnect.append((path, data ?? .null))
            }
            let token = state.machine.makeToken()
            state.operations[token] = .onDisconnect(completion: completion)
            send(&state, state.machine.enqueue(token: token, action: action, body: .object(body)))
        }
    }

    /// The connection dropped: the server is running this client's onDisconnect writes, so show them.
    func applyOnDisconnectLocally(_ state: inout State) -> [RaisedEvent] {
        var events: [RaisedEvent] = []
        let now = serverNow(&state)
        for operation in state.onDisconnect {
            let context = ServerValueContext(now: now, existing: state.tree.serverValue(at: operation.path))
            guard let node = try? Node(json: operation.json, depth: operation.path.count, context: context) else { continue }
            events += state.tree.applyServerOverwrite(path: operation.path, node: node, tag: nil)
        }
        state.onDisconnect = []
        return events
    }
}
