import Foundation

/// `modelconv.json`: the models `modelconv build` converts, each with the options `modelconv convert`
/// takes, under the same names without the dashes (`"image-input": "image"`, `"labels-file": "labels.txt"`,
/// `"verify": true`). The keys are `convert`'s own option list (`ConvertCommand.specs`), so the manifest
/// and the command line never disagree; `Schemas/modelconv-manifest.schema.json` is generated from it
/// (`modelconv build --print-schema`).
///
///     {
///       "models": [
///         { "name": "digits", "source": "Digits/digits_cnn.h5", "output": "Digits.mlmodel",
///           "image-input": "input1", "image-scale": "1/255", "labels-file": "Digits/labels.txt", "verify": true }
///       ]
///     }
///
/// Relative paths (source, output, reference and the path-valued options) are relative to the manifest's
/// folder; outputs to `--output-dir` when one is given. JSON was chosen over YAML because Foundation reads
/// it with no dependency, JSON Schema validates it in editors, and SwiftPM plugins can read it too.
struct BuildManifest {
  struct Entry {
    var name: String
    var source: URL
    var output: URL
    /// `convert`'s arguments after the source and `-o`.
    var arguments: [String]
    /// Run `modelconv verify ... --reference` with this file after converting.
    var reference: URL?
    /// `verify`'s arguments for the reference check (tolerances, samples, seed, image normalization).
    var verifyArguments: [String]
    /// Every file the result depends on (source, labels file, architecture, reference).
    var inputs: [URL]
  }

  var url: URL
  var entries: [Entry]

  /// Keys of an entry that are not `convert` options.
  static let ownKeys: [(key: String, help: String)] = [
    (
      "name",
      "A name for reports and --only (default: the source's file name without its extension); unique in the manifest."
    ),
    ("source", "The model to convert (.h5, .keras, .mlmodel, .mlpackage, .onnx); required."),
    (
      "output",
      "The .mlmodel or .mlpackage to write (default: the source's name with .mlmodel, or .mlpackage for format mlprogram)."
    ),
    (
      "reference",
      "After converting, verify against inputs and outputs saved from the source framework in this HDF5 file (as `modelconv verify --reference`)."
    ),
  ]

  /// `convert` options that the manifest does not take: `output` is its own key, and build prints its own reports.
  static let excludedOptions: Set<String> = Set([Options.output, Options.json, Options.help].map(\.key))
  /// Options whose value is a path, resolved against the manifest's folder.
  static let pathOptions: Set<String> = Set([Options.labelsFile, Options.architecture].map(\.key))
  /// `verify` options passed on to the reference check as well (`verify` declares each of them).
  static let verifyOptions: Set<String> = Set(
    ([Options.samples, Options.seed, Options.atol, Options.rtol] + Options.normalization + Options.shapes).map(\.key))

  /// The `convert` options a manifest entry may set, by key (the long name without dashes).
  static var options: [(key: String, spec: OptionSpec)] {
    ConvertCommand.specs.compactMap { spec in
      guard spec.key.hasPrefix("--"), !excludedOptions.contains(spec.key) else { return nil }
      return (String(spec.key.dropFirst(2)), spec)
    }
  }

