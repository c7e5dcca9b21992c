import Foundation

/// What a model's TFLite Model Metadata (tflite-support's `metadata_schema.fbs`, identifier `M001`, in the
/// buffer of the `TFLITE_METADATA` entry) says that a conversion can use: the model's name, description,
/// author, license and version; per input of subgraph 0 whether it is an image (and its colour space) and its
/// normalization (`(value - mean) / std` per channel); per output its labels (`TENSOR_AXIS_LABELS` files, read
/// from the zip archive appended to the `.tflite` file, entries stored uncompressed).
public struct TFLiteMetadata: Sendable, Equatable {
  public struct Input: Sendable, Equatable {
    public var name: String?
    /// `RGB`, `GRAYSCALE`, or nil when the input is not declared an image.
    public var imageColorSpace: String?
    public var mean: [Float]?
    public var std: [Float]?
  }
  public struct Output: Sendable, Equatable {
    public var name: String?
    /// The class labels of the output's class axis, when a labels file is attached and found.
    public var labels: [String]?
    /// The name of a labels file the metadata names but the archive does not hold.
    public var missingLabelsFile: String?
  }

  public var name: String?
  public var description: String?
  public var version: String?
  public var author: String?
  public var license: String?
  public var inputs: [Input]
  public var outputs: [Output]

  /// The model's metadata, or nil when it has none.
  public static func read(_ model: TFLiteModel) throws -> TFLiteMetadata? {
    guard let buffer = model.metadataBuffer else { return nil }
    do {
      return try decode(buffer, model: model)
    } catch let failure as FlatBuffer.Failure {
      throw TFLiteFormatError.invalid(
        path: model.path, field: "TFLITE_METADATA \(failure.field)", detail: failure.detail)
    }
  }

  static func decode(_ buffer: FlatBuffer, model: TFLiteModel) throws -> TFLiteMetadata {
    let root = try buffer.root()
    var metadata = TFLiteMetadata(
      name: try root.string(0, "ModelMetadata.name"), description: try root.string(1, "ModelMetadata.description"),
      version: try root.string(2, "ModelMetadata.version"), author: try root.string(4, "ModelMetadata.author"),
      license: try root.string(5, "ModelMetadata.license"), inputs: [], outputs: [])
    guard let subgraph = try root.tables(3, "ModelMetadata.subgraph_metadata").first else { return metadata }
    let archive = TFLiteZipArchive(bytes: model.file.bytes)
    metadata.inputs = try subgraph.tables(2, "SubGraphMetadata.input_tensor_metadata").map { tensor in
      var input = Input(name: try tensor.string(0, "TensorMetadata.name"))
      // Content: ContentProperties union at slots 0 (type) and 1; ImageProperties = 2, its color_space slot 0.
      if let content = try tensor.table(3, "TensorMetadata.content"),
        try content.u8(0, "Content.content_properties_type") == 2,
        let image = try content.table(1, "Content.content_properties")
      {
        switch try image.i8(0, "ImageProperties.color_space") {
        case 1: input.imageColorSpace = "RGB"
        case 2: input.imageColorSpace = "GRAYSCALE"
        default: input.imageColorSpace = "RGB"
        }
      }
      // ProcessUnit: ProcessUnitOptions union at slots 0 and 1; NormalizationOptions = 1 (mean, std).
      for unit in try tensor.tables(4, "TensorMetadata.process_units")
      where try unit.u8(0, "ProcessUnit.options_type") == 1 {
        guard let options = try unit.table(1, "ProcessUnit.options") else { continue }
        input.mean = try options.floats(0, "NormalizationOptions.mean")
        input.std = try options.floats(1, "NormalizationOptions.std")
      }
      return input
    }
    metadata.outputs = try subgraph.tables(3, "SubGraphMetadata.output_tensor_metadata").map { tensor in
      var output = Output(name: try tensor.string(0, "TensorMetadata.name"))
      // AssociatedFile: name slot 0, type slot 2 (TENSOR_AXIS_LABELS = 2); the first is the default locale.
      for file in try tensor.tables(6, "TensorMetadata.associated_files")
      where try file.i8(2, "AssociatedFile.type") == 2 {
        guard let name = try file.string(0, "AssociatedFile.name") else { continue }
        if let bytes = archive?.entry(named: name) {
          output.labels = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map {
            String($0).trimmingCharacters(in: .whitespaces)
          }.filter { !$0.isEmpty }
        } else {
          output.missingLabelsFile = name
        }
        break
      }
      return output
    }
    return metadata
  }
}

/// The stored (uncompressed) entries of the zip archive a `.tflite` file may end with, read from its central
/// directory with every offset and length checked against the file; nil when the file ends with none.
struct TFLiteZipArchive {
  let bytes: [UInt8]
  /// Name to the range of its data.
  var entries: [String: Range<Int>] = [:]

  init?(bytes: [UInt8]) {
    self.bytes = bytes
    func u16(_ at: Int) -> Int? { at >= 0 && at + 2 <= bytes.count ? Int(bytes[at]) | Int(bytes[at + 1]) << 8 : nil }
    func u32(_ at: Int) -> Int? {
      guard at >= 0, at + 4 <= bytes.count else { return nil }
      return (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) }
    }
    // The end-of-central-directory record: within the last 22 + 65535 bytes.
    let lowest = max(0, bytes.count - 22 - 65_535)
    guard bytes.count >= 22,
      let end = stride(from: bytes.count - 22, through: lowest, by: -1).first(where: { u32($0) == 0x0605_4b50 }),
      let count = u16(end + 10), let size = u32(end + 12), let offset = u32(end + 16)
    else { return nil }
    // Bytes before the archive (the model) shift every offset, unless the writer counted them (Python's).
    let shift = end - size - offset
    guard shift >= 0 else { return nil }
    var at = offset + shift
    for _ in 0..<count {
      guard u32(at) == 0x0201_4b50, let method = u16(at + 10), let stored = u32(at + 20), let nameLength = u16(at + 28),
        let extraLength = u16(at + 30), let commentLength = u16(at + 32), let local = u32(at + 42),
        at + 46 + nameLength <= bytes.count
      else { return nil }
      let name = String(decoding: bytes[(at + 46)..<(at + 46 + nameLength)], as: UTF8.self)
      let header = local + shift
      if method == 0, u32(header) == 0x0403_4b50, let localName = u16(header + 26), let localExtra = u16(header + 28) {
        let start = header + 30 + localName + localExtra
        if start >= 0, start <= bytes.count, stored <= bytes.count - start { entries[name] = start..<(start + stored) }
      }
      at += 46 + nameLength + extraLength + commentLength
    }
  }

  func entry(named name: String) -> ArraySlice<UInt8>? { entries[name].map { bytes[$0] } }
}
