import Foundation

/// Reads a `.tflite` file (TensorFlow Lite's FlatBuffers schema, `schema.fbs`; the slots below are its
/// fields in declaration order) into a `TFLiteModel`. Every index is checked against what it indexes, every
/// shape against `TFLiteLimits`, every buffer against the file; nothing is allocated that the file does not
/// hold.
public enum TFLiteReader {
  /// The largest file read (the FlatBuffer itself addresses at most 2 GiB; larger models keep their
  /// weights past it, which this reader also bounds by the file's size).
  public static let maximumFileBytes = 4 << 30
  /// The most elements of one tensor (as the IR's limit).
  public static let maximumElements = 1 << 31

  public static func read(contentsOf url: URL) throws -> TFLiteModel {
    let path = url.path
    let attributes = try? FileManager.default.attributesOfItem(atPath: path)
    guard let type = attributes?[.type] as? FileAttributeType else { throw TFLiteFormatError.unreadable(path: path) }
    guard type == .typeRegular else { throw TFLiteFormatError.notRegularFile(path: path) }
    let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
    guard size <= maximumFileBytes else {
      throw TFLiteFormatError.invalid(path: path, field: "file", detail: "\(size) bytes, more than this reader takes")
    }
    guard let data = FileManager.default.contents(atPath: path) else { throw TFLiteFormatError.unreadable(path: path) }
    return try read(bytes: [UInt8](data), path: path)
  }

  /// Whether `bytes` start like a TFLite file (the `TFL3` identifier after the root offset).
  public static func isTFLite(_ prefix: [UInt8]) -> Bool {
    prefix.count >= 8 && Array(prefix[4..<8]) == Array("TFL3".utf8)
  }

  public static func read(bytes: [UInt8], path: String) throws -> TFLiteModel {
    guard isTFLite(bytes) else {
      throw TFLiteFormatError.invalid(
        path: path, field: "file identifier", detail: "not a TensorFlow Lite FlatBuffer (bytes 4-7 are not 'TFL3')")
    }
    let file = FlatBuffer(bytes: bytes, path: path)
    do {
      return try decode(file)
    } catch let failure as FlatBuffer.Failure {
      throw TFLiteFormatError.invalid(path: path, field: failure.field, detail: failure.detail)
    }
  }

