import HearthEngine
import HearthFiles
import HearthRules
import HearthStorage
import HearthWeb
import Logging

/// Installing the reference apps' rules: the database rules of each app's namespace and the storage
/// rules of the app that stores files, each only over the defaults.
extension ReferenceApps {
    static func installRules(in registry: DatabaseRegistry, emulatorMode: Bool, logger: Logger) async throws {
        for name in names {
            guard let bytes = WebAssets.embeddedFile("apps/\(name)/database.rules.json") else { continue }
            let rules = try RulesDocument(source: String(decoding: bytes, as: UTF8.self))
            let database = try await registry.database(name)
            // Only over the defaults: the admin's own rules for the namespace win.
            guard database.rules.source == RulesDocument.defaults(open: emulatorMode).source else { continue }
            try await database.replaceRules(rules)
            logger.info("Installed the rules of a reference app", metadata: ["hearth.namespace": "\(name)"])
        }
    }

    /// The storage rules of the app that has them (`apps/<name>/storage.rules`), set when the server
    /// has never had storage rules, so the app's uploads work at once. Not in emulator mode, where
    /// storage starts open and rules for one app would close the rest.
    static func installStorageRules(in files: FileService, emulatorMode: Bool, logger: Logger) async throws {
        guard !emulatorMode, try await files.catalog.rules() == nil else { return }
        for name in names {
            guard let bytes = WebAssets.embeddedFile("apps/\(name)/storage.rules") else { continue }
            do {
                _ = try await files.setRules(String(decoding: bytes, as: UTF8.self))
            } catch {
                logger.error("The storage rules of a reference app do not parse", metadata: ["hearth.app": "\(name)", "hearth.error": "\(error)"])
                continue
            }
            logger.info("Installed the storage rules of a reference app", metadata: ["hearth.app": "\(name)"])
            return  // One ruleset serves every bucket: the first app's (only Timeline stores files).
        }
    }
}
