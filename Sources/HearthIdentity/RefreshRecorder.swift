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
    private let store: any UserStore
    private let logger: Logger
    private let delay: Duration
    /// The refreshes waiting for the next batch, by user; nil while no batch is scheduled.
    private let pending = Mutex<[String: UserRefresh]?>(nil)

    init(store: any UserStore, logger: Logger, delay: Duration = .seconds(1)) {
        self.store = store
        self.logger = logger
        self.delay = delay
    }

    func record(_ refresh: UserRefresh) {
        let key = refresh.project + "\u{0}" + refresh.localId
        let scheduled = pending.withLock { pending -> Bool in
            guard pending != nil else {
                pending = [key: refresh]
                return false
            }
            pending?[key] = refresh
            return true
        }
        guard !scheduled else { return }
        Task { [self] in
            try? await Task.sleep(for: delay)
            let batch = pending.withLock { pending -> [UserRefresh] in
                defer { pending = nil }
                return Array((pending ?? [:]).values)
            }
            do {
                try await store.recordRefreshes(batch)
            } catch {
                logger.warning("Token refreshes could not be recorded", metadata: ["hearth.error": "\(error)", "hearth.refreshes": "\(batch.count)"])
            }
        }
    }
}
