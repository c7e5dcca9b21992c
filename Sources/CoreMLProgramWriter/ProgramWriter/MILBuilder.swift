import CProtobufC
import CoreMLCommon
import CoreMLSpec
import Foundation

typealias MILValueType = CoreML__Specification__MILSpec__ValueType

/// The element types the writer produces.
package enum MILElementType: Equatable, Sendable {
  case fp16, fp32, fp64, int32, int64, bool, string
  /// Compressed weights' codes, zero points and shapes.
  case int8, uint8, uint32
  /// iOS 18's sub-byte palette indices.
  case uint1, uint2, uint3, uint4, uint6
  /// iOS 18's signed 4-bit weight codes.
  case int4

  /// The unsigned integer type of `bits` bits (1, 2, 3, 4, 6 or 8).
  package static func unsigned(bits: Int) -> MILElementType? {
    [1: .uint1, 2: .uint2, 3: .uint3, 4: .uint4, 6: .uint6, 8: .uint8][bits]
  }

  package var proto: CoreML__Specification__MILSpec__DataType {
    switch self {
    case .fp16: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__FLOAT16
    case .fp32: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__FLOAT32
    case .fp64: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__FLOAT64
    case .int32: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__INT32
    case .int64: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__INT64
    case .bool: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__BOOL
    case .string: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__STRING
    case .int8: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__INT8
    case .uint8: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__UINT8
    case .uint32: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__UINT32
    case .uint1: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__UINT1
    case .uint2: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__UINT2
    case .uint3: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__UINT3
    case .uint4: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__UINT4
    case .uint6: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__UINT6
    case .int4: return CORE_ML__SPECIFICATION__MILSPEC__DATA_TYPE__INT4
    }
  }

  /// The `dtype` string of MIL's `cast`.
  package var castName: String {
    switch self {
    case .fp16: return "fp16"
    case .fp32: return "fp32"
    case .fp64: return "fp64"
    case .int32: return "int32"
    case .bool: return "bool"
    case .int64: return "int64"
    case .string: return "string"
    case .int8: return "int8"
    case .uint8: return "uint8"
    case .uint32: return "uint32"
    case .uint1: return "uint1"
    case .uint2: return "uint2"
    case .uint3: return "uint3"
    case .uint4: return "uint4"
    case .uint6: return "uint6"
    case .int4: return "int4"
    }
  }

  package var isFloat: Bool { self == .fp16 || self == .fp32 }
}

/// A value in the program: its SSA name, element type and shape (`[]` for a scalar).
package struct MILTensor: Equatable {
  package var name: String
  package var dataType: MILElementType
  package var shape: [Int]

  package init(name: String, dataType: MILElementType, shape: [Int]) {
    self.name = name
    self.dataType = dataType
    self.shape = shape
  }
}

/// One parameter of an operation. Everything but `.tensor`/`.tensors` becomes a `const` operation of its own.
package enum MILParam {
  /// A value computed earlier.
  case tensor(MILTensor)
  /// A variadic parameter (`values` of `concat`).
  case tensors([MILTensor])
  case int(Int)
  case ints([Int])
  case bool(Bool)
  case string(String)
  /// A float scalar of the given type.
  case scalar(Float, MILElementType)
  /// A float tensor of the given type, row-major.
  case floats([Float], shape: [Int], MILElementType)
  /// A weight in Core ML's layout (rearranged from Keras' only when `weight.bin` is written).
  case weights(CoreMLWeightValues, shape: [Int], MILElementType)
}

/// Builds the operations of one MIL block: owns the protobuf messages (through the arena), the names,
/// the constants (inline or in the blob file) and the output types. Emitters describe operations through
/// it and never fill protobuf messages themselves.
final class MILBuilder {
  let arena: MessageArena
  /// Float constants with at least this many elements are stored in `weight.bin`.
  static let blobThreshold = 10
  static let weightFile = ModelPackage.programWeightFileName

  private(set) var blobs = MILBlobStorage.Writer()
  private(set) var operations: [UnsafeMutablePointer<MILOperationMessage>] = []
  /// Every operation and constant appended, typed (`MILRecord`), in program order.
  private(set) var records: [MILRecord] = []
  /// How weight constants are compressed (nil: stored as float32/float16), and what happened to each.
  var compression: WeightCompression?
  private(set) var compressionReports: [CompressedTensorReport] = []
  private var used: Set<String> = []
  /// The layer the next constants belong to, for error messages.
  var currentLayer = ""

