import ArgumentParser
import AsyncHTTPClient
import Foundation
import HearthCore

/// `hearth cluster status`: the nodes of a cluster, who owns which database, and how far behind each
/// node's copy of each database is.
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Look at a cluster of Hearth nodes on PostgreSQL.",
        subcommands: [ClusterStatusCommand.self]
    )
}

struct ClusterStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Nodes, database owners and replication lag, as the nodes see them.",
        discussion: """
            Asks the node at --url for the members, then every live member for its own view. Needs the \
            admin secret (--secret, or HEARTH_ADMIN_SECRET).
            """
    )

    @Option(help: "Any node of the cluster.")
    var url: String = "http://127.0.0.1:9000"

    @Option(help: "The admin secret (default: $HEARTH_ADMIN_SECRET).")
    var secret: String?

    @Flag(help: "Print every node's answer as JSON lines instead of tables.")
    var json = false

    func run() async throws {
        let client = try StorageAdminClient.forServer(url: url, secret: secret)
        let first = try await status(client)
        var views: [(name: String, view: JSONValue)] = []
        guard case .array(let members)? = first["members"] else { throw CLIError("\(url) is not a cluster node (started without --postgres?)") }
        for member in members {
            guard case .string(let name)? = member["name"], case .string(let address)? = member["address"], member["alive"] == .bool(true) else { continue }
            if let view = try? await status(try StorageAdminClient.forServer(url: address, secret: secret ?? client.secret)) {
                views.append((name, view))
            }
        }
        if json {
            for (_, view) in views { print(view.jsonText) }
            return
        }
        print("Nodes")
        var rows = [["NAME", "ADDRESS", "ALIVE", "HEARTBEAT AGE"]]
        for member in members {
            rows.append([
                member["name"]?.stringValue ?? "?", member["address"]?.stringValue ?? "?",
                member["alive"] == .bool(true) ? "yes" : "no",
                member["heartbeatAge"].flatMap { if case .number(let age) = $0 { String(format: "%.1f s", age) } else { nil } } ?? "?",
            ])
        }
        printTable(rows)
        print("\nDatabases (applied log position on each node, lag in parentheses)")
        var namespaces: [String: (owner: String, epoch: String, committed: String)] = [:]
        var applied: [String: [String: String]] = [:]
        for (name, view) in views {
            guard case .array(let databases)? = view["databases"] else { continue }
            for database in databases {
                guard let namespace = database["namespace"]?.stringValue else { continue }
                namespaces[namespace] = (
                    database["owner"]?.stringValue ?? "-", number(database["epoch"]), number(database["committed"])
                )
                applied[namespace, default: [:]][name] = "\(number(database["applied"])) (\(number(database["lag"])))"
            }
        }
        var header = ["DATABASE", "OWNER", "EPOCH", "COMMITTED"]
        header += views.map(\.name)
        var table = [header]
        for namespace in namespaces.keys.sorted() {
            let info = namespaces[namespace]!
            table.append([namespace, info.owner, info.epoch, info.committed] + views.map { applied[namespace]?[$0.name] ?? "-" })
        }
        printTable(table)
    }

    private func status(_ client: StorageAdminClient) async throws -> JSONValue {
        let reply = try await client.send(client.request("/.cluster/v1/status"))
        guard let json = reply.json else { throw CLIError("\(client.base) answered no status") }
        return json
    }

    private func number(_ value: JSONValue?) -> String {
        if case .number(let number)? = value { return String(Int64(number)) }
        return "-"
    }

    private func printTable(_ rows: [[String]]) {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            print("  " + zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
    }
}
