import Dispatch
import Foundation
import Synchronization

/// What an upload or download task is doing, as FirebaseStorage's `StorageTaskStatus`: the events
/// `observe(_:handler:)` listens to.
public enum StorageTaskStatus: Int, Sendable, Hashable {
    case unknown
    /// The task started, or continues after a pause.
    case resume
    /// More bytes were transferred.
    case progress
    /// The task was paused.
    case pause
    /// The task finished.
    case success
    /// The task failed (or was cancelled: the error's code is ``StorageErrorCode/cancelled``).
    case failure
}

/// The identifier `observe(_:handler:)` returns, for `removeObserver(withHandle:)`.
public typealias StorageHandle = String

/// A task's state when an event fired, as FirebaseStorage's `StorageTaskSnapshot`.
///
/// For example:
/// ```swift
/// task.observe(.progress) { snapshot in
///     print(snapshot.progress?.fractionCompleted ?? 0)   // 0.0 … 1.0
/// }
/// ```
public final class StorageTaskSnapshot: Sendable, CustomStringConvertible {
    public let status: StorageTaskStatus
    /// The object the task reads or writes.
    public let reference: StorageReference
    /// The stored object's metadata, once an upload succeeded.
    public let metadata: StorageMetadata?
    /// Bytes transferred so far.
    public let completedUnitCount: Int64
    /// The bytes to transfer (-1 while a download does not know yet).
    public let totalUnitCount: Int64
    let storageError: StorageError?

    init(
        status: StorageTaskStatus, reference: StorageReference, metadata: StorageMetadata?, completedUnitCount: Int64,
        totalUnitCount: Int64, storageError: StorageError?
    ) {
        self.status = status
        self.reference = reference
        self.metadata = metadata
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
        self.storageError = storageError
    }

    /// Why the task failed (a ``StorageError``), on `.failure`.
    public var error: (any Error)? { storageError }

    /// The transfer's progress, in bytes: `fractionCompleted` goes from 0 to 1. A fresh `Progress`
    /// on every access (the task's own state is not a shared object).
    public var progress: Progress? {
        let progress = Progress.discreteProgress(totalUnitCount: totalUnitCount)
        progress.completedUnitCount = completedUnitCount
        return progress
    }

    public var description: String {
        "StorageTaskSnapshot(\(status), \(reference), \(completedUnitCount)/\(totalUnitCount)\(storageError.map { ", \($0)" } ?? ""))"
    }
}

/// The machinery an upload or download task shares: status, progress, observers on the callback
/// queue, pause (between requests), cancel, and the outcome for `await` and completion handlers.
/// Every callback is queued on the callback queue under the lock, so observers see events in order;
/// an `await` on the outcome resumes from that queue too, after the events before it.
final class StorageTaskCore<Output: Sendable>: StorageTaskControl {
    typealias Handler = @Sendable (StorageTaskSnapshot) -> Void

    let reference: StorageReference
    let queue: DispatchQueue
    private let state: Mutex<State>

    private struct Observer {
        var handle: String
        var status: StorageTaskStatus
        var handler: Handler
    }

    private struct State {
        var status = StorageTaskStatus.unknown
        var completed: Int64 = 0
        var total: Int64 = -1
        var metadata: StorageMetadata?
        var error: StorageError?
        var outcome: Result<Output, StorageError>?
        var observers: [Observer] = []
        var nextHandle = 1
        var paused = false
        var cancelled = false
        var pauseWaiters: [CheckedContinuation<Void, Never>] = []
        var resultWaiters: [CheckedContinuation<Output, any Error>] = []
        var completions: [@Sendable (Result<Output, StorageError>) -> Void] = []
        var work: Task<Void, Never>?
    }

    init(reference: StorageReference, queue: DispatchQueue, total: Int64) {
        self.reference = reference
        self.queue = queue
        state = Mutex(State(total: total))
    }

