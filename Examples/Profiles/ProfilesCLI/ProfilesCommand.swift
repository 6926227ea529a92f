import ArgumentParser
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Hearth
import ProfilesCore

/// `profiles`: the Profiles directory from a terminal, on the same data as the web app at
/// `/apps/profiles/` (namespace `profiles`). Every database call goes through `ProfileDirectory`.
///
///     swift run hearth serve --emulator            # in one terminal
///     swift run profiles sample                    # in another
///     swift run profiles list --gender female --sort -age
///     swift run profiles watch                     # then change something in the web app
@main
struct ProfilesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profiles",
        abstract: "The Profiles directory from a terminal: the same people as the web app at /apps/profiles/.",
        discussion: """
            Talks to a Hearth server (default http://127.0.0.1:9000, namespace 'profiles'). Start one with \
            'swift run hearth serve --emulator'.
            """,
        subcommands: [List.self, Show.self, Add.self, Delete.self, Hobbies.self, Sample.self, Watch.self],
        defaultSubcommand: List.self
    )
}

// MARK: - Options shared by every command

struct ServerOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The Hearth server. The namespace is 'profiles' unless the URL names one (?ns=…).", valueName: "url"
    ))
    var url = "http://127.0.0.1:9000"

    @Option(help: ArgumentHelp("Seconds to wait for the server to connect and to answer.", valueName: "seconds"))
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
    }

    /// `url` with `ns=profiles` unless it names a namespace.
    var databaseURL: String {
        if url.contains("ns=") { return url }
        return url + (url.contains("?") ? "&" : "?") + "ns=profiles"
    }

    /// A directory on a connected client; fails with what to do when the server cannot be reached.
    func connect() async throws -> ProfileDirectory {
        let database: Database
        do {
            database = try Database(url: databaseURL)
        } catch {
            throw Failure("--url \(url) is not a database URL (\(error)); use one such as http://127.0.0.1:9000")
        }
        database.callbackQueue = DispatchQueue(label: "profiles.callbacks")
        let directory = ProfileDirectory(database: database)
        do {
            try await directory.waitUntilConnected(timeout: .milliseconds(Int(timeout * 1000)))
        } catch ProfileDirectoryError.unreachable {
            throw Failure(
                "cannot reach a Hearth server at \(url) (waited \(Self.seconds(timeout))).",
                hint: "start one with 'swift run hearth serve --emulator' (it listens on port 9000), or pass --url with your server's address."
            )
        }
        return directory
    }

    /// Runs `body` with a connected directory; a server that stops answering becomes an error
    /// rather than a hang (writes wait for the server's confirmation).
    func run<T: Sendable>(_ body: @escaping @Sendable (ProfileDirectory) async throws -> T) async throws -> T {
        let directory = try await connect()
        let timeout = timeout
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body(directory) }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                return nil
            }
            defer { group.cancelAll() }
            guard let result = try await group.next(), let value = result else {
                throw Failure("the server at \(url) did not answer within \(Self.seconds(timeout)); is it still running?")
            }
            return value
        }
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

/// An error worded for the person at the terminal.
struct Failure: Error, CustomStringConvertible {
    let description: String
    /// What to do about it, printed after the error.
    var hint: String?

    init(_ description: String, hint: String? = nil) {
        self.description = description
        self.hint = hint
    }
}

/// Prints `error: …` (with what to do, where there is something to do) and exits with status 1.
func reporting<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ExitCode {
        throw error
    } catch let error as CleanExit {
        throw error
    } catch {
        for line in describe(error).split(separator: "\n", omittingEmptySubsequences: false) {
            Terminal.error("error: \(line)")
        }
        if let hint = (error as? Failure)?.hint { Terminal.error("hint: \(hint)") }
        throw ExitCode.failure
    }
}

func describe(_ error: any Error) -> String {
    switch error {
    case let error as ProfileValidationError:
        return error.description
    case let error as DatabaseError where error.code == .permissionDenied:
        return "the server refused the change (permission_denied): the 'profiles' namespace's rules do not allow it."
    case let error as DatabaseError:
        return "the server answered \(error.code.status): \(error.message)"
    default:
        return "\(error)"
    }
}

