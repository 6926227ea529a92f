// swift-tools-version:6.2
import PackageDescription

/// Settings shared by every target: Swift 6 language mode plus the upcoming features the team relies on.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"),
]
/// `any` before every existential: every target but the Firebase port, which is code as written for
/// Firebase (bare `Error`).
let existentialAny: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "hearth",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "hearth", targets: ["HearthCLI"]),
        .library(name: "HearthCore", targets: ["HearthCore"]),
        .library(name: "HearthServer", targets: ["HearthServer"]),
        .library(name: "HearthSQLite", targets: ["HearthSQLite"]),
        .library(name: "HearthPostgres", targets: ["HearthPostgres"]),
        .library(name: "HearthRealtimeClient", targets: ["HearthRealtimeClient"]),
        .library(name: "Hearth", targets: ["Hearth"]),
        .library(name: "HearthStore", targets: ["HearthStore"]),
        .library(name: "HearthStoreTesting", targets: ["HearthStoreTesting"]),
        .executable(name: "hearth-quickstart", targets: ["HearthQuickStart"]),
        .library(name: "ProfilesCore", targets: ["ProfilesCore"]),
        .executable(name: "profiles", targets: ["ProfilesCLI"]),
        .library(name: "PostsCore", targets: ["PostsCore"]),
        .library(name: "TimelineCore", targets: ["TimelineCore"]),
        .executable(name: "firebase-port", targets: ["FirebasePortDriver"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // TLS: the SDK's WebSocket transport for wss/https URLs, and the server's STARTTLS to a mail server.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Files: streaming multipart/related uploads.
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
        // The console's activity and /metrics: Prometheus's registry and text format.
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Shared storage for several nodes (docs/decisions/0010-scale-out.md).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Tests only: a clock the tests drive, for timeouts, keep-alives and token expiry.
        .package(url: "https://github.com/pointfreeco/swift-clocks.git", from: "1.1.1"),
    ],
    targets: [
        .target(
            name: "HearthCore",
            dependencies: [
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "HearthProtocol", dependencies: ["HearthCore"]),
        .target(
            name: "HearthRules",
            dependencies: ["HearthCore", .product(name: "HashTreeCollections", package: "swift-collections")]
        ),
        .target(name: "HearthStorageRules", dependencies: ["HearthCore", "HearthRules"]),
        .target(
            name: "HearthStorage",
            dependencies: ["HearthCore", .product(name: "HashTreeCollections", package: "swift-collections")]
        ),
        .target(
            name: "HearthSQLite",
            dependencies: [
                "HearthStorage",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "HearthPostgres",
            dependencies: [
                "HearthStorage",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "HearthServer",
            dependencies: [
                "HearthCore", "HearthProtocol", "HearthRules", "HearthStorage", "HearthStorageRules",
                "HearthAccess", "HearthEngine", "HearthCluster", "HearthFiles", "HearthIdentity", "HearthWeb",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                // RealtimeServerChannel.warmUp: the connection path run once before the server listens.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // TLS on the server's port (--tls-cert), reloaded on SIGHUP.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // Who a request comes from: the request context, the admin secret and its guard, ID tokens,
        // console sessions, and the server's clock those checks run on.
        .target(
            name: "HearthAccess",
            dependencies: [
                "HearthCore", "HearthRules", "HearthStorage",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The database engine: namespaces, the writer and its group commit, rules on writes, the
        // subscriptions that fan changes out to the transports, and a database's replica in a cluster.
        .target(
            name: "HearthEngine",
            dependencies: [
                "HearthAccess", "HearthCore", "HearthProtocol", "HearthRules", "HearthStorage",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Several nodes on shared storage: which node owns a database, forwarding writes to it, and the
        // push of its commits to the others (docs/cluster.md).
        .target(
            name: "HearthCluster",
            dependencies: [
                "HearthEngine", "HearthAccess", "HearthCore", "HearthProtocol", "HearthStorage",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // The other nodes' https addresses, trusted with --cluster-ca.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Identity: Firebase Authentication's API — accounts, sign-in, ID and refresh tokens, out-of-band
        // codes and the mail that carries them.
        .target(
            name: "HearthIdentity",
            dependencies: [
                "HearthAccess", "HearthCore", "HearthProtocol", "HearthStorage",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Files: Firebase Storage's and Cloud Storage's APIs, blobs on disk, uploads, storage rules.
        .target(
            name: "HearthFiles",
            dependencies: [
                "CHearthFiles",
                "HearthAccess", "HearthCore", "HearthProtocol", "HearthRules", "HearthStorage", "HearthStorageRules",
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // C for the files: CRC-32C with the CPU's instruction (decision 0020), direct I/O for large uploads (decision 0021) and
        // MD5 of many uploads at once in AVX-512's lanes (decision 0022).
        .target(name: "CHearthFiles"),
        // What the server hands browsers (Web/: hearth.js, the start page, the console, the reference
        // apps), compiled in by the EmbedWebAssets plugin, and the routes that serve it.
        .target(
            name: "HearthWeb",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            exclude: ["Web"],
            plugins: ["EmbedWebAssets"]
        ),
        .executableTarget(name: "EmbedWebAssetsTool"),
        .plugin(name: "EmbedWebAssets", capability: .buildTool(), dependencies: ["EmbedWebAssetsTool"]),
        .target(
            name: "HearthRealtimeClient",
            dependencies: [
                "Hearth", "HearthProtocol",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        .target(
            name: "Hearth",
            dependencies: [
                "HearthCore", "HearthProtocol",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // Persistence: pending writes and cached data in SQLite (the server's library too).
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Unidirectional data flow over the SDK: the SDK never depends on it.
        .target(name: "HearthStore", dependencies: ["Hearth"]),
        // TestStore: links Swift Testing, so it stays out of the library apps ship.
        .target(name: "HearthStoreTesting", dependencies: ["HearthStore"]),
        // The README's SDK example, built and run against a server by CI (Tests/Examples/run.sh).
        .executableTarget(name: "HearthQuickStart", dependencies: ["Hearth"], path: "Examples/QuickStart"),
        // The Profiles reference app's Swift side (docs/apps.md): its core, and a terminal client.
        .target(name: "ProfilesCore", dependencies: ["Hearth"], path: "Examples/Profiles/ProfilesCore"),
        .executableTarget(
            name: "ProfilesCLI",
            dependencies: ["ProfilesCore", "Hearth", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/Profiles/ProfilesCLI"
        ),
        // The Posts reference app's Swift side (docs/apps.md): its core on HearthStore, and thin view models.
        .target(name: "PostsCore", dependencies: ["Hearth", "HearthStore"], path: "Examples/Posts/PostsCore"),
        // The Timeline reference app's Swift side (docs/apps.md): models with save/delete and their controllers.
        .target(name: "TimelineCore", dependencies: ["Hearth"], path: "Examples/Timeline/TimelineCore"),
        // A port, end to end: the Timeline app's Swift core as a Firebase developer wrote it against
        // firebase-ios-sdk (Swift 5 era code, so Swift 5 mode), with only the imports changed, and a driver
        // that runs it against a live server (Tests/Examples/firebase-port.sh).
        .target(
            name: "TimelinePort", dependencies: ["Hearth"], path: "Examples/FirebasePort/TimelinePort",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(name: "FirebasePortDriver", dependencies: ["TimelinePort", "Hearth"], path: "Examples/FirebasePort/Driver"),
        .executableTarget(
            name: "HearthCLI",
            dependencies: [
                "HearthServer", "HearthAccess", "HearthEngine", "HearthFiles", "HearthIdentity", "HearthSQLite", "HearthPostgres", "HearthProtocol", "HearthRules", "HearthStorageRules", "HearthRealtimeClient", "Hearth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HearthCoreTests",
            dependencies: ["HearthCore", .product(name: "HashTreeCollections", package: "swift-collections")],
            exclude: ["Fixtures/check_fixtures.py"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "HearthRulesTests", dependencies: ["HearthRules"], resources: [.copy("Fixtures")]),
        .testTarget(name: "HearthStorageRulesTests", dependencies: ["HearthStorageRules", "HearthCore"], resources: [.copy("Fixtures")]),
        .testTarget(
            name: "HearthStorageTests",
            dependencies: [
                "HearthStorage", "HearthSQLite", "HearthPostgres",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "HearthServerTests",
            dependencies: [
                "HearthServer", "HearthSQLite", "HearthRealtimeClient", "HearthAccess", "HearthCluster", "HearthEngine", "HearthFiles", "CHearthFiles", "HearthIdentity", "HearthWeb",
                "HearthTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            resources: [.copy("Fixtures")]
        ),
        // Tests only: a separate process that writes through the SDK with persistence (PersistenceProcessTests).
        .executableTarget(name: "HearthOfflineWriter", dependencies: ["Hearth"], path: "Tests/Support/HearthOfflineWriter"),
        .testTarget(
            name: "HearthTests",
            dependencies: [
                "Hearth", "HearthCore", "HearthProtocol", "HearthServer", "HearthAccess", "HearthEngine", "HearthIdentity", "HearthSQLite", "HearthStorage", "HearthRules",
                "HearthOfflineWriter", "HearthTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            resources: [.copy("Fixtures")]
        ),
        // The loopback server the upper layers' tests share (HearthStore, the apps' Swift cores).
        .target(
            name: "HearthTestSupport",
            dependencies: [
                "Hearth", "HearthServer", "HearthAccess", "HearthIdentity", "HearthStorage", "HearthSQLite",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Tests/Support/HearthTestSupport"
        ),
        .testTarget(
            name: "HearthStoreTests",
            dependencies: [
                "HearthStore", "HearthStoreTesting", "Hearth", "HearthCore", "HearthTestSupport",
            ]
        ),
        .testTarget(
            name: "ProfilesCoreTests",
            dependencies: [
                "ProfilesCore", "Hearth", "HearthTestSupport",
            ]
        ),
        .testTarget(
            name: "PostsCoreTests",
            dependencies: [
                "PostsCore", "Hearth", "HearthStore", "HearthStoreTesting", "HearthTestSupport",
            ]
        ),
        .testTarget(
            name: "TimelineCoreTests",
            dependencies: [
                "TimelineCore", "Hearth", "HearthTestSupport",
            ]
        ),
        // Firebase's Swift API as docs/compatibility.md lists it, used exactly as Firebase declares it
        // (scripts/check-api-inventory.py ties the two together); compiles against Hearth alone.
        .testTarget(name: "FirebaseAPITests", dependencies: ["Hearth"]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .plugin {
    // TimelinePort keeps its own `.swiftLanguageMode(.v5)` (appended to).
    target.swiftSettings = (target.swiftSettings ?? []) + swiftSettings + (target.name == "TimelinePort" ? [] : existentialAny)
}