  static func decode(_ file: FlatBuffer) throws -> TFLiteModel {
    let path = file.path
    func invalid(_ field: String, _ detail: String) -> TFLiteFormatError {
      .invalid(path: path, field: field, detail: detail)
    }
    let root = try file.root()
    let version = Int(try root.u32(0, "Model.version"))
    let codes = try root.tables(1, "Model.operator_codes").enumerated().map { index, table in
      let byte = Int(try table.i8(0, "OperatorCode[\(index)].deprecated_builtin_code"))
      let code = Int(try table.i32(3, "OperatorCode[\(index)].builtin_code"))
      return TFLiteOperatorCode(
        builtin: max(byte, code), customCode: try table.string(1, "OperatorCode[\(index)].custom_code"),
        version: Int(try table.i32(2, "OperatorCode[\(index)].version", default: 1)))
    }
    let buffers = try root.tables(4, "Model.buffers").enumerated().map { index, table -> TFLiteBuffer in
      let field = "Model.buffers[\(index)]"
      let offset = try table.u64(1, field + ".offset")
      let size = try table.u64(2, field + ".size")
      if offset > 1 {
        // Past the FlatBuffer, at an absolute place of the file.
        guard offset <= UInt64(file.bytes.count), size <= UInt64(file.bytes.count) - offset else {
          throw invalid(field, "\(size) bytes at offset \(offset) run past the \(file.bytes.count)-byte file")
        }
        return TFLiteBuffer(range: Int(offset)..<Int(offset + size))
      }
      return TFLiteBuffer(range: try table.byteRange(0, field + ".data") ?? 0..<0)
    }
    let subgraphs = try root.tables(2, "Model.subgraphs")
    guard let first = subgraphs.first else { throw invalid("Model.subgraphs", "the model has no subgraph") }
    let subgraph = try decodeSubgraph(first, codes: codes.count, buffers: buffers.count, file: file)
    // The others (a CALL_ONCE's initializer, control flow bodies), each read as untrusted as the first.
    let others = try subgraphs.dropFirst().map {
      try decodeSubgraph($0, codes: codes.count, buffers: buffers.count, file: file)
    }
    let signatures = try root.tables(7, "Model.signature_defs").enumerated().map { index, table in
      let field = "Model.signature_defs[\(index)]"
      func maps(_ slot: Int, _ name: String) throws -> [(name: String, tensor: Int)] {
        try table.tables(slot, field + name).enumerated().map { i, map in
          let tensor = Int(try map.u32(1, "\(field)\(name)[\(i)].tensor_index"))
          return (try map.string(0, "\(field)\(name)[\(i)].name") ?? "", tensor)
        }
      }
      return TFLiteSignature(
        key: try table.string(2, field + ".signature_key") ?? "",
        subgraph: Int(try table.u32(4, field + ".subgraph_index")),
        inputs: try maps(0, ".inputs"), outputs: try maps(1, ".outputs"))
    }
    for signature in signatures where signature.subgraph == 0 {
      for (name, tensor) in signature.inputs + signature.outputs where tensor >= subgraph.tensors.count {
        throw invalid(
          "SignatureDef '\(signature.key)'", "'\(name)' names tensor \(tensor) of \(subgraph.tensors.count)")
      }
    }
    let metadata = try root.tables(6, "Model.metadata").enumerated().map { index, table in
      let buffer = Int(try table.u32(1, "Model.metadata[\(index)].buffer"))
      guard buffer < buffers.count else {
        throw invalid("Model.metadata[\(index)].buffer", "buffer \(buffer) of \(buffers.count)")
      }
      return (name: try table.string(0, "Model.metadata[\(index)].name") ?? "", buffer: buffer)
    }
    return TFLiteModel(
      path: path, version: version, description: try root.string(3, "Model.description"), operatorCodes: codes,
      subgraph: subgraph, otherSubgraphs: others, buffers: buffers, signatures: signatures,
      metadata: metadata, file: file)
  }

