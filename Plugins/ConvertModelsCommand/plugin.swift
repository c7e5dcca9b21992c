import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory convert-models [--target T] [modelconv build options]`:
/// runs `modelconv build` on each target's `modelconv.json`, writing the models where the manifest says
/// (relative to it), as a pipeline or a developer would before committing them.
@main
struct ConvertModelsCommand: CommandPlugin {
  func performCommand(context: PluginContext, arguments: [String]) async throws {
    var extractor = ArgumentExtractor(arguments)
    let names = extractor.extractOption(named: "target")
    let targets = names.isEmpty ? context.package.targets : try context.package.targets(named: names)
    let tool = try context.tool(named: "modelconv")
    var ran = false
    for case let target as SourceModuleTarget in targets {
      let manifest = target.directoryURL.appending(path: "modelconv.json")
      guard FileManager.default.fileExists(atPath: manifest.path) else { continue }
      ran = true
      let process = Process()
      process.executableURL = tool.url
      process.arguments = ["build", "--manifest", manifest.path] + extractor.remainingArguments
      try process.run()
      process.waitUntilExit()
      guard process.terminationReason == .exit, process.terminationStatus == 0 else {
        Diagnostics.error("modelconv build failed for target \(target.name) (exit \(process.terminationStatus))")
        return
      }
    }
    if !ran { Diagnostics.warning("no target has a modelconv.json") }
  }
}
