import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Password sign-ins per second (each one a real scrypt verification), and what a sign-in storm
/// does to realtime traffic: the WebSocket write-to-listener latency measured alone, then again while
/// the storm runs (issue #10's targets).
struct SignInBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signin",
        abstract: "Password sign-ins per second, and write-to-listener latency with and without a sign-in storm.",
        discussion: "Against a running server: hearth bench signin --port 9000 --secret $HEARTH_ADMIN_SECRET"
    )

    @OptionGroup var options: RealtimeBenchOptions

    @Option(help: "The project of the users (the server's --project).")
    var project = "hearth"

    @Option(help: "Accounts to sign in to (created first, through the admin API).")
    var users = 50

    @Option(help: "Concurrent sign-in clients.")
    var clients = 8

    @Option(help: "Seconds of each phase.")
    var seconds = 10

    @Option(help: "Realtime writes per second during the latency phases.")
    var rate = 200

    func run() async throws {
        let base = "http://\(options.host):\(options.port)"
        let client = HTTPClient.shared
        let password = "bench-password-1"
        print("Creating \(users) users…")
        var emails: [String] = []
        for index in 0..<users {
            var request = HTTPClientRequest(url: "\(base)/identitytoolkit.googleapis.com/v1/projects/\(project)/accounts")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(options.credential)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"email":"bench\#(index)-\#(UUID().uuidString.prefix(8))@example.com","password":"\#(password)"}"#))
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 16)
            guard response.status == .ok, let json = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                let email = json["email"] as? String
            else { throw CLIError("creating a user answered \(response.status.code): \(String(buffer: body))") }
            emails.append(email)
        }

        print("\n1. Realtime latency alone")
        try await latency()

        print("\n2. Sign-in storm alone: \(clients) clients, \(seconds) s")
        let alone = try await storm(base: base, password: password, emails: emails)
        print("   \(alone.count) sign-ins in \(String(format: "%.1f", alone.seconds)) s = \(String(format: "%.1f", Double(alone.count) / alone.seconds)) sign-ins/s")

        print("\n3. Realtime latency during a sign-in storm")
        async let during = storm(base: base, password: password, emails: emails)
        try await latency()
        let stormed = try await during
        print("   meanwhile \(stormed.count) sign-ins = \(String(format: "%.1f", Double(stormed.count) / stormed.seconds)) sign-ins/s")
    }

    func latency() async throws {
        var arguments = ["--host", options.host, "--port", String(options.port), "--namespace", options.namespace, "--listeners", "10",
                         "--rate", String(rate), "--seconds", String(seconds)]
        if let secret = options.secret { arguments += ["--secret", secret] }
        let command = try WSLatencyBenchCommand.parse(arguments)
        try await command.run()
    }

    /// Signs in round-robin from `clients` concurrent tasks for `seconds`; every answer must be a success.
    func storm(base: String, password: String, emails: [String]) async throws -> (count: Int, seconds: Double) {
        let start = ContinuousClock.now
        let deadline = start + .seconds(seconds)
        let count = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<clients {
                group.addTask {
                    var done = 0
                    var next = index
                    while ContinuousClock.now < deadline {
                        var request = HTTPClientRequest(url: "\(base)/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=bench")
                        request.method = .POST
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(ByteBuffer(string: #"{"email":"\#(emails[next % emails.count])","password":"\#(password)","returnSecureToken":true}"#))
                        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                        let body = try await response.body.collect(upTo: 1 << 16)
                        guard response.status == .ok else { throw CLIError("a sign-in answered \(response.status.code): \(String(buffer: body))") }
                        done += 1
                        next += clients
                    }
                    return done
                }
            }
            var total = 0
            for try await done in group { total += done }
            return total
        }
        let elapsed = ContinuousClock.now - start
        return (count, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
