import HashTreeCollections
import HearthCore

/// The client's model of the database: server data, pending writes, and one view per distinct query
/// that someone observes. Every operation returns the events it raises, in order. No I/O: the owner
/// sends the listens ``desiredListens`` asks for and feeds back what the server says.
///
/// Server data without a tag (default listens) lives in one tree; filtered listens (range or limit)
/// each keep the window the server sent under their tag. A view whose location is covered by a
/// completed default listen reads the shared tree, so a parent listen shadows its children's.
///
/// For example:
/// ```swift
/// var tree = SyncTree()
/// let spec = QuerySpec(path: try DatabasePath("/a"))
/// _ = tree.addRegistration(id: 1, type: .value, spec: spec)
/// let events = tree.applyUserOverwrite(writeID: 1, path: try DatabasePath("/a"), node: .leaf(.number(1)))
/// #expect(events.map(\.type) == [.value])
/// ```
struct SyncTree: Sendable {
    struct View: Sendable {
        var spec: QuerySpec
        /// The tag of its own filtered listen (nil for views that load all data).
        var tag: Int?
        /// Server data received under the tag.
        var ownCache: Node = .empty
        var ownComplete = false
        var shown = ViewSnapshot.empty
        var valueRaised = false
        var registrations: [(id: UInt, type: DataEventType)] = []
        /// Data under the view went away without events (a listen below it stopped), so what it shows
        /// must be recomputed whole, not child by child.
        var needsFullRefresh = false
    }

    /// Whether views that show a whole location are updated child by child when a change lies below
    /// them (false recomputes every view whole: the reference the tests compare with).
    var refreshesIncrementally = true

    private(set) var serverTree: Node = .empty
    private(set) var writes = WriteTree()
    private(set) var views: [QuerySpec: View] = [:]
    /// Views in the order they were created (events for one operation follow it, deepest first).
    private var viewOrder: [QuerySpec] = []
    private var specByTag: [Int: QuerySpec] = [:]
    private var nextTag = 1
    /// Locations whose default listen the server has acknowledged.
    private var completePaths: Set<DatabasePath> = []
    /// Locations whose data came complete from the persisted cache (shown until the server answers).
    private var cachedPaths: Set<DatabasePath> = []
    /// Listens the owner has sent and not stopped.
    private(set) var activeListens: Set<ServerListen> = []
    /// Filtered queries' windows from the persisted cache (tracked queries): a view of exactly that
    /// query shows its window as complete until its own listen completes; no other query uses it.
    private var cachedWindows: [QuerySpec: Node] = [:]

    init() {}

    // MARK: Registrations

    /// Adds an observer; returns its initial events (from cached and pending data).
    mutating func addRegistration(id: UInt, type: DataEventType, spec: QuerySpec) -> [RaisedEvent] {
        if views[spec] == nil {
            var view = View(spec: spec)
            if !spec.loadsAllData {
                view.tag = nextTag
                specByTag[nextTag] = spec
                nextTag += 1
            }
            views[spec] = view
            viewOrder.append(spec)
            viewAdded(spec)
        }
        views[spec]!.registrations.append((id, type))
        let view = views[spec]!
        if view.shown.children.isEmpty && !view.valueRaised {
            // A new (or still empty) view: compute what it shows.
            return refresh(spec)
        }
        // An existing view: the new registration catches up from what the view already shows.
        var events: [RaisedEvent] = []
        if type == .childAdded {
            for (position, child) in view.shown.children.enumerated() {
                events.append(RaisedEvent(
                    registration: id, type: .childAdded, path: spec.path.child(child.key), node: child.node,
                    index: spec.query.index, previousKey: position > 0 ? view.shown.children[position - 1].key.string : nil
                ))
            }
        }
        if type == .value, view.valueRaised {
            events.append(RaisedEvent(registration: id, type: .value, path: spec.path, node: view.shown.node, index: spec.query.index))
        }
        return events
    }

