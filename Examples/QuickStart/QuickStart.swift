import Foundation
import Hearth

/// The README's example: observe a list live, add to it, update, and count likes with a transaction.
///
///     swift run -c release hearth serve --emulator          # in one terminal
///     swift run hearth-quickstart                           # in another
///     swift run hearth-quickstart http://127.0.0.1:9000?ns=demo
@main
struct QuickStart {
    static func main() async throws {
        let url = CommandLine.arguments.dropFirst().first ?? "http://127.0.0.1:9000?ns=quickstart"
        let database = Database.database(url: url)
        let messages = database.reference(withPath: "messages")

        // Observe the list live: every message, as it arrives, and every change to one.
        let watcher = Task {
            for try await snapshot in messages.queryOrderedByKey().events(.childAdded) {
                print("added   \(snapshot.key): \(describe(snapshot.value))")
            }
        }
        let changes = Task {
            for try await snapshot in messages.events(.childChanged) {
                print("changed \(snapshot.key): \(describe(snapshot.value))")
            }
        }

        // Add a message under a new push ID, then update one field of it.
        let message = messages.childByAutoId()
        try await message.setValue(["text": "hello", "likes": 0])
        try await message.updateChildValues(["text": "hello, world"])

        // Count a like with a transaction: safe against other clients liking at the same time.
        let (committed, likes) = try await message.child("likes").runTransactionBlock { current in
            current.value = ((current.value as? Int) ?? 0) + 1
            return .success(withValue: current)
        }
        print("like committed: \(committed), likes now \(describe(likes.value))")

        // Read it back once from the server.
        let stored = try await message.getData()
        print("stored  \(stored.key): \(describe(stored.value))")
        watcher.cancel()
        changes.cancel()
    }

    static func describe(_ value: Any?) -> String {
        guard let value else { return "null" }
        if let object = value as? [String: Any] {
            return "{" + object.keys.sorted().map { "\($0): \(describe(object[$0]))" }.joined(separator: ", ") + "}"
        }
        return "\(value)"
    }
}
