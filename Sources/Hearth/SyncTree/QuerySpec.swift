import HearthCore

/// A location plus the query over it: what one view shows.
struct QuerySpec: Sendable, Hashable, CustomStringConvertible {
    var path: DatabasePath
    var query: Query

    init(path: DatabasePath, query: Query = .all) {
        self.path = path
        self.query = query
    }

    /// No range and no limit: the view shows the whole location (in some order), so the server listen
    /// is the location's default listen.
    var loadsAllData: Bool { query.start == nil && query.end == nil && query.limit == nil }

    /// The listen the server needs for this view when nothing shadows it.
    var serverListen: ServerListen {
        loadsAllData ? ServerListen(path: path, query: nil) : ServerListen(path: path, query: query)
    }

    var description: String { "\(path) \(query)" }
}

/// A listen as the server sees it: a location, and a query for filtered listens (which carry a tag).
struct ServerListen: Sendable, Hashable {
    var path: DatabasePath
    var query: Query?

    var isDefault: Bool { query == nil }
}

/// The kinds of events a registration receives (FirebaseDatabase's raw values).
///
/// For example:
/// ```swift
/// ref.observe(.childAdded) { snapshot in print(snapshot.key) }
/// ```
public enum DataEventType: Int, Sendable, Hashable, CaseIterable {
    /// A child was added (or entered a query's window).
    case childAdded = 0
    /// A child was removed (or left a query's window).
    case childRemoved = 1
    /// A child's data changed.
    case childChanged = 2
    /// A child's position in the query's order changed.
    case childMoved = 3
    /// The whole data changed; fires once per change, after the child events.
    case value = 4
}
