import Foundation
import PackagePlugin

/// Converts the models a target's `modelconv.json` lists at build time: one build command per entry,
/// `modelconv build --only <name>` into the plugin's work folder, whose outputs SwiftPM bundles as the
/// target's resources (`Bundle.module.url(forResource: "Digits", withExtension: "mlmodel")`). Its inputs
/// are the manifest and the files the entry reads, so an edit to any of them converts that model again,
/// and nothing else; an entry with `"verify": true` whose parity check fails fails the build with
/// verify's first mismatch.
@main
struct ModelConverterPlugin: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
    guard let target = target as? SourceModuleTarget else { return [] }
    let manifest = target.directoryURL.appending(path: "modelconv.json")
    guard FileManager.default.fileExists(atPath: manifest.path) else { return [] }
    let entries = try ManifestEntries.read(manifest)
    let tool = try context.tool(named: "modelconv")
    let output = context.pluginWorkDirectoryURL.appending(path: "Models")
    var names = Set<String>()
    return try entries.map { entry in
      // SwiftPM puts every generated resource at the bundle's top level: outputs must differ by file name.
      guard names.insert(entry.outputName).inserted else {
        throw PluginError(
          "\(manifest.path): two entries write \(entry.outputName); the bundle holds resources by file name")
      }
      return .buildCommand(
        displayName: "Converting \(entry.name) (modelconv.json)",
        executable: tool.url,
        arguments: [
          "build", "--manifest", manifest.path, "--only", entry.name, "--output-dir", output.path, "-j", "1",
        ],
        inputFiles: [manifest] + entry.inputs,
        outputFiles: [output.appending(path: entry.outputName)])
    }
  }
}

struct PluginError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// What the plugin needs from a manifest: each entry's name, output file name and input files (the
/// manifest's own checks are `modelconv build`'s).
struct ManifestEntry {
  var name: String
  var outputName: String
  var inputs: [URL]
}

enum ManifestEntries {
  static func read(_ manifest: URL) throws -> [ManifestEntry] {
    let folder = manifest.deletingLastPathComponent()
    guard let data = FileManager.default.contents(atPath: manifest.path),
      let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
      let models = root["models"] as? [[String: Any]]
    else { throw PluginError("\(manifest.path): not a modelconv manifest (a JSON object with a \"models\" list)") }
    func resolve(_ path: String) -> URL {
      path.hasPrefix("/") ? URL(fileURLWithPath: path) : folder.appending(path: path)
    }
    return try models.enumerated().map { index, entry in
      guard let source = entry["source"] as? String else {
        throw PluginError("\(manifest.path): models[\(index)] has no \"source\"")
      }
      let sourceURL = resolve(source)
      let name = entry["name"] as? String ?? sourceURL.deletingPathExtension().lastPathComponent
      let format = entry["format"] as? String
      let output =
        (entry["output"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent }
        ?? sourceURL.deletingPathExtension().lastPathComponent + (format == "mlprogram" ? ".mlpackage" : ".mlmodel")
      var inputs = files(sourceURL)
      for key in ["labels-file", "architecture", "reference"] {
        if let path = entry[key] as? String { inputs += files(resolve(path)) }
      }
      return ManifestEntry(name: name, outputName: output, inputs: inputs)
    }
  }

  /// A file, or every file of a folder (an `.mlpackage` source).
  static func files(_ url: URL) -> [URL] {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
      return [url]
    }
    return (FileManager.default.subpaths(atPath: url.path) ?? []).sorted().map { url.appending(path: $0) }.filter {
      var inner: ObjCBool = false
      return FileManager.default.fileExists(atPath: $0.path, isDirectory: &inner) && !inner.boolValue
    }
  }
}
