import ArgumentParser
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// The HTTP framework's ceiling on this machine: a Hummingbird server that answers the REST
/// benchmark's requests without doing anything (no storage, no rules, no JSON model), run beside
/// `hearth serve` so each REST figure is also a ratio to what Hummingbird alone reaches
/// (`scripts/bench/ceiling.sh`, docs/benchmarks.md).
///
/// `POST …` reads the whole body and answers `{"name":"-ceiling"}` as Hearth's push does; any other
/// request answers `{"n":1,"title":"hello"}` as a read of a seeded item does.
///
/// For the files benchmark (`hearth bench files --target ceiling`): `POST /blob` reads and drops the
/// body, and `GET /blob/<KiB>` answers that many bytes from memory — the same bytes over the same
/// loopback to the same client, with no disk, checksum or catalog: what a download can reach here.
///
/// With `--durable <directory>`, `POST …` also stores the body as one row of a SQLite database in that
/// directory, group-committed and synced before the answer (``DurableCeiling``): the ceiling for a
/// durable write, everything Hearth does beyond it left out.
struct CeilingBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ceiling",
        abstract: "Serve a do-nothing Hummingbird handler: the framework's ceiling for the REST benchmarks."
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 9100

    @Option(help: "Store each POST's body durably in a SQLite database in this directory before answering (the ceiling for a durable write).")
    var durable: String?

    static let pushed = ByteBuffer(string: #"{"name":"-ceiling"}"#)
    static let item = ByteBuffer(string: #"{"n":1,"title":"hello"}"#)

    /// One buffer per size asked for, made once (answering it again copies nothing); at most
    /// `blobSizesKept` sizes, so requests for ever new sizes cannot pile buffers up.
    static let blobs = Mutex<[Int: ByteBuffer]>([:])
    static let blobSizesKept = 8

    static func blob(kilobytes: Int) -> ByteBuffer {
        blobs.withLock { blobs in
            if let blob = blobs[kilobytes] { return blob }
            let blob = ByteBuffer(repeating: 0x5A, count: kilobytes * 1024)
            if blobs.count < blobSizesKept { blobs[kilobytes] = blob }
            return blob
        }
    }

    func run() async throws {
        let store = try durable.map { try DurableCeiling(directory: URL(filePath: $0, directoryHint: .isDirectory)) }
        let router = Router()
        router.post("blob") { request, _ -> Response in
            for try await _ in request.body {}
            return Self.json(Self.pushed)
        }
        router.get("blob/:kilobytes") { _, context -> Response in
            // At most 64 MiB: the benchmark's objects are KiB to MiB.
            guard let kilobytes = context.parameters.get("kilobytes", as: Int.self), (1...(64 << 10)).contains(kilobytes) else {
                return Response(status: .badRequest)
            }
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: Self.blob(kilobytes: kilobytes))
            )
        }
        router.post("**") { request, _ -> Response in
            // Read the body as Hearth does before it answers.
            let body = try await request.body.collect(upTo: 1 << 20)
            try await store?.store(body)
            return Self.json(Self.pushed)
        }
        router.get("**") { _, _ -> Response in Self.json(Self.item) }
        let app = Application(
            router: router, configuration: .init(address: .hostname(host, port: port)), services: store.map { [$0] } ?? []
        )
        print("ceiling: listening on http://\(host):\(port)\(durable.map { ", POST bodies stored durably in \($0)" } ?? "")")
        try await app.runService()
    }

    static func json(_ body: ByteBuffer) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body))
    }
}