    /// Runs `body` in a task of its own: `.resume` first, then `.success` or `.failure` with its outcome.
    func start(metadataOf: @escaping @Sendable (Output) -> StorageMetadata?, _ body: @escaping @Sendable () async throws -> Output) {
        state.withLock { state in
            // Once: enqueue() is public, and a second call must not run the work twice.
            guard state.outcome == nil, state.work == nil else { return }
            state.status = .resume
            emit(&state, .resume)
            state.work = Task {
                let result: Result<Output, StorageError>
                do {
                    try self.checkpoint()
                    result = .success(try await body())
                } catch let error as StorageError {
                    result = .failure(error)
                } catch is CancellationError {
                    result = .failure(StorageError(.cancelled, "User cancelled the operation."))
                } catch {
                    result = .failure(StorageError(.unknown, "\(error)"))
                }
                let cancelled = self.state.withLock { $0.cancelled }
                if cancelled, case .failure = result {
                    self.finish(.failure(StorageError(.cancelled, "User cancelled the operation.")), metadata: nil)
                } else {
                    self.finish(result, metadata: (try? result.get()).flatMap(metadataOf))
                }
            }
        }
    }

    var snapshot: StorageTaskSnapshot { state.withLock { snapshot($0) } }

    private func snapshot(_ state: State) -> StorageTaskSnapshot {
        StorageTaskSnapshot(
            status: state.status, reference: reference, metadata: state.metadata, completedUnitCount: state.completed,
            totalUnitCount: state.total, storageError: state.error
        )
    }

    /// Queues the observers of `status` (under the lock, so events keep their order).
    private func emit(_ state: inout State, _ status: StorageTaskStatus) {
        let snapshot = snapshot(state)
        for observer in state.observers where observer.status == status {
            let handler = observer.handler
            queue.async { handler(snapshot) }
        }
    }

    // MARK: Observers

    func observe(_ status: StorageTaskStatus, _ handler: @escaping Handler) -> StorageHandle {
        state.withLock { state in
            let handle = String(state.nextHandle)
            state.nextHandle += 1
            if state.outcome != nil {
                // A task that is over tells a late observer of its end at once (Firebase's would not call it).
                if state.status == status {
                    let snapshot = snapshot(state)
                    queue.async { handler(snapshot) }
                }
                return handle
            }
            state.observers.append(Observer(handle: handle, status: status, handler: handler))
            return handle
        }
    }

    func removeObserver(_ handle: StorageHandle) {
        state.withLock { $0.observers.removeAll { $0.handle == handle } }
    }

    func removeAllObservers(for status: StorageTaskStatus) {
        state.withLock { $0.observers.removeAll { $0.status == status } }
    }

    func removeAllObservers() {
        state.withLock { $0.observers.removeAll() }
    }

    func onCompletion(_ completion: @escaping @Sendable (Result<Output, StorageError>) -> Void) {
        state.withLock { state in
            if let outcome = state.outcome {
                queue.async { completion(outcome) }
            } else {
                state.completions.append(completion)
            }
        }
    }

    // MARK: Progress, pause, cancel

    /// Records the bytes transferred and tells the `.progress` observers.
    func progress(completed: Int64, total: Int64? = nil) {
        state.withLock { state in
            guard state.outcome == nil else { return }
            state.completed = completed
            if let total { state.total = total }
            state.status = .progress
            emit(&state, .progress)
            // A chunk that was in flight when the task paused: the task stays paused.
            if state.paused { state.status = .pause }
        }
    }

    func pause() {
        state.withLock { state in
            guard state.outcome == nil, !state.paused, !state.cancelled else { return }
            state.paused = true
            state.status = .pause
            emit(&state, .pause)
        }
    }

    func resume() {
        state.withLock { state in
            guard state.outcome == nil, state.paused else { return }
            state.paused = false
            for waiter in state.pauseWaiters { waiter.resume() }
            state.pauseWaiters.removeAll()
            state.status = .resume
            emit(&state, .resume)
        }
    }

