import Foundation
import PackagePlugin

/// Compiles the files of a target's `Web` folder into the target as Swift source (`EmbeddedWebAssets`),
/// so the `hearth` binary serves them wherever it is copied to, with no resource bundle beside it.
@main
struct EmbedWebAssets: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let web = target.directoryURL.appending(path: "Web")
        // Every file under Web/, at any depth (apps have folders); hidden files are left out.
        let relativePaths = (FileManager.default.enumerator(atPath: web.path)?.compactMap { $0 as? String } ?? [])
            .filter { path in
                var isDirectory: ObjCBool = false
                let exists = FileManager.default.fileExists(atPath: web.appending(path: path).path, isDirectory: &isDirectory)
                return exists && !isDirectory.boolValue && !path.split(separator: "/").contains { $0.hasPrefix(".") }
            }
            .sorted()
        let files = relativePaths.map { web.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedWebAssets.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) web files into \(target.name)",
                executable: try context.tool(named: "EmbedWebAssetsTool").url,
                arguments: [output.path, web.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
