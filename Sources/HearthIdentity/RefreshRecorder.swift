import HearthStorage
import Logging
import Synchronization

/// Records token refreshes as users' `lastRefreshAt` (firebase-admin's `last_refresh_timestamp`), a
/// second's worth at a time in one store transaction: one synced write per refresh would put a
/// reconnecting fleet's refreshes on the writer sign-ins wait for. A user refreshed twice in a batch is
/// written once. Metadata only: a batch not yet written when the process stops is lost (at most a
/// second of refreshes), and no answer waits for it.
///
/// For example:
/// ```swift
/// let recorder = RefreshRecorder(store: store, logger: logger)
/// recorder.record(UserRefresh(project: "demo", localId: "ada", at: now))
/// ```
final class RefreshRecorder: Sendable {
    private struct State {
        /// The refreshes waiting for the next batch, by user (the latest of each).
        var pending: [String: UserRefresh] = [:]
        /// Whether the one flushing task runs (it stops once a batch comes up empty).
        var flushing = false
    }

    private let store: any UserStore
    private let logger: Logger
    private let delay: Duration
    private let state = Mutex(State())

    init(store: any UserStore, logger: Logger, delay: Duration = .seconds(1)) {
        self.store = store
        self.logger = logger
        self.delay = delay
    }

    func record(_ refresh: UserRefresh) {
        let key = refresh.project + "\u{0}" + refresh.localId
        let start = state.withLock { state -> Bool in
            if let earlier = state.pending[key], earlier.at >= refresh.at { return false }
            state.pending[key] = refresh
            guard !state.flushing else { return false }
            state.flushing = true
            return true
        }
        guard start else { return }
        Task { await flush() }
    }

    /// Writes a batch a second, one at a time (a stalled disk holds the refreshes in `pending`, not in
    /// more tasks), until a second passes without refreshes.
    private func flush() async {
        while true {
            try? await Task.sleep(for: delay)
            let batch = state.withLock { state -> [UserRefresh] in
                let batch = Array(state.pending.values)
                state.pending = [:]
                if batch.isEmpty { state.flushing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try await store.recordRefreshes(batch)
            } catch {
                logger.warning("Token refreshes could not be recorded", metadata: ["hearth.error": "\(error)", "hearth.refreshes": "\(batch.count)"])
            }
        }
    }
}
