import Foundation
import ModelFormats
import ModelIR

/// A Keras model read from a legacy `.h5` file, a Keras 3 `.keras` archive, or a weights `.h5` plus
/// its architecture JSON.
///
/// Opening reads everything at once (`KerasModelSnapshot`), by default in this process. When
/// `KerasModelFile.isolation` is set (the `modelconv` tool sets it), the file is read in a child process
/// with CPU, memory and time limits, so a corrupt file that crashes or hangs libhdf5 becomes a
/// `KerasReaderError.readerFailed` instead.
public struct KerasModelFile: Sendable {
  /// The path of the file the weights came from.
  public let path: String
  /// The Keras version that wrote the file (`keras_version`), or nil when unknown.
  public let kerasVersion: String?
  /// The backend recorded in the file, if any.
  public let backend: String?
  /// The parsed architecture.
  public let config: KerasModelConfig
  let weights: KerasWeightStore

  private static let isolationLock = NSLock()
  nonisolated(unsafe) private static var isolationValue: KerasReaderIsolation?

  /// How every `KerasModelFile` opened from a path in this process reads it: nil (the default) in
  /// this process, or in a child process with limits.
  public static var isolation: KerasReaderIsolation? {
    get { isolationLock.withLock { isolationValue } }
    set { isolationLock.withLock { isolationValue = newValue } }
  }

  /// Opens a full-model file: `.h5` (`model.save("x.h5")`) or `.keras` (Keras 3's default format).
  public init(path: String) throws {
    if let isolation = Self.isolation {
      try self.init(snapshot: try isolation.read(.model(path: path)))
    } else {
      try self.init(snapshot: try KerasModelSnapshot.read(path: path))
    }
  }

  /// Opens a weights-only `.h5` file (`model.save_weights`) with the architecture from `model.to_json()`.
  public init(weightsPath: String, architectureJSONPath: String) throws {
    if let isolation = Self.isolation {
      try self.init(snapshot: try isolation.read(.weights(path: weightsPath, architecture: architectureJSONPath)))
    } else {
      try self.init(
        snapshot: try KerasModelSnapshot.read(weightsPath: weightsPath, architectureJSONPath: architectureJSONPath))
    }
  }

  /// A model from an already read snapshot; parses and checks the architecture.
  public init(snapshot: KerasModelSnapshot) throws {
    let snapshot = try snapshot.loadingLocatedWeights()
    path = snapshot.path
    let json: JSONValue
    do { json = try JSONValue.parse(snapshot.configText) } catch {
      throw KerasReaderError.invalidConfig(path: snapshot.configPath, detail: "the architecture is not valid JSON")
    }
    config = try KerasModelConfig(json: json, path: snapshot.configPath)
    kerasVersion = snapshot.kerasVersion
    backend = snapshot.backend
    weights = KerasWeightStore(path: snapshot.path, weightNames: snapshot.weightNames, datasets: snapshot.weights)
  }

  /// Whether the file was written by Keras 3, whose activations differ in a few constants.
  public var isKeras3: Bool { kerasVersion?.hasPrefix("3") ?? false }
}