  init(arena: MessageArena) { self.arena = arena }

  // MARK: Names

  /// Marks an exact name as taken (feature names); false when it already is.
  @discardableResult
  func claim(_ name: String) -> Bool { used.insert(name).inserted }

  /// A fresh identifier made from `base`: sanitized, suffixed with a number when taken.
  func uniqueName(_ base: String) -> String {
    let clean = MILIdentifier.sanitize(base)
    if used.insert(clean).inserted { return clean }
    var index = 1
    while !used.insert("\(clean)_\(index)").inserted { index += 1 }
    return "\(clean)_\(index)"
  }

  // MARK: Types and values

  func tensorType(_ dataType: MILElementType, _ shape: [Int]) -> UnsafeMutablePointer<MILValueType> {
    let tensor = arena.message(core_ml__specification__milspec__tensor_type__init)
    tensor.pointee.datatype = dataType.proto
    tensor.pointee.rank = Int64(shape.count)
    let dimensions = shape.map { size -> UnsafeMutablePointer<CoreML__Specification__MILSpec__Dimension> in
      let constant = arena.message(core_ml__specification__milspec__dimension__constant_dimension__init)
      constant.pointee.size = UInt64(size)
      let dimension = arena.message(core_ml__specification__milspec__dimension__init)
      dimension.pointee.dimension_case = CORE_ML__SPECIFICATION__MILSPEC__DIMENSION__DIMENSION_CONSTANT
      dimension.pointee.constant = constant
      return dimension
    }
    tensor.pointee.n_dimensions = dimensions.count
    tensor.pointee.dimensions = arena.pointerArray(dimensions)
    let type = arena.message(core_ml__specification__milspec__value_type__init)
    type.pointee.type_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_TENSOR_TYPE
    type.pointee.tensortype = tensor
    return type
  }

  func namedType(_ name: String, _ type: UnsafeMutablePointer<MILValueType>) -> UnsafeMutablePointer<
    CoreML__Specification__MILSpec__NamedValueType
  > {
    let named = arena.message(core_ml__specification__milspec__named_value_type__init)
    named.pointee.name = arena.string(name)
    named.pointee.type = type
    return named
  }

  private func immediate(
    _ tensorValue: UnsafeMutablePointer<CoreML__Specification__MILSpec__TensorValue>,
    type: UnsafeMutablePointer<MILValueType>
  ) -> UnsafeMutablePointer<MILValueMessage> {
    let immediate = arena.message(core_ml__specification__milspec__value__immediate_value__init)
    immediate.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE__IMMEDIATE_VALUE__VALUE_TENSOR
    immediate.pointee.tensor = tensorValue
    let value = arena.message(core_ml__specification__milspec__value__init)
    value.pointee.type = type
    value.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_IMMEDIATE_VALUE
    value.pointee.immediatevalue = immediate
    return value
  }

  private func tensorValue() -> UnsafeMutablePointer<CoreML__Specification__MILSpec__TensorValue> {
    arena.message(core_ml__specification__milspec__tensor_value__init)
  }

  func stringValue(_ strings: [String], shape: [Int]) -> UnsafeMutablePointer<MILValueMessage> {
    let repeated = arena.message(core_ml__specification__milspec__tensor_value__repeated_strings__init)
    repeated.pointee.n_values = strings.count
    repeated.pointee.values = arena.pointerArray(strings.map(arena.string))
    let tensor = tensorValue()
    tensor.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_STRINGS
    tensor.pointee.strings = repeated
    return immediate(tensor, type: tensorType(.string, shape))
  }

  func int32Value(_ values: [Int32], shape: [Int]) -> UnsafeMutablePointer<MILValueMessage> {
    let repeated = arena.message(core_ml__specification__milspec__tensor_value__repeated_ints__init)
    repeated.pointee.n_values = values.count
    repeated.pointee.values = arena.array(values)
    let tensor = tensorValue()
    tensor.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_INTS
    tensor.pointee.ints = repeated
    return immediate(tensor, type: tensorType(.int32, shape))
  }

  func int64Value(_ values: [Int64], shape: [Int]) -> UnsafeMutablePointer<MILValueMessage> {
    let repeated = arena.message(core_ml__specification__milspec__tensor_value__repeated_long_ints__init)
    repeated.pointee.n_values = values.count
    repeated.pointee.values = arena.array(values)
    let tensor = tensorValue()
    tensor.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_LONG_INTS
    tensor.pointee.longints = repeated
    return immediate(tensor, type: tensorType(.int64, shape))
  }