    /// Removes an observer; returns whether it existed. Views with no registrations go away.
    @discardableResult
    mutating func removeRegistration(id: UInt) -> Bool {
        for (spec, var view) in views {
            guard let index = view.registrations.firstIndex(where: { $0.id == id }) else { continue }
            view.registrations.remove(at: index)
            if view.registrations.isEmpty {
                removeView(spec)
            } else {
                views[spec] = view
            }
            return true
        }
        return false
    }

    /// The registrations of every view (for removing them all at a location).
    func registrations(of spec: QuerySpec) -> [UInt] {
        views[spec]?.registrations.map(\.id) ?? []
    }

    func registrations(at path: DatabasePath) -> [UInt] {
        views.values.filter { $0.spec.path == path }.flatMap { $0.registrations.map(\.id) }
    }

    private mutating func removeView(_ spec: QuerySpec) {
        guard let view = views.removeValue(forKey: spec) else { return }
        if let tag = view.tag { specByTag[tag] = nil }
        viewOrder.removeAll { $0 == spec }
        viewRemoved(spec)
    }

    // MARK: Listens

    /// Listens that joined and left ``desiredListens`` since the owner last took them.
    struct ListenChanges: Sendable, Equatable {
        var added: Set<ServerListen> = []
        var removed: Set<ServerListen> = []
    }

    /// The listens the server should have for the current views: one per location for views that load
    /// all data, one per filtered query, except those a default listen at or above already covers.
    /// Kept up to date as views come and go, in time proportional to a path's depth except when a
    /// default listen starts or stops shadowing others (then it is recomputed).
    private(set) var desiredListens: Set<ServerListen> = []
    private var listenChanges = ListenChanges()
    /// Per location, the views of the whole location there (they share its default listen).
    private var defaultViewCounts: [DatabasePath: Int] = [:]
    /// Per location, the views a default listen there would shadow: those strictly below it and the
    /// filtered ones at it.
    private var shadowableViewCounts: [DatabasePath: Int] = [:]

    /// The changes to ``desiredListens`` since the last call.
    mutating func takeListenChanges() -> ListenChanges {
        defer { listenChanges = ListenChanges() }
        return listenChanges
    }

    private func hasDefaultView(above path: DatabasePath, includingItself: Bool) -> Bool {
        let end = includingItself ? path.count : path.count - 1
        guard end >= 0 else { return false }
        for length in 0...end where defaultViewCounts[DatabasePath(keys: Array(path.keys.prefix(length)))] != nil {
            return true
        }
        return false
    }

    private mutating func count(_ spec: QuerySpec, _ delta: Int) {
        func adjust(_ counts: inout [DatabasePath: Int], _ path: DatabasePath) {
            let value = (counts[path] ?? 0) + delta
            counts[path] = value == 0 ? nil : value
        }
        if spec.loadsAllData { adjust(&defaultViewCounts, spec.path) } else { adjust(&shadowableViewCounts, spec.path) }
        for length in 0..<spec.path.count { adjust(&shadowableViewCounts, DatabasePath(keys: Array(spec.path.keys.prefix(length)))) }
    }

    private mutating func viewAdded(_ spec: QuerySpec) {
        count(spec, 1)
        if spec.loadsAllData {
            // Another view of the whole location already has the listen, or one above covers it.
            if defaultViewCounts[spec.path]! > 1 || hasDefaultView(above: spec.path, includingItself: false) { return }
            if shadowableViewCounts[spec.path] != nil { return recomputeDesiredListens() }
        } else if hasDefaultView(above: spec.path, includingItself: true) {
            return
        }
        desire(spec.serverListen, true)
    }

    private mutating func viewRemoved(_ spec: QuerySpec) {
        count(spec, -1)
        if spec.loadsAllData {
            if defaultViewCounts[spec.path] != nil || hasDefaultView(above: spec.path, includingItself: false) { return }
            if shadowableViewCounts[spec.path] != nil { return recomputeDesiredListens() }
        }
        desire(spec.serverListen, false)
    }

