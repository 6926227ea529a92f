import HearthAccess

extension AdminSecretGuard {
    /// The guard a server's settings ask for.
    convenience init(configuration: ServerConfiguration) {
        self.init(
            clock: configuration.clock, limit: configuration.identity.adminSecretFailuresPerAddress,
            window: configuration.identity.adminSecretFailuresWindow
        )
    }
}
