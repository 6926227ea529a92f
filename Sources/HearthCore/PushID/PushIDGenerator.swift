#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import Synchronization

/// Generates Firebase push IDs: 20 characters that sort in creation order.
///
/// Eight characters encode the time in milliseconds; twelve are random. Within one millisecond the
/// random part is incremented, so IDs stay strictly increasing.
///
/// For example:
/// ```swift
/// let generator = PushIDGenerator()
/// let first = generator.next(), second = generator.next()
/// #expect(first < second)
/// ```
public final class PushIDGenerator: Sendable {
    static let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    struct State {
        var lastTime: UInt64 = 0
        var lastRandom = [Int](repeating: 0, count: 12)
        var random: any RandomNumberGenerator & Sendable
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> UInt64

    /// - Parameters:
    ///   - clock: milliseconds since 1970; injected for tests.
    ///   - random: the source of the random part; injected for tests.
    public init(
        clock: @escaping @Sendable () -> UInt64 = { UInt64(WallClock.milliseconds()) },
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.clock = clock
        self.state = Mutex(State(random: random))
    }

    /// The next ID.
    public func next() -> String {
        let now = clock()
        return state.withLock { state in
            if now == state.lastTime {
                var i = 11
                while i >= 0, state.lastRandom[i] == 63 {
                    state.lastRandom[i] = 0
                    i -= 1
                }
                if i >= 0 { state.lastRandom[i] += 1 }
            } else {
                state.lastTime = now
                // Two 64-bit draws cover the 72 random bits: one draw per character made a
                // `getrandom` system call per character, twelve per millisecond of writes.
                var bits = state.random.next()
                for i in 0..<10 {
                    state.lastRandom[i] = Int(bits & 63)
                    bits >>= 6
                }
                bits = state.random.next()
                state.lastRandom[10] = Int(bits & 63)
                state.lastRandom[11] = Int((bits >> 6) & 63)
            }
            var chars = [UInt8](repeating: 0, count: 20)
            var time = now
            for i in stride(from: 7, through: 0, by: -1) {
                chars[i] = PushIDGenerator.alphabet[Int(time % 64)]
                time /= 64
            }
            for i in 0..<12 { chars[8 + i] = PushIDGenerator.alphabet[state.lastRandom[i]] }
            return String(decoding: chars, as: UTF8.self)
        }
    }
}

/// Wall-clock milliseconds since 1970.
public enum WallClock {
    public static func milliseconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) * 1000 + Double(ts.tv_nsec / 1_000_000)
    }
}