  func boolValue(_ values: [Bool], shape: [Int]) -> UnsafeMutablePointer<MILValueMessage> {
    let repeated = arena.message(core_ml__specification__milspec__tensor_value__repeated_bools__init)
    repeated.pointee.n_values = values.count
    repeated.pointee.values = arena.array(values.map { $0 ? 1 : 0 })
    let tensor = tensorValue()
    tensor.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_BOOLS
    tensor.pointee.bools = repeated
    return immediate(tensor, type: tensorType(.bool, shape))
  }

  /// A float constant: in `weight.bin` from `blobThreshold` elements on, else inline (float32 as floats,
  /// float16 as raw little-endian bytes). Float16 values beyond ±65504 are refused.
  /// A blob's values are laid out (and converted to float16) only when `weight.bin` is written.
  func floatValue(_ weight: CoreMLWeightValues, shape: [Int], _ dataType: MILElementType) throws
    -> UnsafeMutablePointer<MILValueMessage>
  {
    let type = tensorType(dataType, shape)
    if dataType == .fp16, let value = weight.firstOutsideFloat16 {
      throw CoreMLWriterError.float16Overflow(layer: currentLayer, value: value)
    }
    if weight.count >= Self.blobThreshold {
      return blobFileValue(blobs.append(weight, float16: dataType == .fp16), type: type)
    }
    let values = weight.materialized()
    if dataType == .fp16 {
      // Range checked above.
      return inlineBytes(
        values.flatMap { v in
          let bits = Float16(v).bitPattern
          return [UInt8(bits & 0xFF), UInt8(bits >> 8)]
        }, type: type)
    }
    let repeated = arena.message(core_ml__specification__milspec__tensor_value__repeated_floats__init)
    repeated.pointee.n_values = values.count
    repeated.pointee.values = arena.array(values)
    let tensor = tensorValue()
    tensor.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_FLOATS
    tensor.pointee.floats = repeated
    return immediate(tensor, type: type)
  }

  // MARK: Operations

  private func attribute(_ key: String, _ value: UnsafeMutablePointer<MILValueMessage>) -> UnsafeMutablePointer<
    CoreML__Specification__MILSpec__Operation__AttributesEntry
  > {
    let entry = arena.message(core_ml__specification__milspec__operation__attributes_entry__init)
    entry.pointee.key = arena.string(key)
    entry.pointee.value = value
    return entry
  }

  /// Appends an operation with its inputs already resolved to bindings.
  private func append(
    _ type: String, name: String, inputs: [(String, [CoreML__Specification__MILSpec__Argument__Binding])],
    outputs: [UnsafeMutablePointer<CoreML__Specification__MILSpec__NamedValueType>],
    attributes extra: [(String, UnsafeMutablePointer<MILValueMessage>)] = []
  ) {
    let operation = arena.message(core_ml__specification__milspec__operation__init)
    operation.pointee.type = arena.string(type)
    let entries = inputs.map {
      key, bindings -> UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation__InputsEntry> in
      let argument = arena.message(core_ml__specification__milspec__argument__init)
      let pointers = bindings.map {
        binding -> UnsafeMutablePointer<CoreML__Specification__MILSpec__Argument__Binding> in
        let message = arena.message(core_ml__specification__milspec__argument__binding__init)
        message.pointee.binding_case = binding.binding_case
        if binding.binding_case == CORE_ML__SPECIFICATION__MILSPEC__ARGUMENT__BINDING__BINDING_NAME {
          message.pointee.name = binding.name
        } else {
          message.pointee.value = binding.value
        }
        return message
      }
      argument.pointee.n_arguments = pointers.count
      argument.pointee.arguments = arena.pointerArray(pointers)
      let entry = arena.message(core_ml__specification__milspec__operation__inputs_entry__init)
      entry.pointee.key = arena.string(key)
      entry.pointee.value = argument
      return entry
    }
    operation.pointee.n_inputs = entries.count
    operation.pointee.inputs = arena.pointerArray(entries)
    operation.pointee.n_outputs = outputs.count
    operation.pointee.outputs = arena.pointerArray(outputs)
    let attributes = [attribute("name", stringValue([name], shape: []))] + extra.map { attribute($0.0, $0.1) }
    operation.pointee.n_attributes = attributes.count
    operation.pointee.attributes = arena.pointerArray(attributes)
    operations.append(operation)
  }

