import ArgumentParser
import Foundation
import HearthAccess
import HearthEngine
import HearthFiles
import HearthIdentity
import HearthServer
import HearthSQLite
import HearthPostgres
import Crypto
import Hummingbird
import NIOCore
import HearthStorage
import Logging

#if canImport(Glibc)
import Glibc
#endif

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Start the server (REST, streaming) on an embedded SQLite database.",
        discussion: """
            Data lives in --data (default ./hearth-data). On first start an admin secret is generated, \
            printed once and stored hashed; HEARTH_ADMIN_SECRET in the environment sets it instead. Send it \
            as 'Authorization: Bearer <secret>' or '?auth=<secret>'.

            --emulator behaves like Firebase's database emulator: new databases are open to everyone and \
            'Bearer owner' is admin. Never use it where untrusted clients can reach the server.
            """
    )

    @Option(name: .customLong("host"), help: ArgumentHelp("The address to listen on (default: 127.0.0.1, or firebase.json's).", valueName: "host"))
    var hostOption: String?

    @Option(name: .customLong("port"), help: ArgumentHelp("The port to listen on (default 9000, or firebase.json's first; 0 picks a free one).", valueName: "port"))
    var portOption: Int?

    @OptionGroup var dataOptions: DataOptions

    @Flag(help: "Firebase-emulator compatibility: open rules by default and 'Bearer owner' as admin.")
    var emulator = false

    @Option(help: ArgumentHelp(
        "With --emulator: the project's firebase.json (default: ./firebase.json if there is one): its rules files and emulator ports.",
        discussion: "Every port it names for database, auth and storage serves all three APIs. Rules files are watched and applied when they change. .firebaserc beside it gives the project and deploy targets.",
        valueName: "file"
    ))
    var config: String?

    @Option(name: .customLong("import"), help: ArgumentHelp(
        "With --emulator: load an export directory (firebase emulators:export's layout) before serving.", valueName: "dir"
    ))
    var importDirectory: String?

    @Flag(help: "With --import: replace the data the data directory already holds (otherwise the import is refused).")
    var importReplace = false

    @Option(help: ArgumentHelp(
        "With --emulator: on SIGINT or SIGTERM, export everything to this directory before stopping (alone, after --import DIR: that directory).",
        valueName: "dir"
    ))
    var exportOnExit: String?

    @Flag(name: .customLong("in-memory"), help: "Keep data in memory only (lost on exit); for experiments.")
    var inMemory = false

    @Option(help: ArgumentHelp(
        "Serve databases from their files, holding at most about this much memory (e.g. 1GB); default: whole databases in memory, the fastest.",
        discussion: "For databases larger than memory (docs/decisions/0012-compact-tree-and-warm-start.md). SQLite storage only.",
        valueName: "size"
    ))
    var memoryLimit: ByteCount?

    @Option(help: ArgumentHelp(
        "The largest file upload accepted (e.g. 100MB); larger ones are refused with 413. Default: no limit (Cloud Storage's is 5 TiB).",
        valueName: "size"
    ))
    var maxUploadSize: ByteCount?

    @Option(help: ArgumentHelp(
        "Run as a node of a cluster whose data lives in this PostgreSQL database (docs/cluster.md); needs HEARTH_ADMIN_SECRET.",
        valueName: "postgres://user@host/db"
    ))
    var postgres: String?

    @Option(help: ArgumentHelp("This node's name in the cluster, unique (default: the host name).", valueName: "name"))
    var nodeName: String?

    @Option(help: ArgumentHelp("This node's URL as the other nodes reach it (default: http://<host>:<port>, https with --tls-cert).", valueName: "url"))
    var advertise: String?

    @Option(help: ArgumentHelp(
        "Cluster: a PEM file of the certificate authority to trust for the other nodes' https addresses (default: the system's).",
        valueName: "file"
    ))
    var clusterCa: String?

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Cluster: push each commit to the other nodes directly (default), or leave them to PostgreSQL's wake-ups and polling.",
            discussion: "Turn it off on every node to compare; the log in PostgreSQL stays the record either way."
        )
    )
    var clusterPush = true

    @Option(help: ArgumentHelp(
        "The namespace for requests that name none (no ?ns= and no <ns>.host; default: 'default', or <project>-default-rtdb with firebase.json).",
        valueName: "name"
    ))
    var defaultNamespace: String?

    @Option(help: ArgumentHelp(
        "The Firebase project id: the audience of ID tokens and the project of the Authentication API (default: $HEARTH_PROJECT, else 'hearth').",
        valueName: "id"
    ))
    var project: String?

    @Option(name: .customLong("api-key"), help: "An API key clients may send to the Authentication API (repeatable; none: any key).")
    var apiKeys: [String] = []

    @Flag(help: ArgumentHelp(
        "Behind a reverse proxy: take the client's address from the last X-Forwarded-For entry (for the per-address limits).",
        discussion: "Only with a proxy that sets the header; without one, clients could claim any address."
    ))
    var trustForwardedFor = false

    @Option(help: ArgumentHelp(
        "Accounts apps may create per client address per hour (default 100, as Firebase; 0: no limit; emulator: no limit).",
        valueName: "n"
    ))
    var signUpsPerAddress: Int?

    @Option(help: ArgumentHelp(
        "Account emails (resets, verifications, sign-in links) apps may ask for per client address per hour (default 50; 0: no limit; emulator: no limit).",
        valueName: "n"
    ))
    var accountEmailsPerAddress: Int?

    @Option(help: ArgumentHelp(
        "Account emails apps may have sent to one address per hour (default 10; 0: no limit; emulator: no limit).",
        valueName: "n"
    ))
    var accountEmailsPerRecipient: Int?

    @Option(help: ArgumentHelp(
        "Failed password sign-ins per client address per 15 minutes (default 100; 0: no limit; emulator: no limit).",
        valueName: "n"
    ))
    var failedSignInsPerAddress: Int?

    @Option(help: ArgumentHelp(
        "Deliver account emails (password reset, verification) to this SMTP server, e.g. smtp://127.0.0.1:25 (default: $HEARTH_SMTP_URL; none: outbox only).",
        valueName: "url"
    ))
    var smtpUrl: String?

    @Option(help: ArgumentHelp("The sender of account emails (default: $HEARTH_SMTP_FROM, else noreply@<project>.local).", valueName: "address"))
    var smtpFrom: String?

    @Flag(help: "Upgrade mail connections with STARTTLS and verify the server's certificate (always, with a login: HEARTH_SMTP_USERNAME, HEARTH_SMTP_PASSWORD).")
    var smtpStarttls = false

    @Option(help: ArgumentHelp("PEM certificates to trust for STARTTLS instead of the system's.", valueName: "file"))
    var smtpCaFile: String?

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Serve the reference apps (/apps/…) and open their namespaces with the apps' rules (default: only on a loopback --host).",
            discussion: "Their rules let anyone write to their namespaces: on a public address they are off unless asked for."
        )
    )
    var referenceApps: Bool?

    @Option(help: ArgumentHelp(
        "Close a connection whose request head takes longer than this, or whose body stays silent this long, or that stays idle this long between requests (default 60, as nginx).",
        valueName: "seconds"
    ))
    var requestReadTimeout: Int?

    @Option(help: ArgumentHelp(
        "The origin users reach this server at, e.g. https://hearth.example.com: links in account emails point there (default: $HEARTH_PUBLIC_URL, else http://<host>:<port>).",
        discussion: "Never taken from a request's Host header. On a wildcard --host (0.0.0.0, ::) without it, links point at 127.0.0.1.",
        valueName: "url"
    ))
    var publicUrl: String?

    @Option(name: .customLong("authorized-domain"), help: ArgumentHelp(
        "A domain a continueUrl in account emails may lead to, besides localhost, 127.0.0.1 and the public URL's host (repeatable; also $HEARTH_AUTHORIZED_DOMAINS, comma-separated).",
        valueName: "domain"
    ))
    var authorizedDomains: [String] = []

    @Option(help: ArgumentHelp(
        "Serve HTTPS and WSS on --port with this PEM certificate chain (the server's certificate first); needs --tls-key.",
        discussion: "TLS 1.2 and later, for every API, the console and the apps; plain HTTP on the port is refused. SIGHUP reads both files again (after a renewal) without dropping connections.",
        valueName: "file"
    ))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The PEM private key (RSA or ECDSA) of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    @Option(help: ArgumentHelp(
        "On SIGTERM or SIGINT, answer /readyz with 503 for this long while still serving, before stopping (default 0; 5–10 behind a load balancer).",
        valueName: "seconds"
    ))
    var drainSeconds = 0

    @Option(help: "How much to log.")
    var logLevel: Logger.Level = .info

    @Option(help: ArgumentHelp("text: lines for people; json: one JSON object a line, for log collectors.", valueName: "text|json"))
    var logFormat: LogFormat = .text

    @Flag(help: "Log every HTTP request (method, path, status, duration, bytes, client address; never credentials or values).")
    var accessLog = false

    func validate() throws {
        if let portOption, !(0...65535).contains(portOption) { throw ValidationError("--port must be between 0 and 65535") }
        if !emulator, config != nil || importDirectory != nil || exportOnExit != nil {
            throw ValidationError("--config, --import and --export-on-exit are for the Emulator Suite drop-in: add --emulator")
        }
        if importReplace, importDirectory == nil { throw ValidationError("--import-replace goes with --import DIR") }
        if let signUpsPerAddress, signUpsPerAddress < 0 { throw ValidationError("--sign-ups-per-address must be 0 or more") }
        if let accountEmailsPerAddress, accountEmailsPerAddress < 0 { throw ValidationError("--account-emails-per-address must be 0 or more") }
        if let accountEmailsPerRecipient, accountEmailsPerRecipient < 0 {
            throw ValidationError("--account-emails-per-recipient must be 0 or more")
        }
        if let failedSignInsPerAddress, failedSignInsPerAddress < 0 { throw ValidationError("--failed-sign-ins-per-address must be 0 or more") }
        if let requestReadTimeout, requestReadTimeout < 1 { throw ValidationError("--request-read-timeout must be at least 1 second") }
        if let url = resolvedPublicURL {
            do { _ = try ActionLinks.validatedOrigin(url) } catch { throw ValidationError("--public-url (or HEARTH_PUBLIC_URL): \(error)") }
        }
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key go together: give both files, or neither")
        }
        if drainSeconds < 0 { throw ValidationError("--drain-seconds must be 0 or more") }
        if memoryLimit != nil, inMemory || postgres != nil {
            throw ValidationError("--memory-limit works with the embedded SQLite storage only (not with --in-memory or --postgres)")
        }
    }

    func run() async throws {
        let level = logLevel
        switch logFormat {
        case .text:
            LoggingSystem.bootstrap { label in TextLogHandler(label: label, level: level) }
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level) }
        }
        let logger = Logger(label: "hearth")
        let setup = try loadEmulatorSetup()
        // --host and --port, else the first emulator firebase.json names, else the defaults.
        let host = hostOption ?? setup?.listeners.first?.host ?? "127.0.0.1"
        let requestedPort = portOption ?? setup?.listeners.first?.port ?? 9000
        // Before anything is opened: a certificate that cannot be used stops the start at once.
        var certificate: ServerCertificate?
        if let tlsCert, let tlsKey {
            do {
                certificate = try ServerCertificate(certificateFile: tlsCert, keyFile: tlsKey)
            } catch let error as ServerCertificateError {
                let option = error.file == tlsCert ? "--tls-cert" : "--tls-key"
                throw CLIError("\(option) \(error.message)")
            }
        }
        let scheme = certificate == nil ? "http" : "https"
        // The port is held from now on: while the databases load (or a cluster node joins), probes get
        // /healthz 200 and 503 "starting" instead of a refused connection.
        let starting: StartingListener
        do {
            starting = try await StartingListener.open(host: host, port: requestedPort, certificate: certificate)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw CLIError("cannot listen on \(host):\(requestedPort): the address is already in use. Stop the other server or pick another --port.")
        } catch {
            throw CLIError("cannot listen on \(host):\(requestedPort): \(error)")
        }
        // The port asked for, or the one picked for --port 0: the server binds the same one.
        let port = starting.port
        // Each WebSocket or event stream is an open file: allow as many as the system lets this process have.
        if let raised = OpenFileLimit.raiseToMaximum() {
            logger.info("Raised the open-file limit from \(raised.from) to \(raised.to) (the most connections this process can hold)")
        } else {
            logger.info("Open-file limit: \(OpenFileLimit.current), already the maximum (the most connections this process can hold)")
        }

        let storage: any DatabaseStorage
        let adminSecret: AdminSecret
        let tokens: TokenSigner
        let users: any UserStore
        let files: FileStorage
        var scratchDirectory: URL?
        var secretNotice: String?
        var cluster: ClusterOptions?
        if inMemory {
            tokens = TokenSigner.generate()
            storage = InMemoryStorage()
            users = InMemoryUserStore()
            // Files still need a disk: a scratch directory, removed when the server stops.
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-files-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            scratchDirectory = scratch
            files = FileStorage(directory: scratch.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: scratch))
            if let secret = try Self.adminSecretFromEnvironment(), !secret.isEmpty {
                adminSecret = AdminSecret(hashing: secret)
            } else {
                let (secret, stored) = AdminSecret.generate()
                adminSecret = stored
                secretNotice = "Admin secret for this run: \(secret)"
            }
        } else if let postgres {
            // A cluster node: the databases, the admin secret and the token key are shared; users and
            // files stay in this node's data directory (docs/cluster.md).
            guard let secret = try Self.adminSecretFromEnvironment(), !secret.isEmpty else {
                throw CLIError("--postgres needs HEARTH_ADMIN_SECRET in the environment, the same on every node (the nodes authenticate to each other with it)")
            }
            guard !inMemory else { throw CLIError("--postgres and --in-memory do not go together") }
            let node = nodeName ?? ProcessInfo.processInfo.hostName
            let shared: PostgresStorage
            do {
                shared = try await PostgresStorage.connect(url: postgres, nodeName: node, logger: logger)
            } catch {
                throw CLIError("cannot use PostgreSQL at \(PostgresEndpoint.redacted(postgres)): \(error)")
            }
            storage = shared
            adminSecret = AdminSecret(hashing: secret)
            cluster = ClusterOptions(
                secret: secret, address: advertise ?? "\(scheme)://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(port)", push: clusterPush
            )
            cluster?.trustedCertificateAuthorityFile = clusterCa
            let keyText = try await shared.sharedSetting(
                "token-signing-key", initial: Data(P256.Signing.PrivateKey().rawRepresentation).base64EncodedString()
            )
            guard let keyBytes = Data(base64Encoded: keyText), let key = try? P256.Signing.PrivateKey(rawRepresentation: keyBytes) else {
                throw CLIError("the token signing key stored in PostgreSQL (hearth_settings) is damaged")
            }
            tokens = TokenSigner(key: key)
            try FileManager.default.createDirectory(at: dataOptions.directory, withIntermediateDirectories: true)
            do {
                users = try SQLiteUserStore(directory: dataOptions.directory)
                files = FileStorage(
                    directory: dataOptions.directory.appendingPathComponent("files"),
                    catalog: try SQLiteObjectCatalog(directory: dataOptions.directory)
                )
            } catch {
                throw CLIError("cannot open the user store or file catalog in \(dataOptions.directory.path): \(error)")
            }
        } else {
            let sqlite = try dataOptions.openStorage()
            storage = sqlite
            do {
                tokens = try TokenSigner.load(from: sqlite.directory)
            } catch {
                throw CLIError("cannot read or create the token signing key in \(sqlite.directory.path): \(error)")
            }
            (adminSecret, secretNotice) = try loadAdminSecret(in: sqlite.directory)
            do {
                users = try SQLiteUserStore(directory: sqlite.directory)
            } catch {
                throw CLIError("cannot open the user store in \(sqlite.directory.path): \(error)")
            }
            do {
                files = FileStorage(
                    directory: sqlite.directory.appendingPathComponent("files"), catalog: try SQLiteObjectCatalog(directory: sqlite.directory)
                )
            } catch {
                throw CLIError("cannot open the file catalog in \(sqlite.directory.path): \(error)")
            }
        }
        defer { if let scratchDirectory { try? FileManager.default.removeItem(at: scratchDirectory) } }

        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.emulatorMode = emulator
        configuration.defaultNamespace = defaultNamespace ?? setup.map { "\($0.projectID)-default-rtdb" } ?? "default"
        // A Firebase project brings its own rules: the reference apps' stay out unless asked for.
        configuration.referenceApps = referenceApps ?? (setup == nil && ListenAddress.isLoopback(host))
        configuration.tls = certificate
        configuration.drainPeriod = .seconds(drainSeconds)
        configuration.accessLog = accessLog
        if let requestReadTimeout { configuration.requestReadTimeout = .seconds(requestReadTimeout) }
        if let maxUploadSize { configuration.files.maximumUploadBytes = Int64(maxUploadSize.bytes) }
        if let memoryLimit {
            configuration.memoryLimit = MemoryLimit(bytes: memoryLimit.bytes)
            MemoryTuning.returnFreedMemory()
        }
        configuration.identity.projectID = setup?.projectID ?? project
            ?? ProcessInfo.processInfo.environment["HEARTH_PROJECT"].flatMap { $0.isEmpty ? nil : $0 } ?? "hearth"
        var emulatorLines = ""
        if let setup {
            let main = (host: host, port: port)
            var seen: Set<String> = ["\(main.host):\(main.port)"]
            for listener in setup.listeners where seen.insert("\(listener.host):\(listener.port)").inserted {
                configuration.emulatorSuite.additionalListeners.append(.init(host: listener.host, port: listener.port))
            }
            configuration.emulatorSuite.rulesFiles = setup.rulesFiles
            for listener in setup.listeners { configuration.emulatorSuite.emulators[listener.emulator] = .init(host: listener.host, port: listener.port) }
            let named = setup.listeners.map { "\($0.emulator) \($0.host):\($0.port)" }.joined(separator: ", ")
            emulatorLines += "  Emulator Suite: \(setup.configFile.path), project \(setup.projectID); \(named.isEmpty ? "no emulators named" : named) (each port serves every API)\n"
            for file in setup.rulesFiles {
                let target = switch file.target {
                case .database(let namespace): "database \(namespace)"
                case .storage(let bucket?): "bucket \(bucket)"
                case .storage(nil): "every bucket"
                }
                emulatorLines += "  Rules: \(file.file.path) → \(target) (watched)\n"
            }
            if !setup.notServed.isEmpty { emulatorLines += "  Not served by Hearth: \(setup.notServed.joined(separator: ", "))\n" }
            for note in setup.notes { emulatorLines += "  Note: \(note)\n" }
        }
        if let importDirectory {
            let directory = URL(fileURLWithPath: importDirectory).standardizedFileURL
            let exportDirectory = exportOnExit.map { URL(fileURLWithPath: $0).standardizedFileURL }
            if !FileManager.default.fileExists(atPath: directory.path), exportDirectory == directory {
                // The first run of `--import seed --export-on-exit`: nothing to import yet.
                logger.notice("Nothing to import yet: \(directory.path) does not exist; the export on exit creates it")
            } else {
                configuration.emulatorSuite.importDirectory = directory
                configuration.emulatorSuite.replaceOnImport = importReplace
            }
        }
        if let exportOnExit {
            let directory = URL(fileURLWithPath: exportOnExit).standardizedFileURL
            let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.path
            guard !(workingDirectory + "/").hasPrefix(directory.path.hasSuffix("/") ? directory.path : directory.path + "/") else {
                throw CLIError("--export-on-exit \(directory.path) would replace the working directory or one of its parents; pick a directory inside it")
            }
            // Checked now, not at exit: an export on exit must not delete a directory that is not an export.
            if let refusal = EmulatorExportError.refusing(toReplace: directory) { throw CLIError("--export-on-exit: \(refusal)") }
            configuration.emulatorSuite.exportOnExit = directory
            emulatorLines += "  Export on exit: \(directory.path) (on SIGINT or SIGTERM)\n"
        }
        configuration.identity.apiKeys = Set(apiKeys)
        configuration.identity.trustForwardedFor = trustForwardedFor
        configuration.identity.publicURL = try resolvedPublicURL.map(ActionLinks.validatedOrigin)
        configuration.identity.authorizedDomains = authorizedDomains
            + (ProcessInfo.processInfo.environment["HEARTH_AUTHORIZED_DOMAINS"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        if configuration.identity.publicURL == nil, ActionLinks.isWildcard(host) {
            logger.warning(
                "Listening on \(host) without --public-url: links in account emails point at \(port == 0 ? "http://127.0.0.1 (on the port it picks)" : ActionLinks.listeningOrigin(host: host, port: port, scheme: scheme)), which works only on this machine. Set --public-url (or HEARTH_PUBLIC_URL) to the address users reach, e.g. https://hearth.example.com."
            )
        }
        configuration.identity.signUpsPerAddressLimit = signUpsPerAddress
        configuration.identity.accountEmailsPerAddressLimit = accountEmailsPerAddress
        configuration.identity.accountEmailsPerRecipientLimit = accountEmailsPerRecipient
        configuration.identity.failedSignInsPerAddressLimit = failedSignInsPerAddress
        let environment = ProcessInfo.processInfo.environment
        if let url = smtpUrl ?? environment["HEARTH_SMTP_URL"].flatMap({ $0.isEmpty ? nil : $0 }) {
            let from = smtpFrom ?? environment["HEARTH_SMTP_FROM"].flatMap { $0.isEmpty ? nil : $0 }
                ?? "noreply@\(configuration.identity.projectID).local"
            do {
                var smtp = try SMTPConfiguration(url: url, from: from)
                smtp.startTLS = smtpStarttls
                smtp.trustRootsFile = smtpCaFile
                smtp.username = environment["HEARTH_SMTP_USERNAME"].flatMap { $0.isEmpty ? nil : $0 }
                smtp.password = environment["HEARTH_SMTP_PASSWORD"]
                if (smtp.username == nil) != (smtp.password == nil) {
                    throw CLIError("set both HEARTH_SMTP_USERNAME and HEARTH_SMTP_PASSWORD, or neither")
                }
                if smtp.username != nil { smtp.startTLS = true }
                configuration.identity.smtp = smtp
            } catch {
                throw CLIError("--smtp-url/--smtp-from: \(error)")
            }
        }
        let where_ = inMemory ? "memory (not persisted)"
            : postgres.map { "PostgreSQL at \(PostgresEndpoint.redacted($0)), node \(nodeName ?? ProcessInfo.processInfo.hostName)" }
            ?? "SQLite in \(dataOptions.directory.path)"
        let mode = emulator ? "emulator mode: rules open by default, 'Bearer owner' is admin" : "rules locked by default; admin needs the secret"
        let notice = secretNotice
        let suiteLines = emulatorLines
        let appsServed = configuration.referenceApps
        let mail = configuration.identity.smtp.map {
            "  Account emails: to the outbox and to smtp://\($0.host):\($0.port)\($0.startTLS ? " (STARTTLS)" : "") from \($0.from)\n"
        } ?? ""
        let appsOffReason = referenceApps == false
            ? "  Reference apps: off (--no-reference-apps)\n"
            : setup != nil ? "  Reference apps: off (the project's firebase.json is in charge of the rules; --reference-apps serves them)\n"
            : "  Reference apps: off (listening on a public address; --reference-apps serves them and opens their namespaces to anyone)\n"
        let webSocketScheme = certificate == nil ? "ws" : "wss"
        let tlsLine = certificate.map {
            "  TLS: \($0.certificateFile), valid until \($0.notValidAfter.formatted(.iso8601)); kill -HUP \(ProcessInfo.processInfo.processIdentifier) reads it again\n"
        } ?? ""
        let app: HearthApplication
        do {
            app = try await buildApplication(
                configuration: configuration,
                storage: storage,
                adminSecret: adminSecret,
                tokens: tokens,
                users: users,
                files: files,
                cluster: cluster,
                logger: logger,
                onServerRunning: { port in
                    var lines = notice.map { $0 + "\n" } ?? ""
                    let origin = "\(scheme)://\(host):\(port)"
                    lines += "Hearth listening on \(origin) — data in \(where_); \(mode)\n"
                    lines += "  Files (Firebase Storage): \(origin)/v0/b/<bucket>/o   Cloud Storage: STORAGE_EMULATOR_HOST=\(origin)\n"
                    lines += "  REST: \(origin)/<path>.json   Firebase SDKs: \(webSocketScheme)://\(host):\(port)/.ws   browser client: \(origin)/hearth.js\n"
                    lines += "  Health: \(origin)/healthz   Readiness: \(origin)/readyz\n"
                    lines += tlsLine
                    lines += suiteLines
                    lines += mail
                    if !appsServed {
                        lines += appsOffReason
                    }
                    FileHandle.standardOutput.write(Data(lines.utf8))
                }
            )
        } catch let error as EmulatorImportError {
            await starting.close()
            throw CLIError(error.description)
        } catch let error as EmulatorSetupError {
            await starting.close()
            throw CLIError(error.description)
        }
        // The real server takes the port over: the gap between the two is a few milliseconds.
        await starting.close()
        do {
            try await app.runService()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw CLIError("cannot listen on \(host):\(port): the address is already in use. Stop the other server or pick another --port.")
        } catch let error as IOError {
            throw CLIError("cannot listen on \(host):\(port): \(error)")
        }
    }

    /// firebase.json (`--config`, or in emulator mode the working directory's), with `.firebaserc`.
    func loadEmulatorSetup() throws -> EmulatorSetup? {
        let file: URL
        if let config {
            file = URL(fileURLWithPath: config).standardizedFileURL
            guard FileManager.default.fileExists(atPath: file.path) else { throw CLIError("--config: \(file.path) does not exist") }
        } else {
            guard emulator else { return nil }
            file = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("firebase.json").standardizedFileURL
            guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        }
        do {
            return try FirebaseProjectFile.load(file, project: project)
        } catch {
            throw CLIError(error.description)
        }
    }

    /// `--public-url`, else `HEARTH_PUBLIC_URL` (empty: unset).
    var resolvedPublicURL: String? {
        publicUrl ?? ProcessInfo.processInfo.environment["HEARTH_PUBLIC_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// HEARTH_ADMIN_SECRET, if set; an error for one the guessing limit could not count.
    static func adminSecretFromEnvironment() throws -> String? {
        guard let secret = ProcessInfo.processInfo.environment["HEARTH_ADMIN_SECRET"] else { return nil }
        if let problem = AdminSecretGuard.problem(withSecret: secret) { throw CLIError(problem) }
        return secret
    }

    /// Reads the stored admin secret hash, or sets one from HEARTH_ADMIN_SECRET, or generates one.
    func loadAdminSecret(in directory: URL) throws -> (AdminSecret, String?) {
        let file = directory.appendingPathComponent("admin-secret")
        if let secret = try Self.adminSecretFromEnvironment(), !secret.isEmpty {
            let stored = AdminSecret(hashing: secret)
            try write(stored, to: file)
            return (stored, nil)
        }
        if let contents = try? String(contentsOf: file, encoding: .utf8) {
            guard let stored = AdminSecret(fileContents: contents) else {
                throw CLIError("\(file.path) is damaged; delete it to generate a new admin secret, or set HEARTH_ADMIN_SECRET")
            }
            return (stored, nil)
        }
        let (secret, stored) = AdminSecret.generate()
        try write(stored, to: file)
        return (stored, "Admin secret (shown once; stored hashed in \(file.path)): \(secret)")
    }

    func write(_ secret: AdminSecret, to file: URL) throws {
        do {
            try Data(secret.fileContents.utf8).write(to: file, options: .atomic)
            chmod(file.path, 0o600)
        } catch {
            throw CLIError("cannot write \(file.path): \(error.localizedDescription)")
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// How log lines are written (`--log-format`).
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// What `--host` names, as far as exposure goes.
enum ListenAddress {
    /// Whether only this machine can reach a server listening on `host` (`localhost`, 127.0.0.0/8, `::1`).
    static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return name == "localhost" || name == "::1" || name.hasPrefix("127.")
    }
}