  static func decodeSubgraph(_ table: FlatTable, codes: Int, buffers: Int, file: FlatBuffer) throws -> TFLiteSubgraph {
    let path = file.path
    func invalid(_ field: String, _ detail: String) -> TFLiteFormatError {
      .invalid(path: path, field: field, detail: detail)
    }
    let tensors = try table.tables(0, "SubGraph.tensors").enumerated().map { index, tensor -> TFLiteTensor in
      let field = "tensors[\(index)]"
      let name = try tensor.string(3, field + ".name") ?? "tensor\(index)"
      let shape = try (tensor.int32s(0, field + ".shape") ?? []).map(Int.init)
      guard shape.allSatisfy({ $0 >= 0 }) else {
        throw invalid("tensor '\(name)' shape", "\(shape) has a negative size")
      }
      var count = 1
      for size in shape {
        let (product, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow, product <= maximumElements else {
          throw invalid("tensor '\(name)' shape", "\(shape) holds more than \(maximumElements) elements")
        }
        count = product
      }
      let code = Int(try tensor.i8(1, field + ".type"))
      guard let type = TFLiteTensorType(rawValue: code) else {
        throw invalid("tensor '\(name)' type", "TensorType \(code) is not one schema.fbs defines")
      }
      let buffer = Int(try tensor.u32(2, field + ".buffer"))
      guard buffer < max(buffers, 1) else { throw invalid("tensor '\(name)' buffer", "buffer \(buffer) of \(buffers)") }
      var quantization: TFLiteQuantization?
      if let q = try tensor.table(4, field + ".quantization"), let scales = try q.floats(2, field + ".scale"),
        !scales.isEmpty
      {
        let zeros = try q.int64s(3, field + ".zero_point") ?? []
        let axis = Int(try q.i32(6, field + ".quantized_dimension"))
        guard zeros.isEmpty || zeros.count == scales.count,
          scales.count == 1 || (axis >= 0 && axis < shape.count && shape[axis] == scales.count)
        else {
          throw invalid(
            "tensor '\(name)' quantization",
            "\(scales.count) scales and \(zeros.count) zero points along axis \(axis) of \(shape)")
        }
        guard scales.allSatisfy({ $0.isFinite }) else {
          throw invalid("tensor '\(name)' quantization", "a scale that is not a finite number")
        }
        quantization = TFLiteQuantization(
          scales: scales, zeroPoints: zeros.isEmpty ? [Int64](repeating: 0, count: scales.count) : zeros, axis: axis)
      }
      return TFLiteTensor(
        name: name, shape: shape,
        shapeSignature: try tensor.int32s(7, field + ".shape_signature").map { $0.map(Int.init) }, type: type,
        buffer: buffer, quantization: quantization, isVariable: try tensor.bool(5, field + ".is_variable"),
        sparsity: try tensor.table(6, field + ".sparsity"))
    }
    func indices(_ values: [Int32]?, _ field: String, optional: Bool) throws -> [Int] {
      try (values ?? []).map { value in
        let index = Int(value)
        guard (optional && index == -1) || (index >= 0 && index < tensors.count) else {
          throw invalid(field, "tensor index \(index) of \(tensors.count)")
        }
        return index
      }
    }
    let operators = try table.tables(3, "SubGraph.operators").enumerated().map { index, op -> TFLiteOperator in
      let field = "operators[\(index)]"
      let code = Int(try op.u32(0, field + ".opcode_index"))
      guard code < codes else { throw invalid(field + ".opcode_index", "operator code \(code) of \(codes)") }
      let optionsType = Int(try op.u8(3, field + ".builtin_options_type"))
      return TFLiteOperator(
        opcodeIndex: code, inputs: try indices(op.int32s(1, field + ".inputs"), field + ".inputs", optional: true),
        outputs: try indices(op.int32s(2, field + ".outputs"), field + ".outputs", optional: false),
        optionsType: optionsType, options: optionsType == 0 ? nil : try op.table(4, field + ".builtin_options"),
        hasOptions2: try op.u8(11, field + ".builtin_options_2_type") != 0,
        customOptions: try op.byteRange(5, field + ".custom_options"))
    }
    return TFLiteSubgraph(
      name: try table.string(4, "SubGraph.name"),
      tensors: tensors, inputs: try indices(table.int32s(1, "SubGraph.inputs"), "SubGraph.inputs", optional: false),
      outputs: try indices(table.int32s(2, "SubGraph.outputs"), "SubGraph.outputs", optional: false),
      operators: operators)
  }
}

extension TFLiteModel {
  /// The bytes of a tensor's buffer (empty for a tensor computed at run time).
  public func bytes(of tensor: TFLiteTensor) -> ArraySlice<UInt8> {
    guard tensor.buffer > 0, tensor.buffer < buffers.count else { return [] }
    return file.bytes[buffers[tensor.buffer].range]
  }

  /// Whether the tensor holds constant data.
  public func isConstant(_ tensor: TFLiteTensor) -> Bool { !bytes(of: tensor).isEmpty }