/// Output that shows at once, even through a pipe (`watch` is read line by line by scripts).
enum Terminal {
    static func print(_ line: String = "") {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

// MARK: - list

enum GenderArgument: String, ExpressibleByArgument, CaseIterable {
    case male, female
    var gender: Gender { self == .male ? .male : .female }
}

enum SortArgument: String, ExpressibleByArgument, CaseIterable {
    case id, age, ageDescending = "-age", name, nameDescending = "-name"

    var sort: ProfileSort {
        switch self {
        case .id: .id
        case .age: .ageAscending
        case .ageDescending: .ageDescending
        case .name: .nameAscending
        case .nameDescending: .nameDescending
        }
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the profiles (by id unless sorted).")

    @Option(help: "Only this gender.")
    var gender: GenderArgument?

    // Unconditional, so that `--sort -age` reads "-age" as the value rather than as an option.
    @Option(parsing: .unconditional, help: ArgumentHelp(
        "id (the default), age, -age (oldest first), name or -name (Z to A).", valueName: "order"
    ))
    var sort: SortArgument = .id

    @OptionGroup var server: ServerOptions

    func run() async throws {
        let list = try await reporting { try await server.run { try await $0.list() } }
        let filter = ProfileFilter(gender: gender?.gender)
        let shown = list.profiles.visible(filter: filter, sort: sort.sort)
        Output.warn(about: list.invalid)
        if list.profiles.isEmpty {
            Terminal.print("Nobody here yet. Load the sample people with 'profiles sample', or add someone with 'profiles add'.")
            return
        }
        for line in Output.table(shown) { Terminal.print(line) }
        var how: [String] = []
        if filter != .all { how.append(filter.description.lowercased()) }
        if sort != .id { how.append(sort.sort.description.lowercased()) }
        let total = list.profiles.count
        let count = shown.count == total ? "\(total) \(total == 1 ? "profile" : "profiles")" : "\(shown.count) of \(total) profiles"
        Terminal.print(count + (how.isEmpty ? "" : " (\(how.joined(separator: ", ")))"))
    }
}

// MARK: - show

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one profile.")

    @Argument(help: "The profile's id (the number 'list' shows).")
    var id: Int

    @OptionGroup var server: ServerOptions

    func run() async throws {
        let id = id
        let profile = try await reporting { try await server.run { try await $0.existingProfile(withID: id) } }
        for line in Output.detail(profile) { Terminal.print(line) }
    }
}

// MARK: - add

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a profile (it gets the next id).",
        discussion: "The same checks as the web app's form: a name, an age from 0 to 150, female or male, an http(s) image address, hobbies of at most 40 characters."
    )

    @Option(help: "The person's name.")
    var name = ""

    @Option(help: "Their age, a whole number from 0 to 150.")
    var age = ""

    @Option(help: "female or male.")
    var gender = ""

    @Option(name: .customLong("hobby"), help: ArgumentHelp("A hobby (repeat for more; commas separate too).", valueName: "hobby"))
    var hobbies: [String] = []

    @Option(name: .customLong("image"), help: ArgumentHelp("An http(s) address of their picture.", valueName: "url"))
    var imageURL = ""

    @OptionGroup var server: ServerOptions

    func run() async throws {
        let form = ProfileForm(name: name, age: age, gender: gender, imageURL: imageURL, hobbies: hobbies)
        let profile = try await reporting {
            let content = try form.validated()   // before connecting: a typo needs no server
            return try await server.run { try await $0.add(content) }
        }
        Terminal.print("Added \(Output.summary(profile)).")
    }
}

// MARK: - delete

struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete a profile (its id is not used again).")

    @Argument(help: "The profile's id.")
    var id: Int

    @OptionGroup var server: ServerOptions

    func run() async throws {
        let id = id
        let profile = try await reporting {
            try await server.run { directory in
                let profile = try await directory.existingProfile(withID: id)
                try await directory.delete(profile)
                return profile
            }
        }
        Terminal.print("Deleted #\(profile.id) \(profile.name).")
    }
}

// MARK: - hobbies

struct Hobbies: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add or remove hobbies of a profile.",
        discussion: "For example: profiles hobbies 3 add sailing 'bird watching'; profiles hobbies 3 remove sailing"
    )

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case add, remove
    }

    @Argument(help: "The profile's id.")
    var id: Int

    @Argument(help: "add or remove.")
    var action: Action

    @Argument(help: "The hobbies.")
    var hobbies: [String] = []

    @OptionGroup var server: ServerOptions

    func validate() throws {
        if hobbies.isEmpty { throw ValidationError("Name at least one hobby to \(action.rawValue).") }
    }

    func run() async throws {
        let (id, action, hobbies) = (id, action, hobbies)
        let (profile, stored) = try await reporting {
            try await server.run { directory -> (Profile, [String]) in
                let profile = try await directory.existingProfile(withID: id)
                switch action {
                case .add:
                    return (profile, try await directory.addHobbies(hobbies, to: profile))
                case .remove:
                    let has = Set(profile.hobbies.map { $0.lowercased() })
                    let missing = hobbies.filter { !has.contains($0.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()) }
                    guard missing.isEmpty else {
                        let list = profile.hobbies.isEmpty ? "no hobbies" : "hobbies: \(profile.hobbies.joined(separator: ", "))"
                        throw Failure("#\(id) \(profile.name) has no hobby \(missing.map { "'\($0)'" }.joined(separator: ", ")) (\(list))")
                    }
                    return (profile, try await directory.removeHobbies(hobbies, from: profile))
                }
            }
        }
        Terminal.print(stored.isEmpty
            ? "#\(profile.id) \(profile.name) has no hobbies now."
            : "#\(profile.id) \(profile.name)'s hobbies: \(stored.joined(separator: ", "))")
    }
}

// MARK: - sample

