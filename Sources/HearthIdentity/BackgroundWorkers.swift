import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Threads for CPU-heavy work that must not slow realtime traffic (password hashing): they run at a
/// lower scheduling priority than the event loops, so a sign-in storm uses the cores that are idle
/// but yields them to WebSocket and REST work. Measured on 2 cores: the write-to-listener p99
/// during a storm of sign-ins (docs/benchmarks.md, "Sign-in").
///
/// For example:
/// ```swift
/// let key = try await BackgroundWorkers.shared.run { try scrypt(password) }
/// ```
final class BackgroundWorkers: Sendable {
    static let shared = BackgroundWorkers(threads: max(1, ProcessInfo.processInfo.activeProcessorCount))

    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)

    init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in
                Self.lowerPriority()
                while true {
                    available.wait()
                    let job = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                    job?()
                }
            }
            thread.name = "hearth-background-\(index)"
            thread.start()
        }
    }

    /// Runs `work` on a background thread and returns its result.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            jobs.withLock { $0.append { continuation.resume(with: Result { try work() }) } }
            available.signal()
        }
    }

    private static func lowerPriority() {
        #if os(Linux)
        // A nice value of 10 for this thread only: on Linux the nice value is per thread, and
        // `who = 0` names the calling thread.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #elseif canImport(Darwin)
        _ = pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0)
        #endif
    }
}
