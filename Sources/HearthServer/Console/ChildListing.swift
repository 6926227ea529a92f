import HearthAccess
import HearthCore
import HearthEngine
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

    func register(on router: Router<HearthRequestContext>) {
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
        let database: DatabaseInstance
        switch await ConsoleController.databaseToRead(namespace, registry: registry, configuration: configuration) {
        case .success(let found): database = found
        case .failure(let answer): return answer.response
        }
        let node = database.snapshot().child(at: path)
        let bytes = Self.render(node, window: await window(of: node, at: "\(namespace)\u{0}\(path)", offset: offset, limit: limit), offset: offset)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store", .contentLength: String(bytes.count)],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    /// The children at `offset..<offset+limit` in key order.
    func window(of node: Node, at location: String, offset: Int, limit: Int) async -> [(key: Key, node: Node)] {
        guard case .children(let children) = node, limit > 0, offset < children.entries.count else { return [] }
        let keys: ArraySlice<Key>
        if let sorted = sortedKeys.cachedKeys(of: children.entries, at: location) {
            keys = sorted[offset..<min(sorted.count, offset + limit)]
        } else if offset == 0 {
            // One pass for the page the console opens with; the sort for the other pages starts now, in
            // the background, so scrolling (and the console's refreshes of this page) finds it ready.
            keys = SortedKeys.first(limit, of: children.entries.keys)[...]
            // One background sort per location at a time: while writes keep changing a big node's keys,
            // each refresh of its first page must not start another.
            if !sortedKeys.isSorting(at: location) {
                let entries = children.entries
                Task.detached(priority: .utility) { [sortedKeys] in _ = await sortedKeys.keys(of: entries, at: location) }
            }
        } else {
            let sorted = await sortedKeys.keys(of: children.entries, at: location)
            keys = sorted[offset..<min(sorted.count, offset + limit)]
        }
        return keys.map { key in (key: key, node: children.entries[key] ?? .empty) }
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
        var keys: ChildMap.Keys
        var sorted: [Key]
        var used: UInt64
    }

    static let capacity = 4
    private let entries = Mutex<(clock: UInt64, byLocation: [String: Entry])>((0, [:]))
    /// Sorts under way, by location, so concurrent requests wait for one sort instead of each doing it.
    private let sorting = Mutex<[String: (keys: ChildMap.Keys, task: Task<[Key], Never>)]>([:])

    /// The cached keys of `children` in Firebase key order, if they are still its keys.
    func cachedKeys(of children: ChildMap, at location: String) -> [Key]? {
        entries.withLock { state in
            state.clock += 1
            guard var entry = state.byLocation[location], entry.keys == children.keys else { return nil }
            entry.used = state.clock
            state.byLocation[location] = entry
            return entry.sorted
        }
    }

    /// Whether a sort of the location's keys is under way.
    func isSorting(at location: String) -> Bool {
        sorting.withLock { $0[location] != nil }
    }

    /// The keys of `children` in Firebase key order: cached, being sorted (waits for it), or sorted now.
    func keys(of children: ChildMap, at location: String) async -> [Key] {
        if let cached = cachedKeys(of: children, at: location) { return cached }
        let keys = children.keys
        let task = sorting.withLock { sorting in
            if let running = sorting[location], running.keys == keys { return running.task }
            let task = Task.detached(priority: .userInitiated) { Self.firebaseOrder(keys) }
            sorting[location] = (keys, task)
            return task
        }
        let sorted = await task.value
        sorting.withLock { sorting in
            if sorting[location]?.keys == keys { sorting[location] = nil }
        }
        entries.withLock { state in
            state.byLocation[location] = Entry(keys: keys, sorted: sorted, used: state.clock)
            while state.byLocation.count > Self.capacity, let oldest = state.byLocation.min(by: { $0.value.used < $1.value.used }) {
                state.byLocation[oldest.key] = nil
            }
        }
        return sorted
    }

    /// `keys` in Firebase key order (integer-like keys by value, then the rest by UTF-16 code units),
    /// like `keys.sorted()` but faster for the usual case: ASCII keys compare the same by the standard
    /// library's string order, which sorts without a call to `Key.compare` per comparison.
    static func firebaseOrder(_ keys: some Sequence<Key>) -> [Key] {
        guard let (integers, ascii) = partition(keys) else { return keys.sorted() }
        return integers.sorted() + ascii.sorted().map { Key($0) }
    }

    /// The first `count` of `keys` in Firebase key order, in one pass (a bounded heap) for the usual
    /// case of ASCII keys: no sort of all of them.
    static func first(_ count: Int, of keys: some Sequence<Key>) -> [Key] {
        guard let (integers, ascii) = partition(keys) else {
            return Query(limit: .first(count)).window(over: .children(.init(entries: ChildMap(entries: keys.map { (key: $0, value: Node.leaf(.bool(true))) })))).map(\.key)
        }
        let firstIntegers = integers.sorted().prefix(count)
        let wanted = count - firstIntegers.count
        guard wanted > 0 else { return Array(firstIntegers) }
        // A max-heap of the `wanted` least strings seen: its root is the one to drop first.
        var heap: [String] = []
        heap.reserveCapacity(wanted)
        for string in ascii {
            if heap.count < wanted {
                heap.append(string)
                var i = heap.count - 1
                while i > 0, heap[(i - 1) / 2] < heap[i] {
                    heap.swapAt(i, (i - 1) / 2)
                    i = (i - 1) / 2
                }
            } else if string < heap[0] {
                heap[0] = string
                var i = 0
                while true {
                    let left = 2 * i + 1, right = left + 1
                    var top = i
                    if left < heap.count, heap[top] < heap[left] { top = left }
                    if right < heap.count, heap[top] < heap[right] { top = right }
                    if top == i { break }
                    heap.swapAt(i, top)
                    i = top
                }
            }
        }
        return Array(firstIntegers) + heap.sorted().map { Key($0) }
    }

    /// Integer-like keys, and the others as strings when they are all ASCII (nil otherwise).
    static func partition(_ keys: some Sequence<Key>) -> (integers: [Key], ascii: [String])? {
        var integers: [Key] = []
        var ascii: [String] = []
        ascii.reserveCapacity(keys.underestimatedCount)
        for key in keys {
            if key.integerValue != nil {
                integers.append(key)
            } else if (key.string.utf8.max() ?? 0) < 0x80 {
                ascii.append(key.string)
            } else {
                return nil
            }
        }
        return (integers, ascii)
    }
}
