import ArgumentParser
import Foundation
import HearthCore
import HearthPostgres
import HearthSQLite
import HearthStorage

/// `hearth migrate`: copies every database between a data directory (SQLite) and PostgreSQL, either way.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy every database (data and rules) between a data directory and PostgreSQL.",
        discussion: """
            A location is a data directory or a postgres:// URL:
              hearth migrate --from ./hearth-data --to postgres://hearth@db:5432/hearth
              hearth migrate --from postgres://hearth@db:5432/hearth --to ./hearth-copy
            Stop the server on a data directory first. Databases are copied one at a time, with progress on \
            standard error; a target that already holds one of them is left alone unless --replace is given. \
            Users and files are not copied (the PostgreSQL backend does not store them yet).
            """
    )

    @Option(help: ArgumentHelp("Where to copy from: a data directory or a postgres:// URL.", valueName: "dir|url"))
    var from: String

    @Option(help: ArgumentHelp("Where to copy to: a data directory or a postgres:// URL.", valueName: "dir|url"))
    var to: String

    @Flag(help: "Overwrite databases the target already holds.")
    var replace = false

    @Option(help: "Rows per commit.")
    var batchRows = 50_000

    /// One end of a migration, opened.
    enum Location {
        case directory(SQLiteStorage)
        case postgres(PostgresStorage)

        var storage: any DatabaseStorage {
            switch self {
            case .directory(let storage): storage
            case .postgres(let storage): storage
            }
        }

        static func isPostgres(_ location: String) -> Bool {
            location.hasPrefix("postgres://") || location.hasPrefix("postgresql://")
        }

        static func open(_ location: String, role: String) async throws -> Location {
            do {
                if isPostgres(location) {
                    let node = "hearth-migrate-\(ProcessInfo.processInfo.processIdentifier)"
                    return .postgres(try await PostgresStorage.connect(url: location, nodeName: node))
                }
                return .directory(try SQLiteStorage(directory: URL(fileURLWithPath: location, isDirectory: true).standardizedFileURL))
            } catch let error as DatabaseStorageError {
                throw CLIError("--\(role): \(error.message)")
            }
        }

        func close() async {
            switch self {
            case .directory(let storage): storage.releaseLock()
            case .postgres(let storage): await storage.shutdown()
            }
        }
    }

    func run() async throws {
        guard from != to else { throw CLIError("--from and --to are the same location") }
        let source = try await Location.open(from, role: "from")
        let target: Location
        do {
            target = try await Location.open(to, role: "to")
        } catch {
            await source.close()
            throw error
        }
        let interactive = isatty(STDERR_FILENO) == 1
        let migration = DatabaseMigration(replace: replace, batchRows: batchRows)
        do {
            let started = ContinuousClock.now
            let summary = try await migration.run(from: source.storage, to: target.storage) { progress in
                let line = "\(progress.namespace) (\(progress.index)/\(progress.count)): \(progress.rowsDone) of \(progress.rowsTotal) rows"
                FileHandle.standardError.write(Data((interactive ? "\r\(line)" : line + "\n").utf8))
                if interactive, progress.rowsDone == progress.rowsTotal { FileHandle.standardError.write(Data("\n".utf8)) }
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "Migrated %d database(s), %d rows, %d rules version(s) in %.1f s\n",
                        summary.namespaces, summary.rows, summary.rulesVersions, seconds
                    ).utf8
                )
            )
        } catch let error as DatabaseMigration.TargetNotEmpty {
            await source.close()
            await target.close()
            throw CLIError(error.description)
        } catch let error as DatabaseStorageError {
            await source.close()
            await target.close()
            throw CLIError(error.message)
        } catch {
            await source.close()
            await target.close()
            throw error
        }
        await source.close()
        await target.close()
    }
}
