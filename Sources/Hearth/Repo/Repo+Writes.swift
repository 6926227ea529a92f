import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// Writes: `set`, `update` and `setPriority` shown at once and queued for the server, purged, or failed before they start.
extension Repo {
    // MARK: Writes

    // These two read the state but take it `inout`: passed by value from the lock's storage, the whole
    // State was copied and destroyed on every write (1.1 % of a streaming SDK writer's samples).

    /// What a write's increments add to: the local value, computed only when the data holds a server
    /// value (it layers every pending write, which a stream of plain writes must not pay for).
    static func existing(_ state: inout State, at path: DatabasePath, for json: JSONValue) -> Node {
        json.containsServerValue ? state.tree.localValue(at: path) : .empty
    }

    /// The estimated server time in ms, for `ServerValue.timestamp()`.
    func serverNow(_ state: inout State) -> Double {
        (clock.milliseconds() + state.machine.serverTimeOffset).rounded()
    }

    func set(path: DatabasePath, json: JSONValue, completion: WriteCompletion?) {
        start()
        state.withLock { state in performSet(&state, path: path, json: json, completion: completion) }
    }

    func performSet(_ state: inout State, path: DatabasePath, json: JSONValue, completion: WriteCompletion?) {
        let node: Node
        do {
            node = try Node(json: json, depth: path.count, context: ServerValueContext(now: serverNow(&state), existing: Self.existing(&state, at: path, for: json)))
        } catch {
            deliver(&state, events: [], after: completion.map { c in [{ c(DatabaseError(.invalidData, "\(error)")) }] } ?? [])
            return
        }
        var events: [RaisedEvent] = []
        let after = abortTransactions(&state, at: path, events: &events)
        let writeID = state.nextWriteID
        state.nextWriteID += 1
        let body = JSONValue.object([("p", ClientWire.path(path)), ("d", json)])
        state.store?.append(.init(id: writeID, action: "p", body: body))
        events += state.tree.applyUserOverwrite(writeID: writeID, path: path, node: node)
        let token = state.machine.makeToken()
        state.operations[token] = .write(writeID: writeID, completion: completion)
        send(&state, state.machine.enqueue(token: token, action: "p", body: body))
        deliver(&state, events: events, after: after)
    }

    func update(path: DatabasePath, children: [(path: DatabasePath, json: JSONValue)], completion: WriteCompletion?) {
        start()
        state.withLock { state in performUpdate(&state, path: path, children: children, completion: completion) }
    }

    func performUpdate(_ state: inout State, path: DatabasePath, children: [(path: DatabasePath, json: JSONValue)], completion: WriteCompletion?) {
        var nodes: [(path: DatabasePath, node: Node)] = []
        do {
            for child in children {
                let absolute = path.appending(child.path)
                let context = ServerValueContext(now: serverNow(&state), existing: Self.existing(&state, at: absolute, for: child.json))
                nodes.append((child.path, try Node(json: child.json, depth: absolute.count, context: context)))
            }
        } catch {
            deliver(&state, events: [], after: completion.map { c in [{ c(DatabaseError(.invalidData, "\(error)")) }] } ?? [])
            return
        }
        let writeID = state.nextWriteID
        state.nextWriteID += 1
        let data = JSONValue.object(children.map { (key: $0.path.keys.map(\.string).joined(separator: "/"), value: $0.json) })
        let body = JSONValue.object([("p", ClientWire.path(path)), ("d", data)])
        state.store?.append(.init(id: writeID, action: "m", body: body))
        let events = state.tree.applyUserMerge(writeID: writeID, path: path, children: nodes)
        let token = state.machine.makeToken()
        state.operations[token] = .write(writeID: writeID, completion: completion)
        send(&state, state.machine.enqueue(token: token, action: "m", body: body))
        deliver(&state, events: events)
    }

    /// `setPriority`: a `p` to `path/.priority`; locally the node keeps its data with the new priority.
    func setPriority(path: DatabasePath, priority: JSONValue, completion: WriteCompletion?) {
        start()
        state.withLock { state in performSetPriority(&state, path: path, priority: priority, completion: completion) }
    }

    func performSetPriority(_ state: inout State, path: DatabasePath, priority: JSONValue, completion: WriteCompletion?) {
        let priorityValue = try? Node.convertPriority(priority, context: nil)
        let node = state.tree.localValue(at: path).withPriority(priorityValue)
        let writeID = state.nextWriteID
        state.nextWriteID += 1
        let events = state.tree.applyUserOverwrite(writeID: writeID, path: path, node: node)
        let token = state.machine.makeToken()
        state.operations[token] = .write(writeID: writeID, completion: completion)
        let wirePath = JSONValue.string(path.isRoot ? "/.priority" : path.description + "/.priority")
        let body = JSONValue.object([("p", wirePath), ("d", priority)])
        state.store?.append(.init(id: writeID, action: "p", body: body))
        send(&state, state.machine.enqueue(token: token, action: "p", body: body))
        deliver(&state, events: events)
    }

    /// Drops every write the server has not confirmed: their local effects roll back (with events) and
    /// their completions fail with `write_canceled`. Writes already on the wire may still be applied.
    func purgeOutstandingWrites() {
        state.withLock { state in
            var events: [RaisedEvent] = []
            var after: [@Sendable () -> Void] = []
            let error = DatabaseError(.writeCanceled, "Write canceled by purgeOutstandingWrites")
            for (token, operation) in state.operations.sorted(by: { $0.key < $1.key }) {
                switch operation {
                case .write(let writeID, let completion):
                    state.store?.confirm(id: writeID)
                    state.operations[token] = nil
                    state.machine.cancel(token: token)
                    events += state.tree.ackWrite(writeID: writeID, revert: true)
                    if let completion { after.append { completion(error) } }
                case .transaction(let id):
                    state.operations[token] = nil
                    state.machine.cancel(token: token)
                    after += transactionFailed(&state, id: id, status: "write_canceled", reason: error.message, rerun: false, events: &events)
                case .onDisconnect, .get:
                    break
                }
            }
            deliver(&state, events: events, after: after)
        }
    }

    /// Reports a write that could not start (invalid data) on the callback queue.
    func fail(_ completion: WriteCompletion?, _ error: any Error) {
        guard let completion else { return }
        state.withLock { state in deliver(&state, events: [], after: [{ completion(error) }]) }
    }
}