  private func nameBinding(_ name: String) -> CoreML__Specification__MILSpec__Argument__Binding {
    var binding = CoreML__Specification__MILSpec__Argument__Binding()
    binding.binding_case = CORE_ML__SPECIFICATION__MILSPEC__ARGUMENT__BINDING__BINDING_NAME
    binding.name = arena.string(name)
    return binding
  }

  /// A `const` operation holding `value`, named uniquely after `name`.
  func const(
    _ value: UnsafeMutablePointer<MILValueMessage>, dataType: MILElementType, shape: [Int], name: String,
    exactName: Bool = false
  ) -> MILTensor {
    let output = exactName ? name : uniqueName(name)
    append(
      "const", name: output, inputs: [], outputs: [namedType(output, tensorType(dataType, shape))],
      attributes: [("val", value)])
    return MILTensor(name: output, dataType: dataType, shape: shape)
  }

  /// A float constant tensor in `dataType`.
  func const(_ values: [Float], shape: [Int], _ dataType: MILElementType, name: String, exactName: Bool = false) throws
    -> MILTensor
  {
    try const(.values(values), shape: shape, dataType, name: name, exactName: exactName)
  }

  /// A weight constant tensor in `dataType`; compressed when `compression` says so and it is large enough.
  func const(
    _ weight: CoreMLWeightValues, shape: [Int], _ dataType: MILElementType, name: String, exactName: Bool = false
  ) throws -> MILTensor {
    if let compression, dataType.isFloat, weight.count >= compression.minimumElements {
      let compressed = try compressedConst(
        weight, shape: shape, dataType, name: name, exactName: exactName, compression)
      records.append(
        MILRecord(type: "const", params: [("val", .weights(weight, shape: shape, dataType))], outputs: [compressed]))
      return compressed
    }
    let result = const(
      try floatValue(weight, shape: shape, dataType), dataType: dataType, shape: shape, name: name, exactName: exactName
    )
    if let compression, dataType.isFloat {
      let bytes = weight.count * (dataType == .fp16 ? 2 : 4)
      compressionReports.append(
        CompressedTensorReport(
          name: result.name, shape: shape, originalBytes: bytes, writtenBytes: bytes, method: nil,
          skipped: "\(weight.count) elements, fewer than \(compression.minimumElements)", relativeError: nil))
    }
    records.append(
      MILRecord(type: "const", params: [("val", .weights(weight, shape: shape, dataType))], outputs: [result]))
    return result
  }

  // MARK: Compressed weights

  /// A value stored in `weight.bin` at the blob record `offset`.
  private func blobFileValue(_ offset: UInt64, type: UnsafeMutablePointer<MILValueType>) -> UnsafeMutablePointer<
    MILValueMessage
  > {
    let blob = arena.message(core_ml__specification__milspec__value__blob_file_value__init)
    blob.pointee.filename = arena.string(Self.weightFile)
    blob.pointee.offset = offset
    let value = arena.message(core_ml__specification__milspec__value__init)
    value.pointee.type = type
    value.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_BLOB_FILE_VALUE
    value.pointee.blobfilevalue = blob
    return value
  }

  /// An inline value of raw little-endian bytes (MIL keeps int8, uint8, uint32 and float16 immediates so).
  private func inlineBytes(_ bytes: [UInt8], type: UnsafeMutablePointer<MILValueType>) -> UnsafeMutablePointer<
    MILValueMessage
  > {
    let repeated = arena.message(core_ml__specification__milspec__tensor_value__repeated_bytes__init)
    repeated.pointee.values = arena.binary(bytes)
    let tensor = tensorValue()
    tensor.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_BYTES
    tensor.pointee.bytes = repeated
    return immediate(tensor, type: type)
  }

  /// int8 or uint8 bytes in `weight.bin` from `blobThreshold` elements on, else inline.
  private func byteValue(_ bytes: [UInt8], _ dataType: MILElementType, shape: [Int]) -> UnsafeMutablePointer<
    MILValueMessage
  > {
    let type = tensorType(dataType, shape)
    if bytes.count >= Self.blobThreshold {
      return blobFileValue(blobs.append(dataType == .int8 ? .int8 : .uint8, bytes: bytes), type: type)
    }
    return inlineBytes(bytes, type: type)
  }

