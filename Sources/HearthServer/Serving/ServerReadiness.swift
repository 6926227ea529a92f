import HearthStorage
import Synchronization

/// Whether the server should be sent new clients: what `GET /readyz` answers.
///
/// It is ready once it listens with its stored databases loaded, for as long as its storage answers
/// (and, on PostgreSQL, its membership heartbeats are fresh), until a stop begins.
///
/// For example:
/// ```swift
/// let readiness = ServerReadiness(storage: storage, probeNamespace: "default")
/// readiness.serving()
/// await readiness.check()   // .ready
/// ```
final class ServerReadiness: Sendable {
    enum Phase: Sendable {
        /// Not listening yet, or still loading.
        case starting
        case serving
        /// A stop has begun (SIGTERM, SIGINT): requests are still served, new clients should go elsewhere.
        case draining
    }

    enum Answer: Equatable, Sendable {
        case ready
        case notReady(String)
    }

    private let phase = Mutex(Phase.starting)
    let storage: any DatabaseStorage
    let probeNamespace: String
    /// How long the storage may take to answer a probe before the server counts as not ready.
    let probeTimeout: Duration
    /// How long a probe's answer stands. `/readyz` needs no credentials: a flood of it shares one storage
    /// query per period (and the one in flight) instead of queueing a query each on the storage's
    /// connections, ahead of the writes.
    let probeReuse: Duration

    private struct Probe {
        var inFlight: Task<Bool, Never>?
        var last: (answered: Bool, at: ContinuousClock.Instant)?
        /// A storage query still running after its probe gave up on it (a connection that never answers):
        /// the storage is not answering, and no other query is started meanwhile.
        var queryOutstanding = false
    }

    private let probe = Mutex(Probe())

    init(storage: any DatabaseStorage, probeNamespace: String, probeTimeout: Duration = .seconds(2), probeReuse: Duration = .seconds(1)) {
        self.storage = storage
        self.probeNamespace = probeNamespace
        self.probeTimeout = probeTimeout
        self.probeReuse = probeReuse
    }

    /// The server listens, its stored databases loaded.
    func serving() {
        phase.withLock { if $0 == .starting { $0 = .serving } }
    }

    /// A stop has begun: not ready again.
    func draining() {
        phase.withLock { $0 = .draining }
    }

    var currentPhase: Phase { phase.withLock { $0 } }

    /// The answer `/readyz` gives now; asks the storage, so a server whose database went away stops
    /// being ready.
    func check() async -> Answer {
        switch currentPhase {
        case .starting: return .notReady("starting")
        case .draining: return .notReady("draining")
        case .serving: break
        }
        if let shared = storage as? any SharedDatabaseStorage, !shared.isLeaseFresh {
            return .notReady("unavailable")
        }
        return await storageAnswers() ? .ready : .notReady("unavailable")
    }

    /// Whether the storage answered a probe within ``probeTimeout``: the last probe's answer while it is
    /// younger than ``probeReuse``, else that of the probe in flight, else of a new one.
    func storageAnswers() async -> Bool {
        enum Next {
            case known(Bool)
            case wait(Task<Bool, Never>)
        }
        let next: Next = probe.withLock { state in
            if let last = state.last, ContinuousClock.now - last.at < probeReuse { return .known(last.answered) }
            if let inFlight = state.inFlight { return .wait(inFlight) }
            let task = Task { await self.probeStorage() }
            state.inFlight = task
            return .wait(task)
        }
        switch next {
        case .known(let answered): return answered
        case .wait(let task): return await task.value
        }
    }

    private func probeStorage() async -> Bool {
        let answered = probe.withLock({ $0.queryOutstanding }) ? false : await queryStorage()
        probe.withLock { state in
            state.inFlight = nil
            state.last = (answered, .now)
        }
        return answered
    }

    /// Asks the storage whether the probe's namespace exists: true if it answers within ``probeTimeout``.
    /// ``Deadline`` returns at the timeout even if the query does not end (a query may ignore
    /// cancellation); until it does end, no other query is started.
    private func queryStorage() async -> Bool {
        let storage = storage
        let namespace = probeNamespace
        probe.withLock { $0.queryOutstanding = true }
        let answered = try? await Deadline.run(probeTimeout) { [self] in
            defer { probe.withLock { $0.queryOutstanding = false } }
            return try await storage.contains(namespace: namespace)
        }
        return answered != nil
    }
}