    private mutating func desire(_ listen: ServerListen, _ wanted: Bool) {
        if wanted {
            guard desiredListens.insert(listen).inserted else { return }
            if listenChanges.removed.remove(listen) == nil { listenChanges.added.insert(listen) }
        } else {
            guard desiredListens.remove(listen) != nil else { return }
            if listenChanges.added.remove(listen) == nil { listenChanges.removed.insert(listen) }
        }
    }

    private mutating func recomputeDesiredListens() {
        var desired: Set<ServerListen> = []
        for spec in views.keys where !hasDefaultView(above: spec.path, includingItself: !spec.loadsAllData) {
            desired.insert(spec.serverListen)
        }
        for listen in desiredListens.subtracting(desired) { desire(listen, false) }
        for listen in desired.subtracting(desiredListens) { desire(listen, true) }
    }

    /// The tag of a filtered listen.
    func tag(for listen: ServerListen) -> Int? {
        guard let query = listen.query else { return nil }
        return views[QuerySpec(path: listen.path, query: query)]?.tag
    }

    /// The hash the server compares with its own data to skip sending it again.
    func hash(for listen: ServerListen) -> String {
        if let query = listen.query {
            return views[QuerySpec(path: listen.path, query: query)]?.ownCache.hash ?? ""
        }
        return serverTree.child(at: listen.path).hash
    }

    /// The owner sent a listen. A filtered listen that takes over from a default listen above it (which
    /// is going away) starts from that listen's data, so the view does not flicker and its hash lets
    /// the server skip resending it.
    mutating func listenStarted(_ listen: ServerListen) {
        activeListens.insert(listen)
        guard let query = listen.query else { return }
        let spec = QuerySpec(path: listen.path, query: query)
        if isComplete(listen.path) {
            views[spec]?.ownCache = query.evaluate(on: serverTree.child(at: listen.path))
            views[spec]?.ownComplete = true
        } else if let window = cachedWindows[spec], views[spec]?.ownCache.isEmpty == true {
            // The persisted window's hash lets the server skip resending it if nothing changed; it
            // counts as complete only once the server acknowledges the listen.
            views[spec]?.ownCache = window
        }
    }

    /// The owner stopped a listen: its data no longer counts as complete and, unless a view still
    /// shows it, is dropped.
    mutating func listenStopped(_ listen: ServerListen) -> [RaisedEvent] {
        activeListens.remove(listen)
        guard listen.isDefault, completePaths.remove(listen.path) != nil else { return [] }
        if completePaths.contains(where: { $0.contains(listen.path) }) || cachedPaths.contains(where: { $0.contains(listen.path) }) {
            return []
        }
        cachedPaths = cachedPaths.filter { !listen.path.contains($0) }
        // Keep data other views at or below still show.
        let kept = views.keys.filter { listen.path.contains($0.path) }.map(\.path)
        var pruned = Node.empty
        for path in kept {
            let relative = path.keys[listen.path.count...]
            pruned = pruned.setting(serverTree.child(at: path), at: relative)
        }
        serverTree = serverTree.setting(pruned, at: listen.path)
        for spec in views.keys where spec.path.contains(listen.path) && spec.path != listen.path {
            views[spec]?.needsFullRefresh = true
        }
        return []
    }

    /// The server acknowledged a listen: its data is now complete, so `value` can fire.
    mutating func listenCompleted(_ listen: ServerListen) -> [RaisedEvent] {
        if let query = listen.query {
            let spec = QuerySpec(path: listen.path, query: query)
            views[spec]?.ownComplete = true
            // The server's answer replaces the persisted window.
            cachedWindows[spec] = nil
            return refresh(spec)
        }
        completePaths.insert(listen.path)
        // The server's answer replaces what the cache said at and below the location.
        cachedPaths = cachedPaths.filter { !listen.path.contains($0) }
        cachedWindows = cachedWindows.filter { !listen.path.contains($0.key.path) }
        return refreshViews(related: [listen.path])
    }