  /// Codes of `bits` bits (one per byte in `codes`) packed into a `weight.bin` blob of `blobType`.
  private func packedCodes(
    _ codes: [UInt8], bits: Int, blobType: MILBlobStorage.BlobDataType, _ dataType: MILElementType, shape: [Int]
  ) -> UnsafeMutablePointer<MILValueMessage> {
    let packed = Palettizer.pack(bits == 8 ? codes : codes.map { $0 & UInt8((1 << bits) - 1) }, bits: bits)
    return blobFileValue(
      blobs.append(blobType, bytes: packed, paddingBits: packed.count * 8 - codes.count * bits),
      type: tensorType(dataType, shape))
  }

  /// uint32 values inline.
  private func uint32Value(_ values: [Int]) -> UnsafeMutablePointer<MILValueMessage> {
    inlineBytes(
      values.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: UInt32(v) >> (8 * $0)) } },
      type: tensorType(.uint32, [values.count]))
  }

  /// The weight as a `constexpr_lut_to_dense` or `constexpr_affine_dequantize` operation (iOS 16 forms,
  /// parameters as attributes, as Core ML reads them). The float values exist once, while the codes are
  /// computed; the report's error is measured against them code by code.
  private func compressedConst(
    _ weight: CoreMLWeightValues, shape: [Int], _ dataType: MILElementType, name: String, exactName: Bool,
    _ compression: WeightCompression
  ) throws -> MILTensor {
    let elementBytes = dataType == .fp16 ? 2 : 4
    let original = weight.count * elementBytes
    let constName = exactName ? name : uniqueName(name)
    if dataType == .fp16, let value = weight.firstOutsideFloat16 {
      throw CoreMLWriterError.float16Overflow(layer: currentLayer, value: value)
    }
    let values = weight.materialized()
    let type = tensorType(dataType, shape)
    /// The weight as a plain constant after all, with why in the report.
    func kept(_ why: String) throws -> MILTensor {
      let plain = const(
        try floatValue(weight, shape: shape, dataType), dataType: dataType, shape: shape, name: constName,
        exactName: true)
      compressionReports.append(
        CompressedTensorReport(
          name: constName, shape: shape, originalBytes: original, writtenBytes: original, method: nil, skipped: why,
          relativeError: nil))
      return plain
    }
    var error = RelativeError()
    func measure(_ decoded: Float, _ value: Float) { error.add(decoded: decoded, original: value) }
    let written: Int
    switch compression.method {
    case .palettize(let bits) where compression.usesIOS18Form:
      // iOS 18: indices of the weight's shape as uintN, a table per group of output channels:
      // lut [groups, 1, ..., 1, 2^bits, 1].
      let channels = shape.first ?? 1
      let group = min(compression.groupSize ?? channels, channels)
      guard channels % group == 0, let indexType = MILElementType.unsigned(bits: bits) else {
        return try kept("\(channels) output channels are not a multiple of the group size \(group)")
      }
      let per = values.count / channels * group
      var codes = [UInt8](repeating: 0, count: values.count)
      var table: [Float] = []
      for g in 0..<(channels / group) {
        let part = Array(values[(g * per)..<((g + 1) * per)])
        let result = Palettizer.palettize(part, bits: bits, seed: compression.seed, float16: dataType == .fp16)
        for (i, code) in result.indices.enumerated() {
          codes[g * per + i] = code
          measure(result.table[Int(code)], part[i])
        }
        table += result.table
      }
      let indicesValue = packedCodes(
        codes, bits: bits, blobType: MILBlobStorage.BlobDataType(unsignedBits: bits), indexType, shape: shape)
      let lutShape = [channels / group] + Array(repeating: 1, count: max(shape.count - 1, 0)) + [1 << bits, 1]
      append(
        "constexpr_lut_to_dense", name: constName, inputs: [], outputs: [namedType(constName, type)],
        attributes: [("indices", indicesValue), ("lut", try floatValue(.values(table), shape: lutShape, dataType))])
      written = (codes.count * bits + 7) / 8 + table.count * elementBytes
    case .palettize(let bits):
      let result = Palettizer.palettize(values, bits: bits, seed: compression.seed, float16: dataType == .fp16)
      let packed = Palettizer.pack(result.indices, bits: bits)
      for (code, value) in zip(result.indices, values) { measure(result.table[Int(code)], value) }
      append(
        "constexpr_lut_to_dense", name: constName, inputs: [], outputs: [namedType(constName, type)],
        attributes: [
          ("indices", byteValue(packed, .uint8, shape: [packed.count])),
          ("lut", try floatValue(.values(result.table), shape: [result.table.count], dataType)),
          ("shape", uint32Value(shape)),
        ])
      written = packed.count + result.table.count * elementBytes
    case .quantize(let bits, let mode) where compression.usesIOS18Form:
      // iOS 18: `scale * (data - offset)` with a scale (and offset) per block: blocks of `blockSize` input
      // channels (axis 1) within each output channel, or the whole channel; scale [C, Cin / B, 1, ...]
      // (a vector: one scale).
      let channels = shape.count > 1 ? shape[0] : 1
      let inputs = shape.count > 1 ? shape[1] : 1
      let block = min(compression.blockSize ?? inputs, inputs)
      guard inputs % block == 0 else {
        return try kept("\(inputs) input channels are not a multiple of the block size \(block)")
      }
      let blocks = channels * inputs / block
      let result = LinearQuantizer.quantize(
        values, channels: blocks, mode: mode, bits: bits, float16: dataType == .fp16)
      for (i, value) in values.enumerated() { measure(result.value(at: i), value) }
      let codeType: MILElementType =
        bits == 4 ? (mode == .symmetric ? .int4 : .uint4) : (mode == .symmetric ? .int8 : .uint8)
      let blobType: MILBlobStorage.BlobDataType =
        bits == 4 ? (mode == .symmetric ? .int4 : .uint4) : (mode == .symmetric ? .int8 : .uint8)
      func codes(_ bytes: [UInt8], shape: [Int]) -> UnsafeMutablePointer<MILValueMessage> {
        packedCodes(bytes, bits: bits, blobType: blobType, codeType, shape: shape)
      }
      let scaleShape =
        [channels] + (shape.count > 1 ? [inputs / block] + Array(repeating: 1, count: shape.count - 2) : [])
      var attributes = [
        ("data", codes(result.data, shape: shape)),
        ("scale", try floatValue(.values(result.scales), shape: scaleShape, dataType)),
      ]
      if mode == .affine { attributes.append(("offset", codes(result.zeroPoints, shape: scaleShape))) }
      append(
        "constexpr_blockwise_shift_scale", name: constName, inputs: [], outputs: [namedType(constName, type)],
        attributes: attributes)
      written = (values.count * bits + 7) / 8 + blocks * elementBytes + (mode == .affine ? (blocks * bits + 7) / 8 : 0)
    case .quantize(_, let mode):
      let channels = shape.first ?? 1
      let result = LinearQuantizer.quantize(values, channels: channels, mode: mode, float16: dataType == .fp16)
      let codeType: MILElementType = mode == .symmetric ? .int8 : .uint8
      for (i, value) in values.enumerated() { measure(result.value(at: i), value) }
      append(
        "constexpr_affine_dequantize", name: constName, inputs: [], outputs: [namedType(constName, type)],
        attributes: [
          ("quantized_data", byteValue(result.data, codeType, shape: shape)),
          ("zero_point", byteValue(result.zeroPoints, codeType, shape: [channels])),
          ("scale", try floatValue(.values(result.scales), shape: [channels], dataType)),
          ("axis", int32Value([0], shape: [])),
        ])
      written = result.data.count + channels * (1 + elementBytes)
    case .prune(let fraction):
      let result = MagnitudePruner.prune(values, fraction: fraction)
      guard !result.kept.isEmpty else {
        // Nothing left to store: an all-zero tensor has no sparse form (nonzero_data would be empty).
        return try kept("every element is zero")
      }
      var next = 0
      for (i, value) in values.enumerated() {
        let set = (result.mask[i / 8] >> (i % 8)) & 1 == 1
        let decoded: Float = set ? (dataType == .fp16 ? Float(Float16(result.kept[next])) : result.kept[next]) : 0
        if set { next += 1 }
        measure(decoded, value)
      }
      append(
        "constexpr_sparse_to_dense", name: constName, inputs: [], outputs: [namedType(constName, type)],
        attributes: [
          ("nonzero_data", try floatValue(.values(result.kept), shape: [result.kept.count], dataType)),
          ("mask", byteValue(result.mask, .uint8, shape: [result.mask.count])),
          ("shape", uint32Value(shape)),
        ])
      written = result.kept.count * elementBytes + result.mask.count
    }
    compressionReports.append(
      CompressedTensorReport(
        name: constName, shape: shape, originalBytes: original, writtenBytes: written, method: compression.summary,
        skipped: nil,
        relativeError: error.value))
    return MILTensor(name: constName, dataType: dataType, shape: shape)
  }

  /// The constant a non-tensor parameter becomes.
  private func constant(for param: MILParam, name: String) throws -> MILTensor? {
    switch param {
    case .tensor, .tensors: return nil
    case .int(let v): return const(int32Value([Int32(v)], shape: []), dataType: .int32, shape: [], name: name)
    case .ints(let v):
      return const(int32Value(v.map { Int32($0) }, shape: [v.count]), dataType: .int32, shape: [v.count], name: name)
    case .bool(let v): return const(boolValue([v], shape: []), dataType: .bool, shape: [], name: name)
    case .string(let v): return const(stringValue([v], shape: []), dataType: .string, shape: [], name: name)
    case .scalar(let v, let type): return try const([v], shape: [], type, name: name)
    case .floats(let v, let shape, let type): return try const(v, shape: shape, type, name: name)
    case .weights(let v, let shape, let type): return try const(v, shape: shape, type, name: name)
    }
  }

  /// Each parameter as bindings; those that are not tensors become `const` operations named `<prefix>_<key>`.
  private func bindings(_ params: [(String, MILParam)], constantPrefix: String) throws -> [(
    String, [CoreML__Specification__MILSpec__Argument__Binding]
  )] {
    try params.map { key, param in
      switch param {
      case .tensor(let t): return (key, [nameBinding(t.name)])
      case .tensors(let ts): return (key, ts.map { nameBinding($0.name) })
      default: return (key, [nameBinding(try constant(for: param, name: "\(constantPrefix)_\(key)")!.name)])
      }
    }
  }

  /// Appends operation `type` producing one tensor named `name` (made unique unless `exactName`).
  /// Parameters that are not tensors become `const` operations named `<name>_<key>`.
  @discardableResult
  func op(
    _ type: String, _ params: [(String, MILParam)], name: String, exactName: Bool = false, dataType: MILElementType,
    shape: [Int]
  ) throws -> MILTensor {
    let output = exactName ? name : uniqueName(name)
    if exactName { claim(name) }
    let bindings = try bindings(params, constantPrefix: output)
    append(type, name: output, inputs: bindings, outputs: [namedType(output, tensorType(dataType, shape))])
    let result = MILTensor(name: output, dataType: dataType, shape: shape)
    records.append(MILRecord(type: type, params: params, outputs: [result]))
    return result
  }

  /// Appends operation `type` with several outputs (`lstm`'s sequence, state and cell), named
  /// `<name>`, `<name>_1`, ... and made unique.
  func op(
    _ type: String, _ params: [(String, MILParam)], name: String, outputs: [(dataType: MILElementType, shape: [Int])]
  ) throws -> [MILTensor] {
    let names = outputs.indices.map { uniqueName($0 == 0 ? name : "\(name)_\($0)") }
    let bindings = try bindings(params, constantPrefix: names[0])
    append(
      type, name: names[0], inputs: bindings,
      outputs: zip(names, outputs).map { namedType($0, tensorType($1.dataType, $1.shape)) })
    let results = zip(names, outputs).map { MILTensor(name: $0, dataType: $1.dataType, shape: $1.shape) }
    records.append(MILRecord(type: type, params: params, outputs: results))
    return results
  }

  /// MIL's `classify`: `probabilities` (float32) with the class labels as a list constant given in place;
  /// outputs the top label (named `labelName`) and the label-to-probability dictionary (`probabilitiesName`).
  func classify(
    probabilities: MILTensor, labels: [String]?, integerLabels: [Int64]?, labelName: String, probabilitiesName: String
  ) {
    let elementType: MILElementType = integerLabels != nil ? .int64 : .string
    let elements: [UnsafeMutablePointer<MILValueMessage>] =
      integerLabels.map { $0.map { int64Value([$0], shape: []) } }
      ?? (labels ?? []).map { stringValue([$0], shape: []) }
    let list = arena.message(core_ml__specification__milspec__list_value__init)
    list.pointee.n_values = elements.count
    list.pointee.values = arena.pointerArray(elements)
    let immediateList = arena.message(core_ml__specification__milspec__value__immediate_value__init)
    immediateList.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE__IMMEDIATE_VALUE__VALUE_LIST
    immediateList.pointee.list = list
    let listType = arena.message(core_ml__specification__milspec__list_type__init)
    listType.pointee.type = tensorType(elementType, [])
    let length = arena.message(core_ml__specification__milspec__dimension__init)
    let lengthConstant = arena.message(core_ml__specification__milspec__dimension__constant_dimension__init)
    lengthConstant.pointee.size = UInt64(elements.count)
    length.pointee.dimension_case = CORE_ML__SPECIFICATION__MILSPEC__DIMENSION__DIMENSION_CONSTANT
    length.pointee.constant = lengthConstant
    listType.pointee.length = length
    let type = arena.message(core_ml__specification__milspec__value_type__init)
    type.pointee.type_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_LIST_TYPE
    type.pointee.listtype = listType
    let classes = arena.message(core_ml__specification__milspec__value__init)
    classes.pointee.type = type
    classes.pointee.value_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_IMMEDIATE_VALUE
    classes.pointee.immediatevalue = immediateList
    var classesBinding = CoreML__Specification__MILSpec__Argument__Binding()
    classesBinding.binding_case = CORE_ML__SPECIFICATION__MILSPEC__ARGUMENT__BINDING__BINDING_VALUE
    classesBinding.value = classes

    let dictionary = arena.message(core_ml__specification__milspec__dictionary_type__init)
    dictionary.pointee.keytype = tensorType(elementType, [])
    // Core ML's classifier dictionary holds doubles.
    dictionary.pointee.valuetype = tensorType(.fp64, [])
    let dictionaryType = arena.message(core_ml__specification__milspec__value_type__init)
    dictionaryType.pointee.type_case = CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_DICTIONARY_TYPE
    dictionaryType.pointee.dictionarytype = dictionary
    claim(labelName)
    claim(probabilitiesName)
    append(
      "classify", name: uniqueName("classify"),
      inputs: [("probabilities", [nameBinding(probabilities.name)]), ("classes", [classesBinding])],
      outputs: [namedType(labelName, tensorType(elementType, [])), namedType(probabilitiesName, dictionaryType)])
  }
}

