import HearthAccess

/// The settings the database engine reads: the server's others (ports, identity, files) are not its
/// business.
///
/// For example:
/// ```swift
/// var configuration = EngineConfiguration()
/// configuration.memoryLimit = MemoryLimit(bytes: 1 << 30)
/// let registry = DatabaseRegistry(storage: InMemoryStorage(), configuration: configuration, logger: logger)
/// ```
public struct EngineConfiguration: Sendable {
    /// The time writes, server values and rules run on; tests drive their own.
    public var clock: ServerClock = .system
    /// New databases are open to everyone (Firebase's emulator).
    public var emulatorMode = false
    /// Events queued for one event stream before it counts as a slow consumer and is cut off.
    public var eventStreamBufferLimit = 4096
    /// A stored database at least this large answers reads from its file while it loads.
    public var warmStartBytes = 8 * 1024 * 1024
    /// Databases stay in their files, and what writes change is dropped past this limit; nil keeps
    /// whole trees in memory.
    public var memoryLimit: MemoryLimit?

    public init() {}
}