    /// A listen was refused or revoked: the registrations it served, which are removed.
    mutating func listenFailed(_ listen: ServerListen) -> [UInt] {
        let specs = views.keys.filter { spec in
            if let query = listen.query { return spec.path == listen.path && spec.query == query }
            return spec.loadsAllData && spec.path == listen.path
        }
        var cancelled: [UInt] = []
        for spec in specs {
            cancelled += views[spec]?.registrations.map(\.id) ?? []
            removeView(spec)
        }
        activeListens.remove(listen)
        return cancelled
    }

    // MARK: Server data

    mutating func applyServerOverwrite(path: DatabasePath, node: Node, tag: Int?) -> [RaisedEvent] {
        if let tag {
            guard let spec = specByTag[tag], spec.path.contains(path) else { return [] }
            views[spec]!.ownCache = views[spec]!.ownCache.setting(node, at: path.keys[spec.path.count...])
            return refresh(spec)
        }
        // A pending write of `path` or above hides what the server sends there until it is answered
        // (the official SDKs' shadowing write): views built on the server's data stay as they are. The
        // echo of a client's own write is the common case. Only while nothing above `path` changes with
        // it: a leaf above it that becomes an object, or an object that empties and goes, would show.
        // (A view already due for a whole refresh still gets it.)
        var hidden = false
        if refreshesIncrementally, !viewOrder.isEmpty, !node.isEmpty {
            writes.prepareIndex()
            hidden = writes.shadows(path) && Self.holdsChildren(serverTree, above: path)
        }
        let unchanged = hidden ? Set(viewOrder.filter { $0.loadsAllData && views[$0]?.needsFullRefresh != true }) : []
        serverTree = serverTree.setting(node, at: path)
        return refreshViews(related: [path], skipping: unchanged)
    }

    /// Whether every location above `path` holds children in `tree`: then setting a value at `path`
    /// changes nothing above it.
    static func holdsChildren(_ tree: Node, above path: DatabasePath) -> Bool {
        var node = tree
        for key in path.keys {
            guard case .children = node, !node.isEmpty else { return false }
            node = node.child(key)
        }
        return true
    }

    mutating func applyServerMerge(path: DatabasePath, items: [(path: DatabasePath, node: Node)], tag: Int?) -> [RaisedEvent] {
        if let tag {
            guard let spec = specByTag[tag], spec.path.contains(path) else { return [] }
            var cache = views[spec]!.ownCache
            for item in items { cache = cache.setting(item.node, at: (path.appending(item.path)).keys[spec.path.count...]) }
            views[spec]!.ownCache = cache
            return refresh(spec)
        }
        for item in items { serverTree = serverTree.setting(item.node, at: path.appending(item.path)) }
        return refreshViews(related: items.map { path.appending($0.path) })
    }

    // MARK: User writes

    mutating func applyUserOverwrite(writeID: Int, path: DatabasePath, node: Node, visible: Bool = true) -> [RaisedEvent] {
        writes.add(WriteRecord(id: writeID, path: path, changes: [(path, node)], isMerge: false, visible: visible))
        return visible ? refreshViews(related: [path]) : []
    }

    mutating func applyUserMerge(writeID: Int, path: DatabasePath, children: [(path: DatabasePath, node: Node)]) -> [RaisedEvent] {
        let changes = children.map { (path: path.appending($0.path), node: $0.node) }
        writes.add(WriteRecord(id: writeID, path: path, changes: changes, isMerge: true, visible: true))
        return refreshViews(related: changes.map(\.path))
    }