    func cancel() {
        let work = state.withLock { state -> Task<Void, Never>? in
            guard state.outcome == nil, !state.cancelled else { return nil }
            state.cancelled = true
            state.paused = false
            for waiter in state.pauseWaiters { waiter.resume() }
            state.pauseWaiters.removeAll()
            return state.work
        }
        work?.cancel()
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Throws `cancelled` after `cancel()`.
    func checkpoint() throws(StorageError) {
        if isCancelled { throw StorageError(.cancelled, "User cancelled the operation.") }
    }

    /// Between requests: waits while paused, and throws `cancelled` after `cancel()`.
    func pausePoint() async throws(StorageError) {
        try checkpoint()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                if state.paused { state.pauseWaiters.append(continuation) } else { continuation.resume() }
            }
        }
        try checkpoint()
    }

    // MARK: The outcome

    func finish(_ result: Result<Output, StorageError>, metadata: StorageMetadata?) {
        state.withLock { state in
            guard state.outcome == nil else { return }
            state.outcome = result
            state.work = nil
            switch result {
            case .success:
                state.metadata = metadata
                state.status = .success
                emit(&state, .success)
            case .failure(let error):
                state.error = error
                state.status = .failure
                emit(&state, .failure)
            }
            state.observers.removeAll()
            for completion in state.completions { queue.async { completion(result) } }
            state.completions.removeAll()
            let waiters = state.resultWaiters
            state.resultWaiters.removeAll()
            if !waiters.isEmpty {
                queue.async {
                    for waiter in waiters { waiter.resume(with: result.mapError { $0 as any Error }) }
                }
            }
        }
    }

    /// The outcome, once the task is over (resumed from the callback queue, after the task's events).
    func value() async throws -> Output {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Output, any Error>) in
            state.withLock { state in
                if let outcome = state.outcome {
                    queue.async { continuation.resume(with: outcome.mapError { $0 as any Error }) }
                } else {
                    state.resultWaiters.append(continuation)
                }
            }
        }
    }
}

/// What ``StorageTask`` and ``StorageObservableTask`` need of a task's core, whatever its output.
protocol StorageTaskControl: Sendable {
    var snapshot: StorageTaskSnapshot { get }
    func observe(_ status: StorageTaskStatus, _ handler: @escaping @Sendable (StorageTaskSnapshot) -> Void) -> StorageHandle
    func removeObserver(_ handle: StorageHandle)
    func removeAllObservers(for status: StorageTaskStatus)
    func removeAllObservers()
    func pause()
    func resume()
    func cancel()
}

/// The base of FirebaseStorage's tasks: what every task has, its ``snapshot``.
open class StorageTask: @unchecked Sendable {
    // @unchecked: the only state is the control, which is Sendable.
    let control: any StorageTaskControl

    init(control: any StorageTaskControl) {
        self.control = control
    }

    /// The task's state now.
    public var snapshot: StorageTaskSnapshot { control.snapshot }
}

/// A task whose events can be observed: ``StorageUploadTask`` and ``StorageDownloadTask``.
///
/// ```swift
/// let task: StorageObservableTask = ref.putData(data)
/// let handle = task.observe(.progress) { print($0.progress?.fractionCompleted ?? 0) }
/// task.removeObserver(withHandle: handle)
/// ```
open class StorageObservableTask: StorageTask, @unchecked Sendable {
    /// Calls `handler` on the callback queue for every event of `status` (`.progress` after each
    /// chunk or range; `.success` and `.failure` once). Returns a handle for
    /// ``removeObserver(withHandle:)``. An observer of `.success`/`.failure` added after the task ended
    /// is called at once with the final snapshot.
    @discardableResult
    public func observe(_ status: StorageTaskStatus, handler: @escaping @Sendable (StorageTaskSnapshot) -> Void) -> StorageHandle {
        control.observe(status, handler)
    }

    /// Stops calling the observer `observe` returned `handle` for.
    public func removeObserver(withHandle handle: StorageHandle) { control.removeObserver(handle) }
    /// Stops calling every observer of `status`.
    public func removeAllObservers(for status: StorageTaskStatus) { control.removeAllObservers(for: status) }
    /// Stops calling every observer.
    public func removeAllObservers() { control.removeAllObservers() }
}

/// Starting, pausing, resuming and cancelling a task (FirebaseStorage's `StorageTaskManagement`).
/// The SDK's calls (`putData`, `putFile`, `getData`, `write`) start their tasks already: `enqueue()`
/// again does nothing.
public protocol StorageTaskManagement: AnyObject {
    /// Starts the task (once).
    func enqueue()
    /// Pauses before the next request.
    func pause()
    /// Stops the task; it fails with `cancelled`.
    func cancel()
    /// Continues a paused task.
    func resume()
}