extension MILBuilder {
  /// Writes the listed dimensions of a named tensor type as unknown (a flexible model's sizes that change
  /// with its inputs').
  func leaveUnknown(
    _ named: UnsafeMutablePointer<CoreML__Specification__MILSpec__NamedValueType>, _ unknown: [String: Set<Int>]
  ) {
    guard let name = named.pointee.name, let dimensions = unknown[String(cString: name)],
      let type = named.pointee.type,
      type.pointee.type_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_TENSOR_TYPE,
      let tensor = type.pointee.tensortype
    else { return }
    for index in dimensions where index < tensor.pointee.n_dimensions {
      let dimension = arena.message(core_ml__specification__milspec__dimension__init)
      dimension.pointee.dimension_case = CORE_ML__SPECIFICATION__MILSPEC__DIMENSION__DIMENSION_UNKNOWN
      dimension.pointee.unknown = arena.message(core_ml__specification__milspec__dimension__unknown_dimension__init)
      tensor.pointee.dimensions[index] = dimension
    }
  }

  /// `leaveUnknown` for every operation output and block input of `block` and the blocks nested in it.
  func leaveUnknown(
    in block: UnsafeMutablePointer<CoreML__Specification__MILSpec__Block>, _ unknown: [String: Set<Int>],
    inferred: [String: Int] = [:], depth: Int = 0
  ) {
    guard depth < 64 else { return }
    for index in 0..<block.pointee.n_inputs {
      if let named = block.pointee.inputs[index] { leaveUnknown(named, unknown) }
    }
    for index in 0..<block.pointee.n_operations {
      guard let op = block.pointee.operations[index] else { continue }
      for output in 0..<op.pointee.n_outputs {
        if let named = op.pointee.outputs[output] { leaveUnknown(named, unknown) }
      }
      if !inferred.isEmpty, op.pointee.n_outputs > 0, let name = op.pointee.outputs[0]?.pointee.name,
        let index = inferred[String(cString: name)]
      {
        inferSize(op, at: index)
      }
      for nested in 0..<op.pointee.n_blocks {
        if let inner = op.pointee.blocks[nested] {
          leaveUnknown(in: inner, unknown, inferred: inferred, depth: depth + 1)
        }
      }
    }
  }

  /// Writes entry `index` of a `const` operation's int32 values as -1 (a reshape infers it).
  func inferSize(_ op: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>, at index: Int) {
    for attribute in 0..<op.pointee.n_attributes {
      guard let entry = op.pointee.attributes[attribute], let value = entry.pointee.value,
        value.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_IMMEDIATE_VALUE,
        let tensor = value.pointee.immediatevalue?.pointee.tensor,
        tensor.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_INTS,
        let ints = tensor.pointee.ints, index < ints.pointee.n_values
      else { continue }
      ints.pointee.values[index] = -1
    }
  }
}