struct Sample: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Load the web app's sample people (into an empty directory).")

    @Flag(help: "Add them even if the directory has people already.")
    var force = false

    @OptionGroup var server: ServerOptions

    func run() async throws {
        let force = force
        let added = try await reporting {
            try await server.run { directory -> [Profile] in
                let existing = try await directory.list().profiles.count
                if existing > 0, !force {
                    throw Failure("the directory already has \(existing) \(existing == 1 ? "profile" : "profiles"); pass --force to add the samples anyway")
                }
                return try await directory.addSamples()
            }
        }
        let ids = added.map(\.id)
        Terminal.print("Added \(added.count) sample profiles (#\(ids.min() ?? 0)–#\(ids.max() ?? 0)).")
    }
}

// MARK: - watch

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every change made anywhere (the web app, other terminals) as it happens, until Ctrl-C."
    )

    @OptionGroup var server: ServerOptions

    func run() async throws {
        // Ctrl-C ends a watch normally. Installed explicitly, so that it works even where the
        // shell started the process with SIGINT ignored (a background job of a script).
        signal(SIGINT) { _ in _exit(0) }
        let directory = try await reporting { try await server.connect() }
        let url = server.url
        let connection = Task {
            var wasOnline = true
            for await online in directory.connection() where online != wasOnline {
                Terminal.error(online ? "reconnected" : "connection to \(url) lost; reconnecting…")
                wasOnline = online
            }
        }
        defer { connection.cancel() }
        try await reporting {
            for try await update in directory.updates() {
                if update.isInitial {
                    Output.warn(about: update.list.invalid)
                    let count = update.list.profiles.count
                    Terminal.print("Watching \(count) \(count == 1 ? "profile" : "profiles") at \(url) (Ctrl-C to stop).")
                    continue
                }
                for change in update.changes { Terminal.print(Output.line(change)) }
            }
        }
    }
}

// MARK: - Formatting

enum Output {
    /// `#3  Grace Hopper       85  female  compilers, teaching`, in aligned columns.
    static func table(_ profiles: [Profile]) -> [String] {
        let idWidth = profiles.map { "#\($0.id)".count }.max() ?? 0
        let nameWidth = min(profiles.map(\.name.count).max() ?? 0, 32)
        return profiles.map { profile in
            let hobbies = profile.hobbies.joined(separator: ", ")
            return [
                pad("#\(profile.id)", idWidth), pad(profile.name, nameWidth), pad("\(profile.age)", 3, left: true),
                pad(profile.gender.rawValue, 6), hobbies,
            ].joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
    }

    static func detail(_ profile: Profile) -> [String] {
        [
            "#\(profile.id) \(profile.name)",
            "  gender   \(profile.gender)",
            "  age      \(profile.age)",
            "  image    \(profile.imageURL ?? "none")",
            "  hobbies  \(profile.hobbies.isEmpty ? "none" : profile.hobbies.joined(separator: ", "))",
            "  key      \(profile.identifier ?? "")",
        ]
    }

    /// `#9 Ada Lovelace, 36, female — poetry, horses`
    static func summary(_ profile: Profile) -> String {
        "#\(profile.id) \(profile.name), \(profile.age), \(profile.gender)"
            + (profile.hobbies.isEmpty ? "" : " — \(profile.hobbies.joined(separator: ", "))")
    }

    static func line(_ change: ProfileChange) -> String {
        switch change {
        case .added(let profile):
            return "added   \(summary(profile))"
        case .removed(let profile):
            return "removed #\(profile.id) \(profile.name)"
        case .changed(let old, let new):
            return "changed #\(new.id) \(new.name): \(differences(old, new).joined(separator: "; "))"
        case .invalid(let failure):
            return "invalid \(failure.path): \(failure.reason)"
        }
    }

    /// What differs, field by field: `age 36 → 37`, `hobbies poetry → poetry, horses`.
    static func differences(_ old: Profile, _ new: Profile) -> [String] {
        func list(_ hobbies: [String]) -> String { hobbies.isEmpty ? "none" : hobbies.joined(separator: ", ") }
        var parts: [String] = []
        if old.id != new.id { parts.append("id \(old.id) → \(new.id)") }
        if old.name != new.name { parts.append("name \(old.name) → \(new.name)") }
        if old.age != new.age { parts.append("age \(old.age) → \(new.age)") }
        if old.gender != new.gender { parts.append("gender \(old.gender) → \(new.gender)") }
        if old.imageURL != new.imageURL { parts.append("image \(old.imageURL ?? "none") → \(new.imageURL ?? "none")") }
        if old.hobbies != new.hobbies { parts.append("hobbies \(list(old.hobbies)) → \(list(new.hobbies))") }
        return parts
    }

    static func warn(about invalid: [SnapshotDecodingError]) {
        for failure in invalid {
            Terminal.error("warning: skipped \(failure.path), which is not a valid profile (\(failure.reason))")
        }
    }

    private static func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return left ? padding + text : text + padding
    }
}
