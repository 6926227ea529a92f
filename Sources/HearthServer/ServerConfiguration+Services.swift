import HearthAccess
import HearthIdentity

// Services built from the server's settings (the services themselves know nothing of ServerConfiguration).

extension AdminSecretGuard {
    /// The guard a server's settings ask for.
    convenience init(configuration: ServerConfiguration) {
        self.init(
            clock: configuration.clock, limit: configuration.identity.adminSecretFailuresPerAddress,
            window: configuration.identity.adminSecretFailuresWindow
        )
    }
}

extension ActionLinks {
    /// The links a server's settings ask for: its public URL, else its listening address.
    convenience init(configuration: ServerConfiguration) {
        self.init(
            publicURL: configuration.identity.publicURL, host: configuration.host, port: configuration.port,
            secure: configuration.tls != nil, authorizedDomains: configuration.identity.authorizedDomains
        )
    }
}