  /// A constant tensor's values as floats: float32 and float16 as stored, integers dequantized with the
  /// tensor's scales and zero points when it has them (per channel along its axis), else as numbers.
  public func floatValues(of tensor: TFLiteTensor) throws -> [Float] {
    let bytes = Array(bytes(of: tensor))
    func invalid(_ detail: String) -> TFLiteFormatError {
      .invalid(path: path, field: "tensor '\(tensor.name)' buffer", detail: detail)
    }
    guard let width = tensor.type.byteSize else { throw invalid("a \(tensor.type.name) constant is not numeric") }
    // A sparse tensor stores only its kept values (laid out densely below).
    let count = tensor.isSparse ? bytes.count / width : tensor.shape.reduce(1, *)
    guard bytes.count == count * width else {
      throw invalid("\(bytes.count) bytes for \(count) \(tensor.type.name) values of shape \(tensor.shape)")
    }
    func word(_ i: Int, _ n: Int) -> UInt64 {
      (0..<n).reduce(UInt64(0)) { $0 | UInt64(bytes[i * n + $1]) << (8 * $1) }
    }
    var raw: [Float]
    switch tensor.type {
    case .float32: raw = (0..<count).map { Float(bitPattern: UInt32(word($0, 4))) }
    case .float16: raw = (0..<count).map { Float(Float16(bitPattern: UInt16(word($0, 2)))) }
    case .float64: raw = (0..<count).map { Float(Double(bitPattern: word($0, 8))) }
    case .int8: raw = bytes.map { Float(Int8(bitPattern: $0)) }
    case .uint8: raw = bytes.map { Float($0) }
    case .int16: raw = (0..<count).map { Float(Int16(bitPattern: UInt16(word($0, 2)))) }
    case .int32: raw = (0..<count).map { Float(Int32(bitPattern: UInt32(word($0, 4)))) }
    case .int64: raw = (0..<count).map { Float(Int64(bitPattern: word($0, 8))) }
    case .bool: raw = bytes.map { $0 == 0 ? 0 : 1 }
    default: throw invalid("\(tensor.type.name) constants are not read")
    }
    if tensor.isSparse { raw = try denseValues(of: tensor, stored: raw) }
    guard let q = tensor.quantization, tensor.type != .float32, tensor.type != .float16 else { return raw }
    // real = scale * (q - zero point), per channel along the quantized axis.
    let inner = tensor.shape.dropFirst(q.axis + 1).reduce(1, *)
    for i in raw.indices {
      let channel = q.scales.count == 1 ? 0 : (i / inner) % q.scales.count
      raw[i] = q.scales[channel] * (raw[i] - Float(q.zeroPoints[channel]))
    }
    return raw
  }

  /// A constant integer tensor's values (shapes, axes, paddings).
  public func intValues(of tensor: TFLiteTensor) throws -> [Int] {
    let bytes = Array(bytes(of: tensor))
    let count = tensor.shape.reduce(1, *)
    switch tensor.type {
    case .int32 where bytes.count == 4 * count:
      return (0..<count).map { i in
        Int(Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[4 * i + $1]) << (8 * $1) }))
      }
    case .int64 where bytes.count == 8 * count:
      return (0..<count).map { i in
        Int(Int64(bitPattern: (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[8 * i + $1]) << (8 * $1) }))
      }
    default:
      throw TFLiteFormatError.invalid(
        path: path, field: "tensor '\(tensor.name)'",
        detail: "expected \(count) int32 or int64 values, found \(bytes.count) bytes of \(tensor.type.name)")
    }
  }

  /// The file's TFLite Model Metadata (the `TFLITE_METADATA` entry's buffer, a FlatBuffer of identifier
  /// `M001`), when it carries one.
  public var metadataBuffer: FlatBuffer? {
    guard let entry = metadata.first(where: { $0.name == "TFLITE_METADATA" }) else { return nil }
    let bytes = Array(file.bytes[buffers[entry.buffer].range])
    guard bytes.count >= 8, Array(bytes[4..<8]) == Array("M001".utf8) else { return nil }
    return FlatBuffer(bytes: bytes, path: path + " (TFLITE_METADATA)")
  }
}

