import ArgumentParser
import Foundation
import HearthCore
import HearthRules

/// The cost of checking one write against a realistic rules file (a `.write` and two `.validate`s).
struct RulesBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Time per write check (.write + .validate) with a Posts-style rules file."
    )

    @Option(help: "How many checks to time.")
    var iterations = 200_000

    static let rules = #"""
        {
          "rules": {
            "posts": {
              ".read": "auth != null",
              "$uid": {
                ".write": "$uid === auth.uid",
                "$post": {
                  ".validate": "newData.hasChildren(['title', 'createdAt']) && newData.child('title').isString()",
                  "title": { ".validate": "newData.val().length > 0 && newData.val().length <= 100" },
                  "createdAt": { ".validate": "newData.val() <= now" }
                }
              }
            }
          }
        }
        """#

    func run() async throws {
        let document = try RulesDocument(source: Self.rules)
        var root = Node.empty
        for user in 0..<1000 {
            let post = try Node(json: try JSONValue(parsing: "{\"title\": \"Post \(user)\", \"createdAt\": 1}"))
            root = root.setting(post, at: try DatabasePath("/posts/u\(user)/p0"))
        }
        let path = try DatabasePath("/posts/u42/p1")
        let after = root.setting(try Node(json: try JSONValue(parsing: #"{"title": "Hello", "createdAt": 1000}"#)), at: path)
        let subject = RulesDocument.Subject.auth(.object([(key: "uid", value: .string("u42"))]))
        guard document.canWrite(path, subject, before: root, after: after, now: 2000) else {
            throw CLIError("the benchmark's write was denied; the rules or the data are wrong")
        }
        let clock = ContinuousClock()
        var allowed = 0
        let elapsed = clock.measure {
            for _ in 0..<iterations where document.canWrite(path, subject, before: root, after: after, now: 2000) {
                allowed += 1
            }
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(String(format: "Rules: %.2f µs per write check (.write + 3 .validate), %d checks, %d allowed", seconds / Double(iterations) * 1e6, iterations, allowed))
    }
}
