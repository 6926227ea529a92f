import ArgumentParser
import Foundation
import HearthCore
import HearthRules

struct RulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Work with security rules files.",
        subcommands: [RulesCheckCommand.self, RulesTestCommand.self]
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
        let source = try readTextFile(file)
        do {
            _ = try RulesDocument(source: source)
            print("\(file): ok")
        } catch {
            for diagnostic in error.diagnostics { FileHandle.standardError.write(Data(RulesCheckCommand.format(diagnostic, file).utf8)) }
            throw ExitCode.failure
        }
    }
}

extension RulesCheckCommand {
    /// Compiler style: `file:line:column: error: message (at rules/path/.write)`.
    static func format(_ diagnostic: Diagnostic, _ file: String) -> String {
        let location = diagnostic.location.isEmpty ? "" : " (at \(diagnostic.location))"
        return "\(file):\(diagnostic.line):\(diagnostic.column): error: \(diagnostic.message)\(location)\n"
    }
}

struct RulesTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run rules scenarios (who does what where, allowed or denied) against a rules file.",
        discussion: """
            The scenario file is JSON: {"data": <initial data>, "tests": [{"name", "auth", "read" | "write" + "value" \
            | "update" + "value", "expect": "allowed" | "denied"}]}. Exits 1 when a scenario fails.
            """
    )

    @Argument(help: "The rules file.")
    var rules: String

    @Argument(help: "The scenario file.")
    var scenarios: String

    func run() async throws {
        let document: RulesDocument
        do {
            document = try RulesDocument(source: try String(contentsOfFile: rules, encoding: .utf8))
        } catch let error as RulesError {
            for diagnostic in error.diagnostics { FileHandle.standardError.write(Data(RulesCheckCommand.format(diagnostic, rules).utf8)) }
            throw ExitCode.failure
        } catch {
            throw CLIError("cannot read \(rules): \(error.localizedDescription)")
        }
        let suite: RulesTestSuite
        do {
            suite = try RulesTestSuite(json: try Self.scenarioJSON(scenarios))
        } catch let error as RulesError {
            throw CLIError("\(scenarios): \(error.message)")
        }
        try Self.report(suite.run(document, now: WallClock.milliseconds()).map { ($0.name, $0.passed, $0.detail) })
    }

    /// Prints each scenario's outcome and a count; fails the command when any failed (shared with
    /// `hearth storage rules test`).
    static func report(_ outcomes: [(name: String, passed: Bool, detail: String)]) throws {
        for outcome in outcomes {
            print("\(outcome.passed ? "✔" : "✘") \(outcome.name): \(outcome.detail)")
        }
        let failed = outcomes.filter { !$0.passed }.count
        print("\(outcomes.count - failed) passed, \(failed) failed")
        if failed > 0 { throw ExitCode.failure }
    }

    /// Reads a scenario file's JSON, or says what is wrong with it.
    static func scenarioJSON(_ file: String) throws -> JSONValue {
        do {
            return try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        } catch {
            throw CLIError("\(file) is not a valid scenario file: \(error)")
        }
    }
}
