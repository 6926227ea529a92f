import HashTreeCollections
import HearthCore
import Hummingbird
import NIOCore
import Synchronization

/// The console's window on a big node: `GET /.console/children?ns=&path=&offset=&limit=` answers
/// the node's child count and the children at positions `offset..<offset+limit` in key order, each
/// as `{"key", "value"}` (a leaf) or `{"key", "children": n}` (an object, summarised), so the data
/// tree can scroll a million children by position without ever loading them all.
///
/// `count` is free (the children's dictionary knows it). The first page is chosen in one pass; any
/// other offset needs the keys sorted once, which `SortedKeys` keeps per location until its set of
/// keys changes (value changes keep it: the order is by key).
///
/// For example:
/// ```sh
/// curl -H "Authorization: Bearer $SESSION" 'http://127.0.0.1:9000/.console/children?path=/big&offset=500000&limit=100'
/// # {"count":1000000,"offset":500000,"children":[{"key":"k0500000","value":500000},…]}
/// ```
struct ChildListing: Sendable {
    let sessions: ConsoleSessions
    let registry: DatabaseRegistry
    let configuration: ServerConfiguration
    let sortedKeys = SortedKeys()

    static let maximumLimit = 1000

    func register(on router: Router<BasicRequestContext>) {
        router.get("/.console/children") { request, _ in await self.children(request) }
    }

    func children(_ request: Request) async -> Response {
        guard let token = Authenticator.bearerToken(request.headers[.authorization]), sessions.isValid(token) else {
            return ConsoleController.json(.object([("error", .string("Sign in to the console first."))]), status: 401)
        }
        let parameters = request.uri.queryParameters
        let namespace = parameters.get("ns") ?? configuration.defaultNamespace
        let offset = parameters.get("offset").map { Int($0) } ?? 0
        let limit = parameters.get("limit").map { Int($0) } ?? 100
        guard let offset, let limit, offset >= 0, (0...Self.maximumLimit).contains(limit) else {
            return ConsoleController.json(.object([("error", .string("offset must be 0 or more and limit 0 to \(Self.maximumLimit)."))]), status: 400)
        }
        let path: DatabasePath
        do { path = try DatabasePath(parameters.get("path") ?? "/") } catch {
            return ConsoleController.json(.object([("error", .string("Invalid path: \(error.message)"))]), status: 400)
        }
        let database: Database
        do { database = try await registry.database(namespace) } catch {
            return ConsoleController.json(.object([("error", .string("The database \(namespace) cannot be opened."))]), status: 400)
        }
        let node = database.snapshot().child(at: path)
        let bytes = Self.render(node, window: window(of: node, at: "\(namespace)\u{0}\(path)", offset: offset, limit: limit), offset: offset)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store", .contentLength: String(bytes.count)],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    /// The children at `offset..<offset+limit` in key order.
    func window(of node: Node, at location: String, offset: Int, limit: Int) -> [(key: Key, node: Node)] {
        guard case .children(let children) = node, limit > 0, offset < children.entries.count else { return [] }
        if offset == 0 {
            if let keys = sortedKeys.cachedKeys(of: children.entries, at: location) {
                return Array(keys.prefix(limit)).map { key in (key: key, node: children.entries[key] ?? .empty) }
            }
            // One pass for the page the console opens with; the sort for the other pages starts now, in
            // the background, so scrolling (and the console's refreshes of this page) finds it ready.
            let entries = children.entries
            if sortedKeys.claimSort(at: location) {
                Task.detached(priority: .utility) { [sortedKeys] in _ = sortedKeys.keys(of: entries, at: location) }
            }
            return Query(limit: .first(limit)).window(over: node)
        }
        let keys = sortedKeys.keys(of: children.entries, at: location)
        return keys[offset..<min(keys.count, offset + limit)].map { key in (key: key, node: children.entries[key] ?? .empty) }
    }

    static func render(_ node: Node, window: [(key: Key, node: Node)], offset: Int) -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + window.count * 48)
        writer.beginObject()
        writer.writeKey("count")
        writer.writeNumber(Double(node.childCount))
        writer.comma()
        writer.writeKey("offset")
        writer.writeNumber(Double(offset))
        if node.isLeaf {
            writer.comma()
            writer.writeKey("value")
            node.write(to: &writer)
        }
        writer.comma()
        writer.writeKey("children")
        writer.beginArray()
        for (index, entry) in window.enumerated() {
            if index > 0 { writer.comma() }
            writer.beginObject()
            writer.writeKey("key")
            writer.writeString(entry.key.string)
            writer.comma()
            if entry.node.isLeaf {
                writer.writeKey("value")
                entry.node.write(to: &writer)
            } else {
                writer.writeKey("children")
                writer.writeNumber(Double(entry.node.childCount))
            }
            writer.endObject(empty: false)
        }
        writer.endArray(empty: window.isEmpty)
        writer.endObject(empty: false)
        return writer.bytes
    }
}

/// The sorted keys of a few recently browsed locations. An entry stays valid while the location's
/// key set is the same: comparing two versions of a persistent dictionary's keys skips every subtree
/// they share, so after a value change the check costs the changed path, not a million keys.
final class SortedKeys: Sendable {
    struct Entry {
        var keys: TreeDictionary<Key, Node>.Keys
        var sorted: [Key]
        var used: UInt64
    }

    static let capacity = 4
    private let entries = Mutex<(clock: UInt64, byLocation: [String: Entry])>((0, [:]))
    /// Locations whose keys a background task is sorting.
    private let sorting = Mutex<Set<String>>([])

    /// The cached keys of `children` in Firebase key order, if they are still its keys.
    func cachedKeys(of children: TreeDictionary<Key, Node>, at location: String) -> [Key]? {
        entries.withLock { state in
            state.clock += 1
            guard var entry = state.byLocation[location], entry.keys == children.keys else { return nil }
            entry.used = state.clock
            state.byLocation[location] = entry
            return entry.sorted
        }
    }

    /// True for the first caller since the last sort of `location`: it starts the background sort.
    func claimSort(at location: String) -> Bool {
        sorting.withLock { $0.insert(location).inserted }
    }

    /// The keys of `children` in Firebase key order, sorted now or taken from the cache.
    func keys(of children: TreeDictionary<Key, Node>, at location: String) -> [Key] {
        if let cached = cachedKeys(of: children, at: location) { return cached }
        // Sorted outside the lock: other locations need not wait for it.
        let sorted = children.keys.sorted()
        defer { _ = sorting.withLock { $0.remove(location) } }
        entries.withLock { state in
            state.byLocation[location] = Entry(keys: children.keys, sorted: sorted, used: state.clock)
            while state.byLocation.count > Self.capacity, let oldest = state.byLocation.min(by: { $0.value.used < $1.value.used }) {
                state.byLocation[oldest.key] = nil
            }
        }
        return sorted
    }
}