    /// The server answered a write: it leaves the pending writes; a rejected one (`revert`) rolls
    /// back with events, an accepted one usually raises none (the server's data already matched).
    mutating func ackWrite(writeID: Int, revert: Bool) -> [RaisedEvent] {
        guard let record = writes.remove(id: writeID) else { return [] }
        return refreshViews(related: record.changes.map(\.path))
    }

    // MARK: Reading

    /// Whether the server data at `path` is known to be complete.
    func isComplete(_ path: DatabasePath) -> Bool {
        completePaths.contains { $0.contains(path) } || cachedPaths.contains { $0.contains(path) }
    }

    /// Loads data persisted by an earlier run: it counts as complete, so observers see it at once,
    /// and its hash lets the server skip resending it when the listen is made.
    mutating func restoreCache(_ locations: [(path: DatabasePath, node: Node)]) {
        for location in locations {
            serverTree = serverTree.setting(location.node, at: location.path)
            cachedPaths.insert(location.path)
        }
    }

    /// Loads filtered queries' windows persisted by an earlier run (see ``cachedWindows``).
    mutating func restoreWindows(_ windows: [(spec: QuerySpec, node: Node)]) {
        for window in windows where !window.spec.loadsAllData { cachedWindows[window.spec] = window.node }
    }

    /// What the view of a filtered query shows, when it is complete (a listen the server answered,
    /// or a persisted window): a read of that query can be answered without the server.
    func completeWindowShown(for spec: QuerySpec) -> Node? {
        guard !spec.loadsAllData, let view = views[spec], view.shown.complete, view.valueRaised else { return nil }
        return view.shown.node
    }

    /// The query a tag stands for.
    func spec(forTag tag: Int) -> QuerySpec? {
        specByTag[tag]
    }

    /// The window the server sent for a filtered query, once its listen is complete (what persistence
    /// saves for it).
    func completeWindow(of spec: QuerySpec) -> Node? {
        guard let view = views[spec], view.tag != nil, view.ownComplete, activeListens.contains(spec.serverListen) else { return nil }
        return view.ownCache
    }

    /// The outermost locations whose default listen is complete and that contain one of `paths`
    /// (what persistence saves when data under them changes).
    func completeListenRoots(containing paths: [DatabasePath]) -> Set<DatabasePath> {
        var roots: Set<DatabasePath> = []
        for path in paths {
            let holders = completePaths.filter { $0.contains(path) || path.contains($0) }
            for holder in holders where !completePaths.contains(where: { $0 != holder && $0.contains(holder) }) {
                roots.insert(holder)
            }
        }
        return roots
    }

    /// The locations of the default listens in place (kept in the cache over its size limit).
    var listenedPaths: Set<DatabasePath> {
        Set(activeListens.filter(\.isDefault).map(\.path))
    }

    /// The server data at `path` (what the client knows of it).
    func serverValue(at path: DatabasePath) -> Node {
        serverTree.child(at: path)
    }

    /// What the user sees at `path`: server data with pending writes applied.
    func localValue(at path: DatabasePath, excluding writeID: Int? = nil) -> Node {
        writes.apply(to: serverTree.child(at: path), at: path, skipUnknownChildren: false, excluding: writeID).node
    }

    /// The complete value at `path` if the client has it (server data covered by a listen, or a
    /// pending write of the whole location).
    func completeValue(at path: DatabasePath) -> Node? {
        let (node, covered) = writes.apply(to: serverTree.child(at: path), at: path, skipUnknownChildren: false)
        return isComplete(path) || covered ? node : nil
    }

    // MARK: Views

