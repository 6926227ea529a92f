import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// Listens and observers: what the sync tree wants listened to, observers added and removed, `keepSynced`.
extension Repo {
    // MARK: Listens

    func listenBody(_ state: State, _ listen: ServerListen) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("p", ClientWire.path(listen.path))]
        if let query = listen.query, let object = ClientWire.queryObject(query) {
            members.append(("q", object))
            if let tag = state.tree.tag(for: listen) { members.append(("t", .number(Double(tag)))) }
        }
        members.append(("h", .string(state.tree.hash(for: listen))))
        return .object(members)
    }

    /// Sends the listens the sync tree now wants and stops the ones it no longer does.
    func syncListens(_ state: inout State) {
        let changes = state.tree.takeListenChanges()
        for listen in changes.added.filter({ state.listenTokens[$0] == nil }).sorted(by: { $0.path.count < $1.path.count }) {
            let token = state.machine.makeToken()
            state.listenTokens[listen] = token
            state.listenByToken[token] = listen
            state.tree.listenStarted(listen)
            let body = listenBody(state, listen)
            send(&state, state.machine.listen(token: token, body: body))
        }
        for listen in changes.removed {
            guard let token = state.listenTokens.removeValue(forKey: listen) else { continue }
            state.listenByToken[token] = nil
            var members: [(key: String, value: JSONValue)] = [("p", ClientWire.path(listen.path))]
            if let query = listen.query, let object = ClientWire.queryObject(query) {
                members.append(("q", object))
                if let tag = state.tree.tag(for: listen) { members.append(("t", .number(Double(tag)))) }
            }
            send(&state, state.machine.unlisten(token: token, body: .object(members)))
            deliver(&state, events: state.tree.listenStopped(listen))
        }
    }

    // MARK: Observers

    static func isInfo(_ path: DatabasePath) -> Bool { path.keys.first?.string == ".info" }

    func addObserver(spec: QuerySpec, type: DataEventType, callback: @escaping EventCallback, cancel: CancelCallback?) -> UInt {
        start()
        return state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            let isInfo = Repo.isInfo(spec.path)
            state.observers[handle] = Observer(spec: spec, type: type, isInfo: isInfo, callback: callback, cancel: cancel)
            if isInfo {
                var infoSpec = spec
                infoSpec.path = DatabasePath(keys: Array(spec.path.keys.dropFirst()))
                deliver(&state, events: [], infoEvents: state.infoTree.addRegistration(id: handle, type: type, spec: infoSpec))
            } else {
                let events = state.tree.addRegistration(id: handle, type: type, spec: spec)
                syncListens(&state)
                deliver(&state, events: events)
            }
            return handle
        }
    }

    func removeObserver(_ handle: UInt) {
        state.withLock { state in
            guard let observer = state.observers.removeValue(forKey: handle) else { return }
            if observer.isInfo {
                state.infoTree.removeRegistration(id: handle)
            } else {
                state.tree.removeRegistration(id: handle)
                syncListens(&state)
            }
        }
    }

    func removeAllObservers(at path: DatabasePath) {
        state.withLock { state in
            let handles = state.observers.filter { $0.value.spec.path == path && !$0.value.isInternal }.map(\.key)
            for handle in handles {
                let observer = state.observers.removeValue(forKey: handle)!
                if observer.isInfo { state.infoTree.removeRegistration(id: handle) } else { state.tree.removeRegistration(id: handle) }
            }
            syncListens(&state)
        }
    }

    func removeInternalObserver(_ state: inout State, _ handle: UInt) {
        guard state.observers.removeValue(forKey: handle) != nil else { return }
        state.tree.removeRegistration(id: handle)
        syncListens(&state)
    }

    /// `keepSynced(true)` holds a hidden observer on the query; `false` releases it.
    func keepSynced(spec: QuerySpec, _ keep: Bool) {
        if keep {
            let handle = addObserver(spec: spec, type: .value, callback: { _, _ in }, cancel: nil)
            state.withLock { state in
                state.observers[handle]?.isInternal = true
                state.keptSynced[spec, default: []].append(handle)
            }
        } else {
            state.withLock { state in
                for handle in state.keptSynced.removeValue(forKey: spec) ?? [] { removeInternalObserver(&state, handle) }
            }
        }
    }
}