extension TFLiteModel {
  /// A sparse constant's values laid out densely (TFLite's `SparsityParameters`: each dimension in traversal
  /// order DENSE, iterated whole, or SPARSE_CSR, whose segments give the stored indices under each position
  /// of the dimensions before it; the stored values in that order). Block sparsity is refused.
  public func denseValues(of tensor: TFLiteTensor, stored: [Float]) throws -> [Float] {
    guard let sparsity = tensor.sparsity else { return stored }
    func invalid(_ detail: String) -> TFLiteFormatError {
      .invalid(path: path, field: "tensor '\(tensor.name)' sparsity", detail: detail)
    }
    do {
      let rank = tensor.shape.count
      let order = try sparsity.int32s(0, "SparsityParameters.traversal_order") ?? []
      guard order.map(Int.init) == Array(0..<rank) else {
        throw invalid("traversal order \(order) (block sparsity and reordered dimensions are not read)")
      }
      if let blocks = try sparsity.int32s(1, "SparsityParameters.block_map"), !blocks.isEmpty {
        throw invalid("block map \(blocks) (block sparsity is not read)")
      }
      let dimensions = try sparsity.tables(2, "SparsityParameters.dim_metadata")
      guard dimensions.count == rank else { throw invalid("\(dimensions.count) dimension entries for rank \(rank)") }
      let total = tensor.shape.reduce(1, *)
      // (position in this level, offset in the dense tensor) for every element reached so far.
      var reached: [(position: Int, offset: Int)] = [(0, 0)]
      for (axis, dimension) in dimensions.enumerated() {
        let size = tensor.shape[axis]
        var next: [(position: Int, offset: Int)] = []
        if try dimension.i8(0, "DimensionMetadata.format") == 0 {
          guard Int(try dimension.i32(1, "DimensionMetadata.dense_size")) == size else {
            throw invalid("dense size of axis \(axis) is not \(size)")
          }
          guard reached.count <= total / max(size, 1) else { throw invalid("more elements than the shape holds") }
          for (position, offset) in reached {
            for i in 0..<size { next.append((position * size + i, offset * size + i)) }
          }
        } else {
          func indexVector(_ slot: Int, _ name: String) throws -> [Int] {
            let type = try dimension.u8(slot, name + "_type")
            guard let table = try dimension.table(slot + 1, name) else { return [] }
            switch type {
            case 1: return (try table.int32s(0, name) ?? []).map(Int.init)
            case 2:
              guard let vector = try table.vector(0, name, elementSize: 2) else { return [] }
              return try (0..<vector.count).map { i in
                Int(try table.buffer.u16(vector.start + 2 * i, name))
              }
            case 3: return (try table.byteRange(0, name)).map { Array(table.buffer.bytes[$0]).map(Int.init) } ?? []
            default: throw invalid("\(name) of index type \(type)")
            }
          }
          let segments = try indexVector(2, "DimensionMetadata.array_segments")
          let indices = try indexVector(4, "DimensionMetadata.array_indices")
          for (position, offset) in reached {
            guard position + 1 < segments.count, segments[position] <= segments[position + 1],
              segments[position + 1] <= indices.count
            else { throw invalid("segments of axis \(axis) do not cover position \(position)") }
            for s in segments[position]..<segments[position + 1] {
              guard indices[s] >= 0, indices[s] < size else { throw invalid("index \(indices[s]) of axis \(axis)") }
              next.append((s, offset * size + indices[s]))
            }
          }
        }
        guard next.count <= total else { throw invalid("more elements than the shape holds") }
        reached = next
      }
      guard reached.count == stored.count else {
        throw invalid("\(reached.count) positions for \(stored.count) stored values")
      }
      var dense = [Float](repeating: 0, count: total)
      for (value, place) in zip(stored, reached) { dense[place.offset] = value }
      return dense
    } catch let failure as FlatBuffer.Failure {
      throw invalid("\(failure.field): \(failure.detail)")
    }
  }
}