    private func snapshot(of view: View) -> ViewSnapshot {
        let spec = view.spec
        let base: Node
        let baseComplete: Bool
        if isComplete(spec.path) {
            (base, baseComplete) = (serverTree.child(at: spec.path), true)
        } else if !spec.loadsAllData, !view.ownComplete, let window = cachedWindows[spec] {
            (base, baseComplete) = (window, true)
        } else if !spec.loadsAllData, activeListens.contains(spec.serverListen) {
            (base, baseComplete) = (view.ownCache, view.ownComplete)
        } else {
            (base, baseComplete) = (serverTree.child(at: spec.path), false)
        }
        let (node, covered) = writes.apply(to: base, at: spec.path, skipUnknownChildren: !spec.loadsAllData && !baseComplete)
        let window = Query(index: spec.query.index, start: spec.query.start, end: spec.query.end, limit: spec.query.limit).window(over: node)
        var shownNode = node
        if !spec.loadsAllData {
            var children = Node.Children()
            for entry in window { children.entries[entry.key] = entry.node }
            children.priority = node.priority
            shownNode = children.entries.isEmpty ? .empty : .children(children)
        }
        return ViewSnapshot(node: shownNode, children: window, complete: baseComplete || covered)
    }

    /// Updates a view of a whole location after the children `keys` changed, in place, and returns its
    /// events; nil (the view untouched) when the change is not confined to those children, and the
    /// caller recomputes the view whole.
    private mutating func incrementalUpdate(of view: inout View, keys: Set<Key>) -> [EventGenerator.Change]? {
        writes.prepareIndex()
        let spec = view.spec
        guard spec.loadsAllData, keys.count <= max(8, view.shown.children.count / 8) else { return nil }
        // A write of the location or above it may change all of it. A leaf has no children to move:
        // turning into or out of one (the server's leaf shows once the writes below it are answered)
        // changes the whole location.
        guard !writes.shadows(spec.path), !view.shown.node.isLeaf else { return nil }
        let complete = isComplete(spec.path)
        guard complete == view.shown.complete else { return nil }
        // Only the touched children are recomputed, each from the writes that reach it; those that
        // come out as they were (an acknowledged write, the server's echo of it) stay where they are.
        // Without pending writes below the location, what it shows is the server's data there as it is.
        let serverNode = serverTree.child(at: spec.path)
        let written = writes.hasWrites(below: spec.path)
        var node = written ? view.shown.node : serverNode
        var changedKeys: [Key] = []
        for key in keys {
            if written {
                let path = spec.path.child(key)
                let child = writes.applyReaching(serverNode.child(key), at: path)
                guard child != node.child(key) else { continue }
                node = node.replacingChild(key, with: child)
            } else if node.child(key) == view.shown.node.child(key) {
                continue
            }
            changedKeys.append(key)
        }
        let keys = changedKeys
        guard !serverNode.isLeaf, !node.isLeaf else { return nil }
        let query = spec.query

        func lowerBound(_ entry: (key: Key, node: Node), in children: [(key: Key, node: Node)]) -> Int {
            // New children mostly sort last (push ids, timestamps): one comparison, not a search. Keys
            // break every tie, so only the entry itself compares equal.
            if let last = children.last {
                let order = query.compareChildren(last, entry)
                if order < 0 { return children.count }
                if order == 0 { return children.count - 1 }
            }
            var low = 0
            var high = children.count
            while low < high {
                let middle = (low + high) / 2
                if query.compareChildren(children[middle], entry) < 0 { low = middle + 1 } else { high = middle }
            }
            return low
        }

        // Find every touched child at its old place, take them out, then put back those that exist.
        var previous: [(position: Int, key: Key, node: Node)] = []
        for key in keys {
            let before = view.shown.node.child(key)
            guard !before.isEmpty else { continue }
            let position = lowerBound((key, before), in: view.shown.children)
            guard position < view.shown.children.count, view.shown.children[position].key == key else { return nil }
            previous.append((position, key, before))
        }
        previous.sort { $0.position < $1.position }
        for entry in previous.reversed() { view.shown.children.remove(at: entry.position) }
        var before: [Key: Node] = [:]
        for entry in previous { before[entry.key] = entry.node }
        var present: [(key: Key, node: Node)] = []
        for key in keys {
            let now = node.child(key)
            guard !now.isEmpty else { continue }
            view.shown.children.insert((key, now), at: lowerBound((key, now), in: view.shown.children))
            present.append((key, now))
        }
        let removed = previous.filter { node.child($0.key).isEmpty }.map { (key: $0.key, node: $0.node) }
        let candidates = present
            .map { EventGenerator.Candidate(position: lowerBound($0, in: view.shown.children), key: $0.key, node: $0.node, before: before[$0.key]) }
            .sorted { $0.position < $1.position }
        var changes = EventGenerator.childChanges(removed: removed, candidates: candidates, in: view.shown.children, index: query.index)
        let changed = !removed.isEmpty || candidates.contains { $0.before != $0.node }
        if complete && (!view.valueRaised || changed) {
            changes.append(EventGenerator.Change(type: .value, key: nil, node: node, previousKey: nil))
        }
        view.shown.node = node
        view.shown.complete = complete
        return changes
    }

