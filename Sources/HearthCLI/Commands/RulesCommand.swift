import ArgumentParser
import Foundation
import HearthRules

struct RulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Work with security rules files.",
        subcommands: [RulesCheckCommand.self]
    )
}

struct RulesCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a rules file and print every problem, compiler-style.",
        discussion: "Exits 0 when the file would be accepted by PUT /.settings/rules.json, 1 otherwise."
    )

    @Argument(help: "The rules file (JSON with comments).")
    var file: String

    func run() async throws {
        let source: String
        do {
            source = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw CLIError("cannot read \(file): \(error.localizedDescription)")
        }
        do {
            _ = try RulesDocument(source: source)
            print("\(file): ok")
        } catch {
            // Positions of expression problems are within the expression at that rule's location.
            for diagnostic in error.diagnostics {
                FileHandle.standardError.write(Data("error: \(file): \(diagnostic)\n".utf8))
            }
            throw ExitCode.failure
        }
    }
}
