import Foundation
import ModelFormats

/// The registered source formats: one entry per frontend, chosen by what the sniffer finds in a file.
public enum Frontends {
  /// The frontends this library brings. A new source format is one more entry here, or a `register` call.
  public static let builtIn: [any ModelFrontend] = [
    KerasFrontend(), CoreMLFrontend(), ONNXFrontend(), TFLiteFrontend(),
  ]

  private static let lock = NSLock()
  nonisolated(unsafe) private static var added: [any ModelFrontend] = []

  /// Every frontend, in the order they are asked: the built-in ones, then those registered.
  public static var registered: [any ModelFrontend] { builtIn + lock.withLock { added } }

  /// Adds a frontend (a format another package reads); it is asked after those before it. Registering
  /// a frontend of the same name again replaces it.
  public static func register(_ frontend: any ModelFrontend) {
    lock.withLock {
      added.removeAll { $0.name == frontend.name }
      added.append(frontend)
    }
  }

  /// The frontend that reads the file or package at `url`.
  public static func frontend(for url: URL) throws -> any ModelFrontend {
    let kind: ModelFileKind
    let header: [UInt8]
    do { (kind, header) = try FormatSniffer.sniff(url.path) } catch let failure as FormatSniffer.Failure {
      switch failure {
      case .notFound(let path): throw SourceFormatError.notFound(path: path)
      case .notRegularFile(let path, let kind): throw SourceFormatError.notRegularFile(path: path, kind: kind)
      }
    }
    if let frontend = registered.first(where: { $0.recognizes(kind: kind, header: header) }) { return frontend }
    throw SourceFormatError.unsupported(path: url.path, what: kind.description, advice: advice(for: kind))
  }

  /// The formats the registered frontends read, for messages: "Keras (.h5, .keras) and Core ML (.mlmodel, .mlpackage) models".
  public static var supportedFormats: String {
    let names = registered.map(\.formatDescription)
    let list = names.count > 1 ? names.dropLast().joined(separator: ", ") + " and " + names.last! : names.joined()
    return list + " models"
  }

  /// Every registered source file extension as a placeholder for help: "model.h5|model.keras|...".
  public static func sourcePlaceholder(_ stem: String) -> String {
    registered.flatMap(\.fileExtensions).map { "\(stem).\($0)" }.joined(separator: "|")
  }

  /// The registered formats' names: "Keras, Core ML or ONNX".
  public static var formatNames: String {
    let names = registered.map(\.displayName)
    return names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names.last! : names.joined()
  }

  static func advice(for kind: ModelFileKind) -> String {
    switch kind {
    case .tensorFlowSavedModel:
      return
        "load it in Keras 3 and save it as a Keras model (model.save(\"model.keras\")), or export the Keras model it came from"
    case .tensorFlowLite: return "TensorFlow Lite models cannot be converted back; convert the model it was made from"
    case .tensorFlowProtobuf:
      return "convert the Keras model instead: load it in Keras and save it with model.save(\"model.keras\")"
    case .json:
      return
        "if it is the architecture from model.to_json(), give it as the architecture with the weights .h5 as the model"
    case .empty: return "save the model again"
    case .folder: return "give a model file, or an .mlpackage folder holding a Manifest.json"
    default: return "modelconv reads \(supportedFormats)"
    }
  }
}

/// Why no frontend can read a path.
public enum SourceFormatError: Error, Equatable, Sendable, CustomStringConvertible {
  /// Nothing is there, or it cannot be read.
  case notFound(path: String)
  /// A FIFO, device or socket.
  case notRegularFile(path: String, kind: String)
  /// A file of a kind no frontend reads (`what`), with what to do instead.
  case unsupported(path: String, what: String, advice: String)

  public var description: String {
    switch self {
    case .notFound(let path): return "\(path): no such file, or it cannot be read"
    case .notRegularFile(let path, let kind): return "\(path): \(kind), not a model file"
    case .unsupported(let path, let what, let advice): return "\(path): \(what), not a model modelconv reads; \(advice)"
    }
  }
}

extension SourceFormatError: LocalizedError {
  public var errorDescription: String? { description }
}

extension SourceFormatError: RemediableError {
  /// A JSON file given as the model may be the architecture of a weights-only file.
  public var remedy: ErrorRemedy? {
    if case .unsupported(_, _, let advice) = self, advice.contains("model.to_json()") { return .giveArchitecture }
    return nil
  }
}

extension SourceFormatError: KindedError {
  public var kind: ErrorKind {
    switch self {
    case .notFound, .notRegularFile: return .missingInput
    case .unsupported: return .badModel
    }
  }
}
