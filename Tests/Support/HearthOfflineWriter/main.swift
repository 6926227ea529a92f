// A separate process for PersistenceProcessTests: one launch of an app using the SDK with persistence.
//
//   HearthOfflineWriter write <database-url> <folder> <count>
//     writes while the server is down (log/1…count, an increment per write, `last` = the write's
//     number, one multi-path update), then exits without ever having been connected;
//   HearthOfflineWriter flush <database-url> <folder>
//     starts on the same folder, lets the queued writes reach the server, and exits once a write made
//     after them is confirmed (the server answers in order, so they are confirmed too).
import Dispatch
import Foundation
import Hearth

/// Writes without waiting for the server (a synchronous function: `setValue` here is the
/// completion-handler variant, not the `async` one that waits for confirmation).
func queueWrites(_ count: Int, to database: Database) {
    // No connection: every write stays queued, recorded on disk before its local events fire.
    database.goOffline()
    let root = database.reference()
    for number in 1...count {
        root.child("log/\(number)").setValue("entry \(number)")
        root.child("count").setValue(ServerValue.increment(1))
        root.child("last").setValue(number)
    }
    root.updateChildValues(["summary/written": count, "summary/by": "writer"])
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, ["write", "flush"].contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: HearthOfflineWriter write|flush <database-url> <folder> [count]\n".utf8))
    exit(2)
}
let database = try Database(url: arguments[2])
database.callbackQueue = DispatchQueue(label: "hearth.offline-writer")
database.persistenceDirectory = URL(fileURLWithPath: arguments[3], isDirectory: true)
database.isPersistenceEnabled = true

switch arguments[1] {
case "write":
    guard arguments.count == 5, let count = Int(arguments[4]) else { exit(2) }
    queueWrites(count, to: database)
    // Local events of the writes have been produced; wait for them so the process ends idle.
    let done = DispatchSemaphore(value: 0)
    database.callbackQueue.async { done.signal() }
    done.wait()
    print("queued \(count * 3 + 1) writes")
case "flush":
    // The type picks the `async` overload, which returns once the server confirms: in top-level code
    // a bare `try await ref.setValue(true)` resolves to the fire-and-forget one.
    let _: DatabaseReference = try await database.reference(withPath: "flushed").setValue(true)
    print("flushed")
default:
    exit(2)
}
exit(0)
