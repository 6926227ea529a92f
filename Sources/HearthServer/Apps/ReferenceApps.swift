import HearthRules
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
}
