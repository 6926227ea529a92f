import ArgumentParser
import Foundation
import HearthAccess
import HearthCore
import HearthServer

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint a signed ID token for development and tests.",
        discussion: """
            Signs with the server's key in --data (created on first use, like 'hearth serve' does). Send the \
            token as 'Authorization: Bearer <token>' or '?auth=<token>'; rules see auth.uid and auth.token.
            Example: hearth token --uid ada --claims '{"admin": true}'
            """
    )

    @Option(help: "The user id (auth.uid).")
    var uid: String

    @Option(help: "Extra claims as a JSON object (auth.token.<name>).")
    var claims: String?

    @Option(help: "Lifetime in seconds.")
    var expiresIn: Double = 3600

    @OptionGroup var dataOptions: DataOptions

    func validate() throws {
        guard !uid.isEmpty else { throw ValidationError("--uid must not be empty") }
        guard expiresIn > 0 else { throw ValidationError("--expires-in must be positive") }
    }

    func run() async throws {
        var extra: [(key: String, value: JSONValue)] = []
        if let claims {
            guard case .object(let members)? = try? JSONValue(parsing: claims) else {
                throw CLIError("--claims must be a JSON object, such as '{\"admin\": true}'")
            }
            extra = members
        }
        try FileManager.default.createDirectory(at: dataOptions.directory, withIntermediateDirectories: true)
        let signer = try TokenSigner.load(from: dataOptions.directory)
        print(try signer.mint(uid: uid, claims: extra, expiresIn: expiresIn, now: Date()))
    }
}
