import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// Persistence: the cached data and unconfirmed writes restored at start, and the cache flushed to disk.
extension Repo {
    // MARK: Persistence

    /// Where persistence keeps its files when the app names no folder: Application Support on Apple
    /// platforms, `$XDG_DATA_HOME` (or `~/.local/share`) elsewhere, each in a `Hearth` folder.
    static var defaultPersistenceRoot: URL {
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("Hearth", isDirectory: true)
        #else
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        return base.appendingPathComponent("hearth", isDirectory: true)
        #endif
    }

    /// Loads the cached data, then queues the unconfirmed writes again, in order. They take the first
    /// write ids of this process, which are the ids the reopened store gives them.
    func restorePersistedState(_ state: inout State) {
        let directory = state.persistenceRoot.appendingPathComponent(state.info.storageName, isDirectory: true)
        // Without a usable folder the database still works; only what it would have kept is lost.
        guard let log = try? PersistentStore(directory: directory) else { return }
        state.tree.restoreCache(log.recoveredCache)
        state.tree.restoreWindows(log.recoveredWindows)
        for write in log.recoveredWrites {
            state.nextWriteID = write.id
            guard case .object(let members) = write.body,
                  case .string(let wirePath)? = members.first(where: { $0.key == "p" })?.value,
                  let data = members.first(where: { $0.key == "d" })?.value else {
                log.confirm(id: write.id)
                continue
            }
            if write.action == "m", case .object(let children) = data, let path = try? DatabasePath(wirePath) {
                let relative = children.compactMap { key, value in (try? DatabasePath(updateKey: key)).map { (path: $0, json: value) } }
                performUpdate(&state, path: path, children: relative, completion: nil)
            } else if wirePath.hasSuffix("/.priority"), let path = try? DatabasePath(String(wirePath.dropLast("/.priority".count))) {
                performSetPriority(&state, path: path, priority: data, completion: nil)
            } else if let path = try? DatabasePath(wirePath) {
                performSet(&state, path: path, json: data, completion: nil)
            } else {
                log.confirm(id: write.id)
            }
        }
        state.nextWriteID = (log.recoveredWrites.last?.id ?? 0) + 1
        state.store = log
    }

    /// Server data changed at `paths`: the listened locations holding them are saved to the cache
    /// soon (changes within half a second are saved together).
    func markCacheDirty(_ state: inout State, _ paths: [DatabasePath]) {
        guard state.store != nil else { return }
        state.cacheDirty.formUnion(state.tree.completeListenRoots(containing: paths))
        scheduleCacheFlush(&state)
    }

    /// The window of the filtered query with `tag` changed: it is saved to the cache soon.
    func markWindowDirty(_ state: inout State, tag: Int) {
        guard state.store != nil, let spec = state.tree.spec(forTag: tag) else { return }
        state.windowsDirty.insert(spec)
        scheduleCacheFlush(&state)
    }

    func scheduleCacheFlush(_ state: inout State) {
        guard state.store != nil, !state.cacheDirty.isEmpty || !state.windowsDirty.isEmpty, !state.cacheFlushScheduled else { return }
        state.cacheFlushScheduled = true
        Task { [self] in
            try? await clock.sleep(milliseconds: 500)
            flushCache()
        }
    }

    /// Saves the changed listened locations to the persisted cache now.
    func flushCache() {
        typealias Work = (PersistentStore, [(path: DatabasePath, node: Node)], [(spec: QuerySpec, node: Node)], Set<DatabasePath>, Int)
        let work = state.withLock { state -> Work? in
            state.cacheFlushScheduled = false
            guard let store = state.store, !state.cacheDirty.isEmpty || !state.windowsDirty.isEmpty else { return nil }
            let roots = state.cacheDirty.filter { state.tree.isComplete($0) }
            state.cacheDirty = []
            let locations = roots.map { (path: $0, node: state.tree.serverValue(at: $0)) }
            let windows = state.windowsDirty.compactMap { spec in state.tree.completeWindow(of: spec).map { (spec: spec, node: $0) } }
            state.windowsDirty = []
            let active = state.tree.listenedPaths.union(state.tree.activeListens.map(\.path))
            return (store, locations, windows, active, state.cacheSizeBytes)
        }
        guard let (store, locations, windows, active, limit) = work else { return }
        store.saveCache(locations, windows: windows, savedAt: Int(clock.milliseconds()), limit: limit, active: active)
    }
}
