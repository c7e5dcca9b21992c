import Foundation
import ModelIR

/// A Keras model read from a legacy `.h5` file (or a weights `.h5` plus its architecture JSON).
public struct KerasModelFile {
  /// The path of the file the weights came from.
  public let path: String
  /// The Keras version that wrote the file (`keras_version`), or nil when unknown.
  public let kerasVersion: String?
  /// The backend recorded in the file, if any.
  public let backend: String?
  /// The parsed architecture.
  public let config: KerasModelConfig
  let file: HDF5File
  let weights: KerasWeightStore

  /// Opens a full-model `.h5` file (`model.save("x.h5")`).
  public init(path: String) throws {
    let file = try Self.open(path)
    let root = file.root
    guard let configText = try Self.string(root, "model_config") else {
      let weightsOnly = root.hasAttribute("layer_names") || root.group("model_weights") != nil
      throw KerasReaderError.noModelConfig(path: path, weightsOnly: weightsOnly)
    }
    try self.init(file: file, configText: configText, configPath: path,
                  weightsRoot: root.group("model_weights") ?? root)
  }

  /// Opens a weights-only `.h5` file (`model.save_weights`) with the architecture from `model.to_json()`.
  public init(weightsPath: String, architectureJSONPath: String) throws {
    guard let configText = try? String(contentsOfFile: architectureJSONPath, encoding: .utf8) else {
      throw KerasReaderError.fileNotFound(path: architectureJSONPath)
    }
    let file = try Self.open(weightsPath)
    try self.init(file: file, configText: configText, configPath: architectureJSONPath,
                  weightsRoot: file.root.group("model_weights") ?? file.root)
  }

  private init(file: HDF5File, configText: String, configPath: String, weightsRoot: HDF5Group) throws {
    self.file = file
    self.path = file.path
    let json: JSONValue
    do { json = try JSONValue.parse(configText) } catch {
      throw KerasReaderError.invalidConfig(path: configPath, detail: "the architecture is not valid JSON")
    }
    self.config = try KerasModelConfig(json: json, path: configPath)
    self.kerasVersion = try Self.string(file.root, "keras_version") ?? Self.string(weightsRoot, "keras_version")
    self.backend = try Self.string(file.root, "backend") ?? Self.string(weightsRoot, "backend")
    self.weights = try KerasWeightStore(root: weightsRoot, path: file.path)
  }

  /// Whether the file was written by Keras 3, whose activations differ in a few constants.
  public var isKeras3: Bool { kerasVersion?.hasPrefix("3") ?? false }

  private static func open(_ path: String) throws -> HDF5File {
    guard FileManager.default.isReadableFile(atPath: path) else { throw KerasReaderError.fileNotFound(path: path) }
    do { return try HDF5File(path: path) } catch HDF5Error.notHDF5 {
      throw KerasReaderError.notHDF5(path: path)
    } catch { throw KerasReaderError.hdf5(String(describing: error)) }
  }

  private static func string(_ group: HDF5Group, _ name: String) throws -> String? {
    do { return try group.stringAttribute(name) } catch { throw KerasReaderError.hdf5(String(describing: error)) }
  }
}
