import Foundation
import PackagePlugin

/// Compiles the files of a target's `Web` folder into the target as Swift source (`EmbeddedWebAssets`),
/// so the `hearth` binary serves them wherever it is copied to, with no resource bundle beside it.
@main
struct EmbedWebAssets: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let web = target.directoryURL.appending(path: "Web")
        let files = try FileManager.default.contentsOfDirectory(at: web, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedWebAssets.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.map(\.lastPathComponent).joined(separator: ", ")) into \(target.name)",
                executable: try context.tool(named: "EmbedWebAssetsTool").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
