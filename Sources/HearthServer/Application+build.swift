public import Foundation
import HearthAccess
import HearthCluster
import HearthCore
import HearthEngine
import HearthFiles
import HearthIdentity
public import HearthStorage
import HearthWeb
import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import ServiceLifecycle

/// Builds the Hearth HTTP application; shared by `hearth serve` and the tests.
///
/// Every namespace that already has stored data is loaded before this returns, so the server answers
/// its first request from memory.
///
/// For example:
/// ```swift
/// let server = try await buildApplication(configuration: .init(), storage: InMemoryStorage(), adminSecret: nil)
/// try await server.runService()
/// ```
public func buildApplication(
    configuration: ServerConfiguration,
    storage: any DatabaseStorage,
    adminSecret: AdminSecret?,
    tokens: TokenSigner? = nil,
    users: (any UserStore)? = nil,
    files: FileStorage? = nil,
    cluster: ClusterOptions? = nil,
    logger: Logger = Logger(label: "hearth"),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> HearthApplication {
    let built = try await makeApplication(
        configuration: configuration,
        storage: storage,
        adminSecret: adminSecret,
        tokens: tokens,
        users: users,
        files: files,
        cluster: cluster,
        logger: logger,
        onServerRunning: onServerRunning
    )
    return HearthApplication(
        application: built.application,
        emulatorServices: built.emulatorServices,
        drain: ServerDrain(readiness: built.readiness, period: configuration.drainPeriod, logger: logger),
        reload: CertificateReloadService(certificate: configuration.tls, logger: logger),
        logger: logger
    )
}

/// How a node takes part in a cluster (`hearth serve --postgres`): the storage must be a
/// ``SharedDatabaseStorage``.
///
/// For example:
/// ```swift
/// let cluster = ClusterOptions(secret: adminSecret, address: "http://10.0.0.5:9000")
/// ```
public struct ClusterOptions: Sendable {
    /// The admin secret in clear: nodes authenticate to each other with it.
    public var secret: String
    /// This node's base URL as the other nodes reach it.
    public var address: String
    /// How often the node checks the leases of its databases.
    public var tick: Duration
    /// Whether owners push their commits to the other nodes directly (else the others learn of them by
    /// the shared storage's wake-ups and polling alone); on by default, off only to compare.
    public var push: Bool
    /// How long an entry known committed waits for the owner's push before it is read from the log.
    public var pushGrace: Duration = ClusterCoordinator.defaultPushGrace
    /// How long a push stream may stay silent (the owner sends a heartbeat every quarter second) before
    /// it is given up on and opened again; the entries committed meanwhile are then read from the log.
    public var pushReadTimeout: Duration = PushReceiver.defaultReadTimeout
    /// How long the node a database's rendezvous hash prefers must have been up before the owner hands
    /// the database over to it (so owners do not flap while nodes come and go).
    public var handOffSettling: Duration = ClusterCoordinator.defaultSettling
    /// A PEM file of the certificate authority the other nodes' `https` addresses are trusted with
    /// (`--cluster-ca`); nil: the system's.
    public var trustedCertificateAuthorityFile: String?

    public init(secret: String, address: String, tick: Duration = .milliseconds(100), push: Bool = true) {
        self.secret = secret
        self.address = address
        self.tick = tick
        self.push = push
    }
}

/// Where the file service keeps its data: blob files under `directory`, metadata in `catalog`.
///
/// For example:
/// ```swift
/// let files = FileStorage(directory: data.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: data))
/// ```
public struct FileStorage: Sendable {
    public var directory: URL
    public var catalog: any ObjectCatalog
    /// Where the file service hands downloads to the server's connections as file regions (the tests
    /// count what was sent).
    var regions = FileRegionDownloads()

    public init(directory: URL, catalog: any ObjectCatalog) {
        self.directory = directory
        self.catalog = catalog
    }
}

/// The application and its registry (tests reach into the registry to observe listeners).
func makeApplication(
    configuration: ServerConfiguration,
    storage: any DatabaseStorage,
    adminSecret: AdminSecret?,
    tokens: TokenSigner? = nil,
    users: (any UserStore)? = nil,
    files: FileStorage? = nil,
    cluster: ClusterOptions? = nil,
    logger: Logger = Logger(label: "hearth"),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> (
    application: some ApplicationProtocol, registry: DatabaseRegistry, realtime: RealtimeServices, readiness: ServerReadiness,
    emulatorServices: [any Service]
) {
    let activity = ServerActivity(clock: configuration.clock)
    var clusterContext: ClusterContext?
    if let cluster {
        guard let shared = storage as? any SharedDatabaseStorage else {
            throw DatabaseStorageError(.unavailable, "A cluster node needs shared storage (--postgres)")
        }
        clusterContext = ClusterContext(
            storage: shared, secret: cluster.secret, push: cluster.push, trusting: cluster.trustedCertificateAuthorityFile,
            registry: activity.prometheus, logger: logger
        )
        // A member before it opens any database, so the others see its leases held by a live node.
        try await shared.join(address: cluster.address)
    }
    let users = users ?? InMemoryUserStore()
    // An emulators:export directory's databases go in before the registry opens them (their writers
    // run only with the server); the users and files follow once their services are open.
    var imported: EmulatorDataTransfer.Summary?
    if configuration.emulatorMode, let directory = configuration.emulatorSuite.importDirectory {
        imported = try await EmulatorDataTransfer.importDatabases(
            from: directory, replace: configuration.emulatorSuite.replaceOnImport, storage: storage, users: users, catalog: files?.catalog,
            project: configuration.identity.projectID, logger: logger
        )
    }
    let registry = DatabaseRegistry(storage: storage, configuration: configuration.engine, logger: logger, cluster: clusterContext)
    try await registry.preload()
    if configuration.referenceApps {
        try await ReferenceApps.installRules(in: registry, emulatorMode: configuration.emulatorMode, logger: logger)
    }
    let readiness = ServerReadiness(storage: storage, probeNamespace: configuration.defaultNamespace)
    let router = Router(context: HearthRequestContext.self)
    // Each request's client address and the admin-secret guard (wrong guesses locked out per address).
    let adminSecretGuard = AdminSecretGuard(configuration: configuration)
    router.add(middleware: RequestClientMiddleware(configuration: configuration, adminSecretGuard: adminSecretGuard))
    if configuration.accessLog {
        router.add(middleware: AccessLogMiddleware<HearthRequestContext>(
            logger: Logger(label: AccessLogMiddleware<HearthRequestContext>.label), fileRegions: files?.regions
        ))
    }
    HealthController(readiness: readiness).register(on: router)
    // Account emails' links: the public URL, else the listening address (its port known once bound).
    let actionLinks = ActionLinks(configuration: configuration)
    // The identity service's users (above): the database refuses the tokens of disabled and revoked ones.
    var tokens = tokens
    let revocations = TokenRevocations()
    if tokens != nil {
        try await revocations.load(from: users)
        tokens?.revocations = revocations
    }
    let consoleSessions = ConsoleSessions(clock: configuration.clock)
    let rest = RESTController(
        registry: registry, configuration: configuration, adminSecret: adminSecret, tokens: tokens, consoleSessions: consoleSessions,
        activity: activity
    )
    WebAssets.register(on: router, referenceApps: configuration.referenceApps) { request, context in await rest.respond(to: request, context: context) }
    // The identity service signs with the same key the database verifies with, so it needs one.
    var identityService: IdentityService?
    if let tokens {
        let service = IdentityService(
            store: users, signer: tokens, configuration: configuration.identity, emulatorMode: configuration.emulatorMode,
            clock: configuration.clock, logger: logger
        )
        let identity = IdentityToolkitController(
            service: service, adminSecret: adminSecret, emulatorMode: configuration.emulatorMode, links: actionLinks, logger: logger,
            consoleSessions: consoleSessions
        )
        identity.register(on: router)
        identityService = service
    }
    var fileService: FileService?
    // Routes the server reaches without the router (DatabaseShortcutResponder).
    var shortcuts: [RouteShortcut] = []
    if let files {
        let service = try await FileService.open(
            directory: files.directory, catalog: files.catalog, project: configuration.identity.projectID,
            emulatorMode: configuration.emulatorMode, configuration: configuration.files, clock: configuration.clock,
            regions: files.regions, logger: logger
        )
        if configuration.referenceApps {
            try await ReferenceApps.installStorageRules(in: service, emulatorMode: configuration.emulatorMode, logger: logger)
        }
        fileService = service
        let firebaseStorage = FirebaseStorageController(files: service, authenticator: rest.authenticator, logger: logger).register(on: router)
        shortcuts.append(RouteShortcut(prefix: FirebaseStorageController.pathPrefix, methods: FirebaseStorageController.methods, responder: firebaseStorage))
        CloudStorageController(files: service, authenticator: rest.authenticator, logger: logger).register(on: router)
        StorageRulesController(files: service, authenticator: rest.authenticator) { request, context in
            await rest.respond(to: request, context: context)
        }.register(on: router)
        if configuration.emulatorMode {
            StorageEmulatorController(files: service, logger: logger).register(on: router)
        }
    }
    var emulatorServices: [any Service] = []
    var rulesWatcher: RulesFileWatcher?
    if configuration.emulatorMode {
        let transfer = EmulatorDataTransfer(
            registry: registry, storage: storage, identity: identityService, files: fileService, project: configuration.identity.projectID,
            logger: logger
        )
        let suite = configuration.emulatorSuite
        EmulatorHubController(transfer: transfer, authenticator: rest.authenticator, emulators: suite.emulators, logger: logger).register(on: router)
        if let directory = suite.importDirectory, var summary = imported {
            let rest = try await transfer.importUsersAndFiles(from: directory, replace: suite.replaceOnImport)
            summary.users = rest.users
            summary.objects = rest.objects
            summary.problems += rest.problems
            logger.notice("Imported \(summary) from \(directory.path)")
            for problem in summary.problems { logger.warning("Import: \(problem)") }
        }
        if !suite.rulesFiles.isEmpty {
            let watcher = RulesFileWatcher(files: suite.rulesFiles, registry: registry, fileService: fileService, logger: logger)
            try await watcher.loadAll()
            rulesWatcher = watcher
        }
        if let directory = suite.exportOnExit {
            emulatorServices.append(ExportOnExitService(transfer: transfer, directory: directory, logger: logger))
        }
    }
    let catchAll = rest.register(on: router)
    let realtime = RealtimeServices(
        registry: registry, authenticator: rest.authenticator, configuration: configuration, activity: activity,
        adminSecretGuard: adminSecretGuard, logger: logger
    )
    let sampler = ActivitySampler(activity: activity, registry: registry, realtime: realtime)
    ConsoleController(
        sessions: consoleSessions, adminSecret: adminSecret, registry: registry, configuration: configuration, files: fileService,
        activity: activity, sampler: sampler
    ).register(on: router)
    MetricsController(activity: activity, sampler: sampler, authenticator: rest.authenticator).register(on: router)
    InspectController(rest: rest, registry: registry, emulatorMode: configuration.emulatorMode).register(on: router)
    LongPollController(services: realtime).register(on: router)
    var clusterServices: [any Service] = []
    if let cluster, let clusterContext {
        ClusterController(context: clusterContext, registry: registry, authenticator: rest.authenticator, address: cluster.address)
            .register(on: router)
        clusterServices.append(
            ClusterCoordinator(
                context: clusterContext, registry: registry, address: cluster.address, tick: cluster.tick, pushGrace: cluster.pushGrace,
                settling: cluster.handOffSettling
            )
        )
        clusterServices.append(PushReceiver(context: clusterContext, registry: registry, readTimeout: cluster.pushReadTimeout))
    }
    revocations.observe { [weak realtime, weak registry] change in
        for session in realtime?.sessions.all ?? [] { session.credentialsRevoked(change, revocations) }
        // Event streams too (with no grace: a stream cannot sign in again).
        for database in registry?.openDatabases ?? [] {
            database.hub.revoke { identity in
                guard case .user(let auth) = identity, auth["uid"] == .string(change.uid) else { return false }
                return revocations.isRevoked(auth["token"])
            }
        }
    }
    // A console session signed out: connections and event streams opened with its token end too.
    consoleSessions.observeClose { [weak realtime, weak registry] hash in
        for session in realtime?.sessions.all ?? [] { session.consoleSessionClosed(hash) }
        for database in registry?.openDatabases ?? [] { database.hub.revoke(consoleSession: hash) }
    }
    RealtimeServerChannel.warmUp(services: realtime, logger: logger)
    // The activity middleware wraps the router and the route shortcuts; the database shortcut's requests
    // are recorded by the database API.
    let responder = DatabaseShortcutResponder(
        router: router.buildResponder(), catchAll: catchAll, activity: ActivityMiddleware(activity: activity), shortcuts: shortcuts
    )
    // More ports (firebase.json's emulators): the same responder behind another server each. They stop
    // before the main one, whose services (the databases) outlive every listener.
    for listener in configuration.emulatorSuite.additionalListeners {
        emulatorServices.insert(
            Application(
                responder: responder,
                server: HTTPServerBuilder { responder in
                    RealtimeServerChannel(responder: responder, services: realtime, certificate: configuration.tls, fileRegions: files?.regions)
                },
                configuration: .init(address: .hostname(listener.host, port: listener.port), serverName: "Hearth"),
                logger: logger
            ),
            at: 0
        )
    }
    let application = Application(
        responder: responder,
        server: HTTPServerBuilder { responder in
            RealtimeServerChannel(responder: responder, services: realtime, certificate: configuration.tls, fileRegions: files?.regions)
        },
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Hearth"),
        // Stopped in reverse order: the server, then the WebSocket sessions, then the databases.
        // The cluster's coordinator stops last: the writers finish their commits while this node still
        // holds its leases.
        services: clusterServices + [
            registry,
            KeepAliveService(registry: registry, interval: configuration.keepAliveInterval, clock: configuration.clock),
            IdleConnectionReaper(services: realtime),
            RealtimeShutdownService(services: realtime),
        ] + (rulesWatcher.map { [$0] } ?? []),
        onServerRunning: { channel in
            if let port = channel.localAddress?.port { actionLinks.listening(on: port) }
            readiness.serving()
            await onServerRunning(channel.localAddress?.port ?? configuration.port)
        },
        logger: logger
    )
    return (application, registry, realtime, readiness, emulatorServices)
}
