/// The reference apps served at `/apps/<name>/`. Each keeps its data in the database namespace of
/// its name, whose rules come from the app's `database.rules.json` the first time the server runs
/// (while the namespace still has the default rules), so an app works right after `hearth serve`
/// with nothing to set up — and rules changed later by the admin are never overwritten (the server
/// installs them: `ReferenceApps+Install.swift` in HearthServer).
///
/// For example:
/// ```swift
/// let apps = ReferenceApps.names  // ["posts", "profiles", "timeline"]
/// ```
package enum ReferenceApps {
    /// Names of the apps with a folder under `Web/apps/`.
    package static var names: [String] {
        Set(EmbeddedWebAssets.files.keys.compactMap { key -> String? in
            let parts = key.split(separator: "/")
            return parts.count >= 3 && parts[0] == "apps" ? String(parts[1]) : nil
        }).sorted()
    }

    /// Whether `path` is one of the apps' pages or files (not a REST path such as `/apps/x.json`).
    static func isAppPage(_ path: String) -> Bool {
        (path == "/apps" || path.hasPrefix("/apps/")) && !path.hasSuffix(".json")
    }
}