    /// Refreshes the views `paths` touch, except those in `skipping`.
    private mutating func refreshViews(related paths: [DatabasePath], skipping: Set<QuerySpec> = []) -> [RaisedEvent] {
        let affected = viewOrder.filter { spec in
            !skipping.contains(spec) && paths.contains { $0.contains(spec.path) || spec.path.contains($0) }
        }
        // Deeper locations first, as the official SDKs raise them; creation order among equals.
        let ordered = affected.enumerated().sorted { a, b in
            a.element.path.count != b.element.path.count ? a.element.path.count > b.element.path.count : a.offset < b.offset
        }
        var events: [RaisedEvent] = []
        for (_, spec) in ordered { events += refresh(spec, touching: paths) }
        return events
    }

    /// The keys of the children of `location` that `paths` lie in; nil when one of them is at or above
    /// it (the whole location may have changed). Paths elsewhere are ignored. A priority (an update's
    /// `a/.priority`) is a change of its node, not of a child named `.priority`.
    static func childKeys(below location: DatabasePath, of paths: [DatabasePath]) -> Set<Key>? {
        var keys: Set<Key> = []
        for var path in paths {
            if path.isPriority { path.keys.removeLast() }
            guard location.contains(path) || path.contains(location) else { continue }
            guard path.count > location.count else { return nil }
            keys.insert(path.keys[location.count])
        }
        return keys
    }

    /// Recomputes what a view shows and raises the difference. A change below a view of a whole
    /// location touches only some children: those are moved in the sorted children and compared, so
    /// one event costs O(log n) in a list of n children instead of a sort and a diff of all of them.
    private mutating func refresh(_ spec: QuerySpec, touching paths: [DatabasePath]? = nil) -> [RaisedEvent] {
        // Out of the dictionary while it changes, so the view's children array is referenced once and
        // is updated in place rather than copied.
        guard var view = views.removeValue(forKey: spec) else { return [] }
        let changes: [EventGenerator.Change]
        if refreshesIncrementally, !view.needsFullRefresh, let paths,
           let keys = Self.childKeys(below: spec.path, of: paths), let update = incrementalUpdate(of: &view, keys: keys) {
            changes = update
        } else {
            let new = snapshot(of: view)
            changes = EventGenerator.changes(from: view.shown, to: new, index: spec.query.index, valueRaised: view.valueRaised)
            view.shown = new
            view.needsFullRefresh = false
        }
        if changes.contains(where: { $0.type == .value }) { view.valueRaised = true }
        views[spec] = view
        var events: [RaisedEvent] = []
        for change in changes {
            for registration in view.registrations where registration.type == change.type {
                let path = change.key.map { spec.path.child($0) } ?? spec.path
                events.append(RaisedEvent(
                    registration: registration.id, type: change.type, path: path, node: change.node,
                    index: spec.query.index, previousKey: change.previousKey
                ))
            }
        }
        return events
    }
}
