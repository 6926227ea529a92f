import ArgumentParser
import Foundation
import HearthSQLite

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a data directory to a consistent backup, while the server runs.",
        discussion: """
            Every database, the users and the files' catalog are copied with SQLite's VACUUM INTO (each \
            exactly as of one commit; the server keeps writing meanwhile), the files' bytes and the \
            server's keys beside them. The backup is checked and appears only once complete. Restore it \
            with `hearth restore`. docs/backup.md has a recipe for continuous backups.
            """
    )

    @Argument(help: "The directory to create for the backup (it must not exist).")
    var destination: String

    @OptionGroup var dataOptions: DataOptions

    func run() async throws {
        let target = URL(fileURLWithPath: destination).standardizedFileURL
        var bar: ProgressBar?
        let summary: DataDirectoryBackup.Summary
        do {
            summary = try DataDirectoryBackup.create(from: dataOptions.directory, to: target) { done, total in
                if bar == nil { bar = ProgressBar(total: Int(total), label: "Backing up") }
                bar?.update(Int(done))
            }
        } catch let failure as DataDirectoryBackup.Failure {
            throw CLIError(failure.description)
        }
        let finished = bar ?? ProgressBar(total: 1, label: "Backing up")
        finished.finish(
            "Backed up \(summary.databases.count) database\(summary.databases.count == 1 ? "" : "s") (\(summary.databases.joined(separator: ", "))), "
                + "\(summary.sqliteFiles) SQLite files and \(summary.blobs) stored files, \(summary.bytes / 1024) KiB, to \(target.path)"
        )
    }
}

struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup made by `hearth backup` into a data directory (with the server stopped).",
        discussion: """
            The backup is checked first (PRAGMA integrity_check, every stored file present). An existing \
            data directory is replaced only with --replace, and kept beside it as <dir>.before-restore-<time>.
            """
    )

    @Argument(help: "The backup directory.")
    var backup: String

    @Flag(help: "Replace the data directory's current contents (kept beside it).")
    var replace = false

    @OptionGroup var dataOptions: DataOptions

    func run() async throws {
        let source = URL(fileURLWithPath: backup).standardizedFileURL
        do {
            let summary = try DataDirectoryBackup.restore(source, into: dataOptions.directory, replacing: replace)
            FileHandle.standardError.write(Data(
                "Restored \(summary.databases.count) database\(summary.databases.count == 1 ? "" : "s") and \(summary.blobs) stored files into \(dataOptions.directory.path)\n".utf8
            ))
        } catch let failure as DataDirectoryBackup.Failure {
            throw CLIError(failure.description)
        }
    }
}