  struct Problem: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  /// Reads and checks a manifest; every problem names the entry and the key.
  static func load(_ url: URL, outputDirectory: URL?) throws -> BuildManifest {
    guard let data = FileManager.default.contents(atPath: url.path) else {
      throw Problem(message: "\(url.path): cannot read the manifest")
    }
    guard data.count <= 16 << 20 else { throw Problem(message: "\(url.path): the manifest is larger than 16 MiB") }
    let root: Any
    do { root = try JSONSerialization.jsonObject(with: data) } catch {
      throw Problem(message: "\(url.path): not valid JSON (\(error.localizedDescription))")
    }
    guard let object = root as? [String: Any] else {
      throw Problem(message: "\(url.path): the manifest must be a JSON object with a \"models\" list")
    }
    for key in object.keys.sorted() where key != "models" && key != "$schema" {
      throw Problem(message: "\(url.path): unknown key '\(key)' (a manifest has \"models\" and optionally \"$schema\")")
    }
    guard let models = object["models"] as? [Any] else {
      throw Problem(message: "\(url.path): \"models\" must be a list of entries")
    }
    let folder = url.deletingLastPathComponent()
    let outputs = outputDirectory ?? folder
    var entries: [Entry] = []
    var names = Set<String>()
    let known = Dictionary(uniqueKeysWithValues: options.map { ($0.key, $0.spec) })
    for (index, item) in models.enumerated() {
      var label = "models[\(index)]"
      func problem(_ text: String) -> Problem { Problem(message: "\(url.path): \(label): \(text)") }
      guard let entry = item as? [String: Any] else { throw problem("an entry must be a JSON object") }
      guard let sourcePath = entry["source"] as? String, !sourcePath.isEmpty else {
        throw problem("\"source\" (the model file) is required and must be a string")
      }
      let source = resolve(sourcePath, against: folder)
      let defaultName = source.deletingPathExtension().lastPathComponent
      if let value = entry["name"], !(value is String) || (value as? String)?.isEmpty == true {
        throw problem("\"name\" must be a non-empty string")
      }
      let name = entry["name"] as? String ?? defaultName
      label += " (\"\(name)\")"
      guard names.insert(name).inserted else {
        throw problem("the name '\(name)' is used by another entry; give each a \"name\"")
      }
      var arguments: [String] = []
      var verifyArguments: [String] = []
      var inputs = [source]
      var output: URL?
      var reference: URL?
      for key in entry.keys.sorted() {
        let value = entry[key]!
        switch key {
        case "name", "source": continue
        case "output":
          guard let path = value as? String, !path.isEmpty else { throw problem("\"output\" must be a path") }
          output = resolve(path, against: outputs)
          continue
        case "reference":
          guard let path = value as? String, !path.isEmpty else { throw problem("\"reference\" must be a path") }
          reference = resolve(path, against: folder)
          inputs.append(reference!)
          continue
        default: break
        }
        guard let spec = known[key] else {
          let hint =
            OptionSpec.suggestion(for: "--" + key, in: options.map(\.spec)).map {
              "; did you mean '\($0.dropFirst(2))'?"
            } ?? ""
          throw problem("unknown key '\(key)'\(hint) (keys are convert's options without the dashes)")
        }
        let flag = spec.key
        guard spec.takesValue else {
          guard isBoolean(value), let on = value as? Bool else { throw problem("'\(key)' is a flag: true or false") }
          if on { arguments.append(flag) }
          continue
        }
        let items: [Any] = (value as? [Any]) ?? [value]
        guard !items.isEmpty else { throw problem("'\(key)' is an empty list") }
        for item in items {
          var text: String
          if let string = item as? String {
            text = string
          } else if let number = item as? NSNumber, !isBoolean(item) {
            text = number.stringValue
          } else {
            throw problem("'\(key)' needs a string or a number (\(spec.value ?? "value")), or a list of them")
          }
          if pathOptions.contains(flag) {
            let path = resolve(text, against: folder)
            inputs.append(path)
            text = path.path
          }
          arguments += [flag, text]
          if verifyOptions.contains(flag) { verifyArguments += [flag, text] }
        }
      }
      let format = arguments.firstIndex(of: Options.format.key).map { arguments[$0 + 1] }
      let finalOutput =
        output ?? outputs.appendingPathComponent(defaultName + (format == "mlprogram" ? ".mlpackage" : ".mlmodel"))
      entries.append(
        Entry(
          name: name, source: source, output: finalOutput, arguments: arguments, reference: reference,
          verifyArguments: verifyArguments, inputs: inputs))
    }
    guard !entries.isEmpty else { throw Problem(message: "\(url.path): \"models\" is empty") }
    return BuildManifest(url: url, entries: entries)
  }

  /// JSON's true and false (Foundation gives them as NSNumber's boolean subclass; `as? Bool` also takes 0 and 1).
  static func isBoolean(_ value: Any) -> Bool { String(describing: type(of: value)) == "__NSCFBoolean" }

  static func resolve(_ path: String, against folder: URL) -> URL {
    path.hasPrefix("/")
      ? URL(fileURLWithPath: path).standardizedFileURL : folder.appendingPathComponent(path).standardizedFileURL
  }

  /// The JSON Schema of a manifest, from the same lists `load` checks against.
  static var schema: String {
    var properties: [String] = []
    func quoted(_ text: String) -> String {
      let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
      return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
    for (key, help) in ownKeys {
      properties.append(
        "        \(quoted(key)): { \"type\": \"string\", \"minLength\": 1, \"description\": \(quoted(help)) }")
    }
    for (key, spec) in options {
      let type =
        spec.takesValue
        ? "\"anyOf\": [{ \"type\": [\"string\", \"number\"] }, { \"type\": \"array\", \"minItems\": 1, \"items\": { \"type\": [\"string\", \"number\"] } }]"
        : "\"type\": \"boolean\""
      properties.append("        \(quoted(key)): { \(type), \"description\": \(quoted(spec.help)) }")
    }
    return """
      {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "modelconv-manifest.schema.json",
        "title": "modelconv build manifest (modelconv.json)",
        "description": "Generated by `modelconv build --print-schema` from convert's options; do not edit by hand.",
        "type": "object",
        "required": ["models"],
        "additionalProperties": false,
        "properties": {
          "$schema": { "type": "string" },
          "models": {
            "type": "array",
            "minItems": 1,
            "items": {
              "type": "object",
              "required": ["source"],
              "additionalProperties": false,
              "properties": {
      \(properties.map { "  " + $0 }.joined(separator: ",\n"))
              }
            }
          }
        }
      }

      """
  }
}
