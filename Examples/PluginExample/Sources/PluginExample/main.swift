import Foundation
import ModelConverter

// The model the build converted from modelconv.json, bundled as this target's resource.
guard let url = Bundle.module.url(forResource: "Digits", withExtension: "mlmodel") else {
  FileHandle.standardError.write(Data("PluginExample: Digits.mlmodel is not in the bundle\n".utf8))
  exit(1)
}
let inspection = try ModelInspector.inspect(contentsOf: url)
print(
  "model: \(url.lastPathComponent), \(inspection.kind.rawValue), specification \(inspection.specificationVersion ?? 0)")
for input in inspection.inputs { print("input: \(input.name)") }
print("labels: \(inspection.labels.joined(separator: ", "))")
