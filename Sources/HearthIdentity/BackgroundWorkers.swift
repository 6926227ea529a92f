import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Threads for CPU-heavy work that must not slow realtime traffic (password hashing): one fewer than
/// the cores (at least one), at a lower scheduling priority than the event loops, so a sign-in storm
/// can never occupy every core. A lower priority alone was not enough on 2 cores: with a hashing
/// thread on each, the write-to-listener p99 during a storm stayed at 20–24 ms whatever the priority
/// (docs/benchmarks.md, "Sign-in" and issue 30's entry).
///
/// For example:
/// ```swift
/// let key = try await BackgroundWorkers.shared.run { try scrypt(password) }
/// ```
final class BackgroundWorkers: Sendable {
    static let shared = BackgroundWorkers(threads: threadCount(ProcessInfo.processInfo.environment, cores: ProcessInfo.processInfo.activeProcessorCount))

    /// `HEARTH_HASHING_THREADS` if set to a positive number (docs/configuration.md), else one fewer than the cores, at least one.
    static func threadCount(_ environment: [String: String], cores: Int) -> Int {
        if let text = environment["HEARTH_HASHING_THREADS"], let count = Int(text), count > 0 { return count }
        return max(1, cores - 1)
    }

    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)

    init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in
                // Named from inside too: on Linux a name set before `start()` does not reach the
                // kernel, and `ps -L` and `perf` should tell these threads apart.
                Thread.current.name = "hearth-hashing-\(index)"
                Self.lowerPriority()
                while true {
                    available.wait()
                    let job = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                    job?()
                }
            }
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
