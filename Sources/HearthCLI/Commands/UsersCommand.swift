import ArgumentParser
import Foundation
import HearthAccess
import HearthCore
import HearthIdentity
import HearthServer
import HearthSQLite
import HearthStorage

/// `hearth users list|get|create|update|delete|import|export|outbox`: the users of the Authentication API,
/// in the data directory.
struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract: "List, show, create, change and delete the users of the Authentication API (with the server stopped).",
        discussion: """
            Works on <data>/users.sqlite. While the server runs, use the admin API instead (firebase-admin, \
            or POST /identitytoolkit.googleapis.com/v1/projects/<project>/accounts with the admin secret).
            """,
        subcommands: [List.self, Get.self, Create.self, Update.self, Delete.self, Import.self, Export.self, Outbox.self]
    )

    /// Options every `users` subcommand takes.
    struct UserStoreOptions: ParsableArguments {
        @OptionGroup var dataOptions: DataOptions

        @Option(help: ArgumentHelp("The project (default: $HEARTH_PROJECT, else 'hearth').", valueName: "id"))
        var project: String?

        var projectID: String {
            project ?? ProcessInfo.processInfo.environment["HEARTH_PROJECT"].flatMap { $0.isEmpty ? nil : $0 } ?? "hearth"
        }

        /// Opens the user store, holding the data directory's lock for as long as the storage lives.
        func open() throws -> (storage: SQLiteStorage, administration: UserAdministration) {
            let storage = try dataOptions.openStorage(
                whileServing: "Use the admin API of the running server, e.g. firebase-admin's auth module"
            )
            do {
                let store = try SQLiteUserStore(directory: storage.directory)
                return (storage, UserAdministration(store: store, project: projectID))
            } catch {
                throw CLIError("cannot open the user store in \(storage.directory.path): \(error)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the users of a project, ordered by uid.")

        @OptionGroup var options: UserStoreOptions

        @Flag(help: "One JSON object per line, as accounts:lookup returns users.")
        var json = false

        func run() async throws {
            let (storage, administration) = try options.open()
            var count = 0
            if !json { print(["UID", "EMAIL", "NAME", "CREATED", "LAST SIGN-IN", "STATE"].joined(separator: "\t")) }
            for try await user in administration.list() {
                count += 1
                if json {
                    print(administration.userInfo(user).jsonText)
                    continue
                }
                let state = [user.disabled ? "disabled" : nil, user.passwordHash == nil && user.email == nil && !user.customAuth ? "anonymous" : nil]
                    .compactMap { $0 }.joined(separator: ",")
                print([user.localId, user.email ?? "-", user.displayName ?? "-", Self.date(user.createdAt), user.lastLoginAt.map(Self.date) ?? "-", state.isEmpty ? "-" : state]
                    .joined(separator: "\t"))
            }
            if !json { FileHandle.standardError.write(Data("\(count) user(s) in project \(options.projectID)\n".utf8)) }
            withExtendedLifetime(storage) {}
        }

        static func date(_ millis: Int64) -> String {
            let formatter = ISO8601DateFormatter()
            return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a user.",
            discussion: "The password is read from standard input (one line) with --password-stdin, so it never appears in the process list."
        )

        @OptionGroup var options: UserStoreOptions

        @Option(help: "The uid (default: a random one).")
        var uid: String?

        @Option(help: "The email address.")
        var email: String?

        @Flag(help: "Read the password from the first line of standard input.")
        var passwordStdin = false

        @Option(help: "The display name.")
        var displayName: String?

        @Flag(help: "Mark the email as verified.")
        var emailVerified = false

        @Flag(help: "Create the user disabled.")
        var disabled = false

        @Option(help: "Custom claims as a JSON object (auth.token.<name> in rules).")
        var claims: String?

        func run() async throws {
            var user = UserAdministration.NewUser(uid: uid, email: email, displayName: displayName)
            if passwordStdin {
                guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw CLIError("--password-stdin: no password on standard input") }
                user.password = line
            }
            user.emailVerified = emailVerified
            user.disabled = disabled
            user.claims = claims
            let (storage, administration) = try options.open()
            do {
                let created = try await administration.create(user)
                print(created.localId)
            } catch let failure as UserAdministration.Failure {
                throw CLIError(failure.description)
            }
            withExtendedLifetime(storage) {}
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one user, by uid or email.")

        @OptionGroup var options: UserStoreOptions

        @Argument(help: "The uid, or the email (anything with an @).")
        var user: String

        @Flag(help: "The user as accounts:lookup returns it (password hash redacted).")
        var json = false

        func run() async throws {
            let (storage, administration) = try options.open()
            let found: UserRecord
            do {
                found = try await administration.user(user)
            } catch let failure as UserAdministration.Failure {
                throw CLIError("\(user): \(failure.description)")
            }
            print(json ? administration.userInfo(found).jsonText : Self.describe(found))
            withExtendedLifetime(storage) {}
        }

        /// One `name: value` line per field that is set; never the password hash.
        static func describe(_ user: UserRecord) -> String {
            let providers = [user.passwordHash != nil && user.email != nil ? "password" : nil, user.phoneNumber != nil ? "phone" : nil]
                .compactMap { $0 }
            let lines: [(String, String?)] = [
                ("uid", user.localId),
                ("email", user.email.map { $0 + (user.emailVerified ? " (verified)" : " (not verified)") }),
                ("display name", user.displayName),
                ("photo URL", user.photoUrl),
                ("phone", user.phoneNumber),
                ("providers", providers.isEmpty ? (user.customAuth ? "custom token" : "anonymous") : providers.joined(separator: ", ")),
                ("password", user.passwordHash == nil ? nil : "set" + (user.passwordUpdatedAt.map { " on " + List.date($0) } ?? "")),
                ("disabled", user.disabled ? "yes" : "no"),
                ("custom claims", user.customAttributes),
                ("created", List.date(user.createdAt)),
                ("last sign-in", user.lastLoginAt.map(List.date)),
                ("tokens valid since", user.validSince.map { List.date($0 * 1000) }),
            ]
            return lines.compactMap { name, value in value.map { "\(name): \($0)" } }.joined(separator: "\n")
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a user, by uid or email.",
            discussion: """
                Only the fields given change. An empty --display-name or --photo-url removes it; --claims '{}' removes \
                the custom claims. A new password or email ends the user's sessions (their refresh tokens stop working), \
                as in Firebase. The password is read from standard input with --password-stdin.
                """
        )

        @OptionGroup var options: UserStoreOptions

        @Argument(help: "The uid, or the email (anything with an @).")
        var user: String

        @Option(help: "A new email address (marked not verified unless --email-verified).")
        var email: String?

        @Flag(help: "Read the new password from the first line of standard input.")
        var passwordStdin = false

        @Option(help: "A new display name ('' removes it).")
        var displayName: String?

        @Option(help: "A new photo URL ('' removes it).")
        var photoUrl: String?

        @Flag(inversion: .prefixedNo, help: "Mark the email as verified, or not.")
        var emailVerified: Bool?

        @Flag(help: "Disable the user: sign-ins and token refreshes are refused, live connections lose their auth.")
        var disable = false

        @Flag(help: "Enable a disabled user.")
        var enable = false

        @Option(help: "Custom claims as a JSON object, replacing the current ones ('{}' removes them).")
        var claims: String?

        func validate() throws {
            if disable && enable { throw ValidationError("--disable and --enable contradict each other") }
        }

        func run() async throws {
            var changes = UserAdministration.Changes()
            changes.email = email
            changes.displayName = displayName
            changes.photoUrl = photoUrl
            changes.emailVerified = emailVerified
            changes.disabled = disable ? true : (enable ? false : nil)
            changes.claims = claims
            if passwordStdin {
                guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw CLIError("--password-stdin: no password on standard input") }
                changes.password = line
            }
            guard !changes.isEmpty else {
                throw CLIError("nothing to change: give --email, --password-stdin, --display-name, --photo-url, --[no-]email-verified, --disable, --enable or --claims")
            }
            let (storage, administration) = try options.open()
            do {
                let updated = try await administration.update(user, changes)
                print(Get.describe(updated))
            } catch let failure as UserAdministration.Failure {
                throw CLIError("\(user): \(failure.description)")
            }
            withExtendedLifetime(storage) {}
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete users by uid or email.")

        @OptionGroup var options: UserStoreOptions

        @Argument(help: "The uids or emails of the users to delete.")
        var users: [String]

        func run() async throws {
            let (storage, administration) = try options.open()
            for user in users {
                do {
                    try await administration.delete(user)
                    print("deleted \(user)")
                } catch let failure as UserAdministration.Failure {
                    throw CLIError("\(user): \(failure.description)")
                }
            }
            withExtendedLifetime(storage) {}
        }
    }

    struct Outbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the account emails sent (password reset, email verification, email change), newest first.",
            discussion: """
                Every email is kept here, delivered or not (delivery needs `hearth serve --smtp-url`): follow a link yourself, or give it to the user. \
                Links hold single-use codes that last an hour (and are forgotten when the server restarts). Works while the server runs.
                """
        )

        @OptionGroup var options: UserStoreOptions

        @Option(help: "How many emails to show.")
        var limit = 20

        @Flag(help: "One JSON object per line.")
        var json = false

        func run() async throws {
            let file = options.dataOptions.directory.appendingPathComponent("users.sqlite")
            guard FileManager.default.fileExists(atPath: file.path) else {
                throw CLIError("no users in \(options.dataOptions.directory.path) yet (no \(file.lastPathComponent)); start the server there first")
            }
            // Reading beside a running server is safe (SQLite WAL), so no data directory lock here.
            let store = try SQLiteUserStore(directory: options.dataOptions.directory)
            let messages = try await store.outbox(project: options.projectID, limit: limit)
            if messages.isEmpty {
                FileHandle.standardError.write(Data("no emails sent in project \(options.projectID)\n".utf8))
                return
            }
            for message in messages {
                if json {
                    let line = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
                    print(line)
                    continue
                }
                print("─── \(List.date(message.sentAt))  to \(message.to)  (\(message.requestType))")
                print("Subject: \(message.subject)")
                print("Link: \(message.link)\n")
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import users from a JSON file in Firebase's auth:export shape (with the server stopped).",
            discussion: """
                From Firebase: `firebase auth:export users.json --format=json`, then pass the project's password hash \
                parameters (Firebase console → Authentication → Users → ⋮ → Password hash parameters):
                  hearth users import users.json --hash-algo SCRYPT --hash-key <base64> --salt-separator <base64> --rounds 8 --mem-cost 14
                Such passwords verify at the next sign-in and are then re-hashed with Hearth's scrypt.
                From Hearth (`hearth users export`): hearth users import users.json --hash-algo HEARTH
                """
        )

        @OptionGroup var options: UserStoreOptions

        @Argument(help: "The JSON file: {\"users\": [...]}.")
        var file: String

        @Option(help: "How the passwords were hashed: SCRYPT (Firebase's), HEARTH (hearth users export), or none.")
        var hashAlgo: String?

        @Option(help: "SCRYPT: the base64 signer key.") var hashKey: String?
        @Option(help: "SCRYPT: the base64 salt separator.") var saltSeparator: String?
        @Option(help: "SCRYPT: rounds.") var rounds: Int?
        @Option(help: "SCRYPT: memory cost.") var memCost: Int?

        func run() async throws {
            let hashes: UserAdministration.ImportedHashes
            switch hashAlgo?.uppercased() {
            case nil: hashes = .none
            case "HEARTH": hashes = .hearth
            case "SCRYPT":
                guard let hashKey, let rounds, let memCost else {
                    throw CLIError("--hash-algo SCRYPT needs --hash-key, --rounds and --mem-cost (and usually --salt-separator)")
                }
                hashes = .firebaseScrypt(signerKey: hashKey, saltSeparator: saltSeparator ?? "", rounds: rounds, memoryCost: memCost)
            case let other?: throw CLIError("--hash-algo \(other) is not supported: use SCRYPT (Firebase's) or HEARTH")
            }
            let json: JSONValue
            do {
                json = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
            } catch {
                throw CLIError("cannot read \(file) as JSON: \(error)")
            }
            guard let users = json["users"]?.arrayValue else { throw CLIError("\(file) has no \"users\" array (Firebase's auth:export shape)") }
            let (storage, administration) = try options.open()
            let refused: [String]
            do {
                refused = try await administration.importUsers(users, hashes: hashes) { done, total in
                    FileHandle.standardError.write(Data("\rimported \(done)/\(total)".utf8))
                }
            } catch let failure as UserAdministration.Failure {
                throw CLIError(failure.description)
            }
            FileHandle.standardError.write(Data("\n".utf8))
            for line in refused { FileHandle.standardError.write(Data("refused \(line)\n".utf8)) }
            print("\(users.count - refused.count) user(s) imported into project \(options.projectID), \(refused.count) refused")
            withExtendedLifetime(storage) {}
            if !refused.isEmpty { throw ExitCode.failure }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export every user to a JSON file in Firebase's auth:export shape (with the server stopped).",
            discussion: "Password hashes are in Hearth's form: import them back with `hearth users import FILE --hash-algo HEARTH`."
        )

        @OptionGroup var options: UserStoreOptions

        @Argument(help: "The file to write.")
        var file: String

        func run() async throws {
            let (storage, administration) = try options.open()
            var users: [JSONValue] = []
            for try await user in administration.list() {
                users.append(administration.exported(user))
                if users.count % 1000 == 0 { FileHandle.standardError.write(Data("\rexported \(users.count)".utf8)) }
            }
            var writer = JSONWriter(pretty: true)
            writer.write(.object([("users", .array(users))]))
            do {
                try Data(writer.bytes).write(to: URL(fileURLWithPath: file), options: .atomic)
            } catch {
                throw CLIError("cannot write \(file): \(error.localizedDescription)")
            }
            // The file holds password hashes: readable by its owner only.
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
            print("\(users.count) user(s) of project \(options.projectID) written to \(file) (import with --hash-algo HEARTH)")
            withExtendedLifetime(storage) {}
        }
    }
}
