import Foundation
import ModelIR

/// A written Core ML model: the specification and, for an ML Program, its weight file.
public struct EncodedModel: Sendable {
  public var format: ModelFormat
  /// The serialized `Model` protobuf (`model.mlmodel`), packed when asked for: a neural network is
  /// kept as messages whose float32 weights are laid out one layer at a time while packing, and
  /// `write(to:)` streams it to the file without these bytes ever being in memory at once.
  public var specification: [UInt8] {
    get {
      switch source {
      case .bytes(let bytes): return bytes
      case .streamed(let streamed): return streamed.bytes()
      }
    }
    set { source = .bytes(newValue) }
  }
  private var source: Source
  /// The MIL blob file (`weights/weight.bin`) of an ML Program, laid out when asked for (`write(to:)`
  /// streams it to the file instead); nil for a neural network.
  public var weights: [UInt8]? {
    get {
      switch weightSource {
      case .none: return nil
      case .bytes(let bytes): return bytes
      case .blobs(let writer): return writer.bytes
      }
    }
    set { weightSource = newValue.map { .bytes($0) } ?? .none }
  }
  private var weightSource: WeightSource
  /// The specification version written (the oldest release that loads the model).
  public var specificationVersion: Int
  /// The shape each multiarray input and output is declared with, by feature name (as the description says).
  public var arrayShapes: [String: [Int]] = [:]
  /// With weight compression: every float weight constant, compressed or kept (and why), in program order.
  public var compressedTensors: [CompressedTensorReport] = []

  public init(format: ModelFormat, specification: [UInt8], weights: [UInt8]?, specificationVersion: Int) {
    self.format = format
    self.source = .bytes(specification)
    self.weightSource = weights.map { .bytes($0) } ?? .none
    self.specificationVersion = specificationVersion
  }

  package init(format: ModelFormat, streamed: StreamedSpecification, specificationVersion: Int) {
    self.format = format
    self.source = .streamed(streamed)
    self.weightSource = .none
    self.specificationVersion = specificationVersion
  }

  package init(format: ModelFormat, specification: [UInt8], blobs: MILBlobStorage.Writer, specificationVersion: Int) {
    self.format = format
    self.source = .bytes(specification)
    self.weightSource = .blobs(blobs)
    self.specificationVersion = specificationVersion
  }

  private enum Source: Sendable {
    case bytes([UInt8])
    case streamed(StreamedSpecification)

    func write(to output: AtomicFile.Output) throws {
      switch self {
      case .bytes(let bytes): try bytes.withUnsafeBytes(output.write)
      case .streamed(let streamed): try streamed.write(to: output.write)
      }
    }
  }

  private enum WeightSource: Sendable {
    case none
    case bytes([UInt8])
    case blobs(MILBlobStorage.Writer)

    var byteCount: Int {
      switch self {
      case .none: return 0
      case .bytes(let bytes): return bytes.count
      case .blobs(let writer): return writer.byteCount
      }
    }

    /// Writes the weight file's bytes, or nil when there is none.
    var producer: ((AtomicFile.Output) throws -> Void)? {
      switch self {
      case .none: return nil
      case .bytes(let bytes): return { try bytes.withUnsafeBytes($0.write) }
      case .blobs(let writer): return { try writer.write(to: $0.write) }
      }
    }
  }

  /// The size of `specification` in bytes (known without packing it).
  public var specificationByteCount: Int {
    switch source {
    case .bytes(let bytes): return bytes.count
    case .streamed(let streamed): return streamed.byteCount
    }
  }

  /// Bytes on disk.
  public var byteCount: Int { specificationByteCount + weightSource.byteCount }

  /// Writes the model atomically: an `.mlpackage` folder (built beside `url` and renamed into place)
  /// when `url` ends in `.mlpackage`, else a `.mlmodel` file, which only a neural network can be (an ML
  /// Program keeps its weights in the package). A failure leaves no partial output and the previous
  /// model untouched.
  public func write(to url: URL) throws {
    let source = self.source
    if url.pathExtension == "mlpackage" {
      try ModelPackage.write(model: { try source.write(to: $0) }, weights: weightSource.producer, to: url)
    } else if format == .mlProgram {
      throw CoreMLWriterError.invalidOption(
        "an ML Program is saved as an .mlpackage folder (its weights are files in it), not as \(url.lastPathComponent)")
    } else {
      try AtomicFile.write(to: url) { try source.write(to: $0) }
    }
  }
}

/// Writes an IR graph in one Core ML format. The converter, summaries and `verify` go through this
/// interface and never name a format; `CoreMLWriters.writer(for:)` picks the implementation.
public protocol CoreMLModelWriter: Sendable {
  var format: ModelFormat { get }
  /// Builds the model's files, or throws `CoreMLWriterError` when the graph or options cannot be written
  /// in this format for `options.target`.
  func encode(_ graph: Graph, options: CoreMLWriterOptions) throws -> EncodedModel
}
