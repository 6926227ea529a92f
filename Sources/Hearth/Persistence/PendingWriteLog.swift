import Foundation
import HearthCore
import Synchronization

/// The writes the server has not confirmed, kept in a file so that they survive the app: a write made
/// offline and not yet sent when the process ends is sent by the next process that opens the same
/// database with persistence on.
///
/// The file is a log of JSON lines: `{"w":1,"a":"p","b":{"p":"/x","d":1}}` records a write (its wire
/// action and body, as sent), `{"c":1}` its confirmation (acknowledged, refused or purged). Each line
/// reaches the operating system with one `write(2)` before the write's local events fire, so it
/// survives the process being killed; it is not fsynced (a power loss can lose the newest lines, as
/// with the official SDKs' caches). Opening the log keeps only the unconfirmed writes, renumbered from 1.
///
/// For example:
/// ```swift
/// let log = try PendingWriteLog(directory: folder)
/// for write in log.recovered { print(write.action, write.body.jsonText) }
/// log.append(.init(id: 3, action: "p", body: body))
/// log.confirm(id: 3)
/// ```
final class PendingWriteLog: Sendable {
    struct Write: Sendable, Equatable {
        var id: Int
        /// The wire action: `p` (set) or `m` (update).
        var action: String
        /// The wire body: `{"p": path, "d": data}`.
        var body: JSONValue
    }

    /// The writes the previous process left unconfirmed, in order, numbered from 1.
    let recovered: [Write]
    private let descriptor: Mutex<Int32>
    let file: URL

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        file = directory.appendingPathComponent("pending-writes.jsonl")
        let previous = (try? Data(contentsOf: file)) ?? Data()
        recovered = Self.unconfirmed(in: previous)
        // Start a new log holding just the unconfirmed writes: written aside and renamed, so a crash
        // here leaves either the old log or the new one.
        var text = ""
        for write in recovered { text += Self.line(for: write) }
        let temporary = directory.appendingPathComponent("pending-writes.jsonl.tmp")
        try Data(text.utf8).write(to: temporary)
        if rename(temporary.path, file.path) != 0 {
            throw DatabaseError(.other, "Cannot replace \(file.path): \(String(cString: strerror(errno)))")
        }
        let fd = open(file.path, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        guard fd >= 0 else { throw DatabaseError(.other, "Cannot open \(file.path): \(String(cString: strerror(errno)))") }
        descriptor = Mutex(fd)
    }

    deinit {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
        }
    }

    /// Records a write before it takes effect.
    func append(_ write: Write) {
        put(Self.line(for: write))
    }

    /// Records that a write no longer needs sending.
    func confirm(id: Int) {
        put(#"{"c":\#(id)}"# + "\n")
    }

    private func put(_ line: String) {
        descriptor.withLock { fd in
            var bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { raw in
                    write(fd, raw.baseAddress! + offset, raw.count - offset)
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    return // The write still goes to the server; only its survival of a restart is lost.
                }
                offset += written
            }
            bytes.removeAll()
        }
    }

    static func line(for write: Write) -> String {
        JSONValue.object([("w", .number(Double(write.id))), ("a", .string(write.action)), ("b", write.body)]).jsonText + "\n"
    }

    /// The writes of a log without a confirmation, in order, renumbered from 1. A torn last line (the
    /// process died while writing it) is ignored.
    static func unconfirmed(in data: Data) -> [Write] {
        var writes: [(id: Int, action: String, body: JSONValue)] = []
        var confirmed: Set<Int> = []
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let value = try? JSONValue(parsing: line), case .object(let members) = value else { continue }
            func member(_ name: String) -> JSONValue? { members.first { $0.key == name }?.value }
            if case .number(let id)? = member("c") {
                confirmed.insert(Int(id))
            } else if case .number(let id)? = member("w"), case .string(let action)? = member("a"), let body = member("b") {
                writes.append((Int(id), action, body))
            }
        }
        return writes.filter { !confirmed.contains($0.id) }.enumerated().map { index, write in
            Write(id: index + 1, action: write.action, body: write.body)
        }
    }
}
