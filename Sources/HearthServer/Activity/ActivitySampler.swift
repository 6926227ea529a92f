import HearthEngine
import HearthStorage

/// Reads the live state (connections, listens, stored bytes) and the counters into one view, for the
/// console's Activity view, and sets the gauges of `/metrics` on the way.
struct ActivitySampler: Sendable {
    struct DatabaseState: Sendable {
        var namespace: String
        var listens: Int
        var reads: Int
        var writes: Int
        var denied: Int
        /// Nil when the database is kept in memory only.
        var storedBytes: Int64?
    }

    struct Sample: Sendable {
        var websocketConnections: Int
        var eventStreams: Int
        var databases: [DatabaseState]
    }

    let activity: ServerActivity
    let registry: DatabaseRegistry
    let realtime: RealtimeServices

    func sample() async -> Sample {
        let open = registry.openDatabases.sorted { $0.namespace < $1.namespace }
        var states: [DatabaseState] = []
        var streams = 0
        for database in open {
            let stored = try? await database.storage.storedBytes()
            let totals = activity.totals(database.namespace)
            streams += database.hub.listenerCount
            states.append(DatabaseState(
                namespace: database.namespace, listens: database.realtime.listenCount + database.hub.listenerCount,
                reads: totals.reads, writes: totals.writes, denied: totals.denied, storedBytes: stored ?? nil
            ))
        }
        let sample = Sample(websocketConnections: realtime.sessions.count, eventStreams: streams, databases: states)
        activity.setGauges(sample)
        return sample
    }
}
