#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit (every socket is one file).
enum OpenFileLimit {
    /// Raises the soft limit to the hard limit; returns both when it changed.
    static func raiseToMaximum() -> (from: UInt64, to: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return nil }
        let previous = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return (UInt64(previous), UInt64(limit.rlim_max))
    }

    /// The current soft limit.
    static var current: UInt64 {
        var limit = rlimit()
        return getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? UInt64(limit.rlim_cur) : 0
    }
}
