import HearthRules
import HearthStorage
import Logging

/// The reference apps served at `/apps/<name>/`. Each keeps its data in the database namespace of
/// its name, whose rules come from the app's `database.rules.json` the first time the server runs
/// (while the namespace still has the default rules), so an app works right after `hearth serve`
/// with nothing to set up — and rules changed later by the admin are never overwritten.
///
/// For example:
/// ```swift
/// try await ReferenceApps.installRules(in: registry, logger: logger)
/// ```
enum ReferenceApps {
    /// Names of the apps with a folder under `Web/apps/`.
    static var names: [String] {
        Set(EmbeddedWebAssets.files.keys.compactMap { key -> String? in
            let parts = key.split(separator: "/")
            return parts.count >= 3 && parts[0] == "apps" ? String(parts[1]) : nil
        }).sorted()
    }

    /// Whether `path` is one of the apps' pages or files (not a REST path such as `/apps/x.json`).
    static func isAppPage(_ path: String) -> Bool {
        (path == "/apps" || path.hasPrefix("/apps/")) && !path.hasSuffix(".json")
    }

    static func installRules(in registry: DatabaseRegistry, emulatorMode: Bool, logger: Logger) async throws {
        for name in names {
            guard let bytes = EmbeddedWebAssets.files["apps/\(name)/database.rules.json"] else { continue }
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
            guard let bytes = EmbeddedWebAssets.files["apps/\(name)/storage.rules"] else { continue }
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
