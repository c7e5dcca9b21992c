import CProtobufC
import CoreMLCommon
import CoreMLSpec
import Foundation
import ModelIR

typealias MILProgramMessage = CoreML__Specification__MILSpec__Program
typealias MILValueTypeMessage = CoreML__Specification__MILSpec__ValueType

/// Decodes an ML Program's `main` function into `MILProgram`, reading blob values from the package's weight file.
///
/// Every number in the file is untrusted: dimensions, counts, offsets and blob sizes are checked against each
/// other and against limits before anything is allocated, and a mismatch is a `CoreMLReaderError` naming the
/// file, the operation and the field.
struct MILProgramDecoder {
  let path: String
  /// The folder holding `weight.bin` (from the package manifest), or nil for a bare `.mlmodel` file.
  let weightsURL: URL?
  private var weights: MILBlobStorage.Reader?
  /// The operation being decoded, for error messages.
  private var context = "program"

  /// The most elements one value may declare: the most weights a model may hold (2^29, 2 GiB of float32),
  /// so any weight a writer emits can be read back.
  static let maximumElements = GraphLimits.maxWeightCount

  init(path: String, weightsURL: URL?) {
    self.path = path
    self.weightsURL = weightsURL
  }

  func fail(_ field: String, _ detail: String) -> CoreMLReaderError {
    .invalidProgram(path: path, operation: context, detail: "\(field): \(detail)")
  }

  mutating func decode(_ program: MILProgramMessage) throws -> MILProgram {
    let functions = CoreMLSpecReader.buffer(program.functions, program.n_functions).compactMap { $0?.pointee }
    guard let main = functions.first(where: { CoreMLSpecReader.text($0.key) == "main" })?.value?.pointee else {
      throw fail("functions", "the program has no 'main' function")
    }
    let opset = CoreMLSpecReader.text(main.opset)
    let blocks = CoreMLSpecReader.buffer(main.block_specializations, main.n_block_specializations).compactMap {
      $0?.pointee
    }
    guard let block = blocks.first(where: { CoreMLSpecReader.text($0.key) == opset })?.value?.pointee else {
      throw fail("block_specializations", "function 'main' has no block for its opset '\(opset)'")
    }
    var inputs: [MILNamedType] = []
    for input in CoreMLSpecReader.buffer(main.inputs, main.n_inputs) {
      guard let input else { continue }
      inputs.append(try namedType(input.pointee, field: "function input"))
    }
    var operations: [MILOperation] = []
    for message in CoreMLSpecReader.buffer(block.operations, block.n_operations) {
      guard let message else { continue }
      operations.append(try operation(message.pointee))
    }
    context = "program"
    let outputs = CoreMLSpecReader.buffer(block.outputs, block.n_outputs).map { CoreMLSpecReader.text($0) }
    return MILProgram(opset: opset, inputs: inputs, operations: operations, outputs: outputs)
  }

  /// A nested block; `depth` counts the blocks around it (bounded before recursing; the protobuf reader
  /// bounds message nesting as well).
  private mutating func block(_ message: CoreML__Specification__MILSpec__Block, depth: Int, field: String) throws
    -> MILBlock
  {
    guard depth <= Self.maximumBlockDepth else {
      throw fail(field, "blocks nested more than \(Self.maximumBlockDepth) deep")
    }
    var inputs: [MILNamedType] = []
    for input in CoreMLSpecReader.buffer(message.inputs, message.n_inputs) {
      guard let input else { continue }
      inputs.append(try namedType(input.pointee, field: "\(field) input"))
    }
    var operations: [MILOperation] = []
    for operation in CoreMLSpecReader.buffer(message.operations, message.n_operations) {
      guard let operation else { continue }
      operations.append(try self.operation(operation.pointee, depth: depth))
    }
    let outputs = CoreMLSpecReader.buffer(message.outputs, message.n_outputs).map { CoreMLSpecReader.text($0) }
    return MILBlock(inputs: inputs, operations: operations, outputs: outputs)
  }

  /// How deep blocks may nest inside operations (loops in loops).
  static let maximumBlockDepth = 16

  private mutating func operation(_ message: MILOperationMessage, depth: Int = 0) throws -> MILOperation {
    let type = CoreMLSpecReader.text(message.type)
    var outputs: [MILNamedType] = []
    context = "\(type) operation"
    for output in CoreMLSpecReader.buffer(message.outputs, message.n_outputs) {
      guard let output else { continue }
      outputs.append(try namedType(output.pointee, field: "output"))
    }
    var attributes: [String: MILValue] = [:]
    for entry in CoreMLSpecReader.buffer(message.attributes, message.n_attributes) {
      guard let entry = entry?.pointee, let value = entry.value else { continue }
      let key = CoreMLSpecReader.text(entry.key)
      attributes[key] = try self.value(value.pointee, field: "attribute '\(key)'")
    }
    let name = attributes["name"]?.strings.first ?? outputs.first?.name ?? type
    context = "\(type) operation '\(name)'"
    var inputs: [String: [MILArgument]] = [:]
    for entry in CoreMLSpecReader.buffer(message.inputs, message.n_inputs) {
      guard let entry = entry?.pointee else { continue }
      let key = CoreMLSpecReader.text(entry.key)
      var arguments: [MILArgument] = []
      if let argument = entry.value?.pointee {
        for binding in CoreMLSpecReader.buffer(argument.arguments, argument.n_arguments) {
          guard let binding = binding?.pointee else { continue }
          switch binding.binding_case {
          case CORE_ML__SPECIFICATION__MILSPEC__ARGUMENT__BINDING__BINDING_NAME:
            arguments.append(.name(CoreMLSpecReader.text(binding.name)))
          case CORE_ML__SPECIFICATION__MILSPEC__ARGUMENT__BINDING__BINDING_VALUE:
            guard let value = binding.value else { throw fail("input '\(key)'", "empty value binding") }
            arguments.append(.value(try self.value(value.pointee, field: "input '\(key)'")))
          default: throw fail("input '\(key)'", "a binding with neither a name nor a value")
          }
        }
      }
      inputs[key] = arguments
    }
    if type.hasPrefix("constexpr_") {
      // coremltools stores a constexpr operation's constant parameters as attributes.
      for (key, value) in attributes where key != "name" && inputs[key] == nil { inputs[key] = [.value(value)] }
    }
    var result = MILOperation(type: type, name: name, inputs: inputs, outputs: outputs, value: attributes["val"])
    let operationContext = context
    for (index, block) in CoreMLSpecReader.buffer(message.blocks, message.n_blocks).enumerated() {
      guard let block = block?.pointee else { throw fail("block \(index)", "an empty block") }
      result.blocks.append(try self.block(block, depth: depth + 1, field: "\(operationContext), block \(index)"))
      context = operationContext
    }
    return result
  }

  private func namedType(_ message: CoreML__Specification__MILSpec__NamedValueType, field: String) throws
    -> MILNamedType
  {
    let name = CoreMLSpecReader.text(message.name)
    guard let type = message.type else { throw fail("\(field) '\(name)'", "has no type") }
    let valueType = try valueType(type.pointee, field: "\(field) '\(name)'")
    // Core ML computes in float16 and float32; bfloat16 exists only as a storage type of constants.
    guard valueType.dataType != .bfloat16 else {
      throw fail("\(field) '\(name)'", "is typed bfloat16; Core ML computes in float16 or float32")
    }
    return MILNamedType(name: name, type: valueType)
  }

  private func valueType(_ message: MILValueTypeMessage, field: String) throws -> MILTensorType {
    switch message.type_case {
    case CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_TENSOR_TYPE:
      guard let tensor = message.tensortype?.pointee else { throw fail(field, "empty tensor type") }
      guard let dataType = MILDataType(rawValue: Int(tensor.datatype.rawValue)), dataType != .unused else {
        throw fail(field, "unknown data type \(tensor.datatype.rawValue)")
      }
      let dimensions = CoreMLSpecReader.buffer(tensor.dimensions, tensor.n_dimensions)
      guard tensor.rank >= 0, tensor.rank <= 16, Int(tensor.rank) == dimensions.count else {
        throw fail(field, "rank \(tensor.rank) with \(dimensions.count) dimensions (rank must match and be at most 16)")
      }
      let shape = try dimensions.map { dimension -> Int in
        guard let dimension = dimension?.pointee else { throw fail(field, "empty dimension") }
        switch dimension.dimension_case {
        case CORE_ML__SPECIFICATION__MILSPEC__DIMENSION__DIMENSION_CONSTANT:
          let size = dimension.constant?.pointee.size ?? 0
          guard size <= UInt64(GraphLimits.maxSize) else {
            throw fail(field, "dimension \(size) is more than \(GraphLimits.maxSize)")
          }
          return Int(size)
        case CORE_ML__SPECIFICATION__MILSPEC__DIMENSION__DIMENSION_UNKNOWN: return -1
        default: throw fail(field, "a dimension that is neither constant nor unknown")
        }
      }
      return MILTensorType(dataType: dataType, shape: shape)
    case CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_LIST_TYPE,
      CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_TUPLE_TYPE,
      CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_DICTIONARY_TYPE:
      return MILTensorType(dataType: .unused, shape: [], isTensor: false)
    default: throw fail(field, "a value type that is not set")
    }
  }

  /// The number of elements a fixed shape holds, checked.
  private func elementCount(_ type: MILTensorType, field: String) throws -> Int {
    var count = 1
    for size in type.shape {
      guard size >= 0 else { throw fail(field, "a constant of shape \(type.shape) has an unknown dimension") }
      let (next, overflow) = count.multipliedReportingOverflow(by: size)
      guard !overflow, next <= Self.maximumElements else {
        throw fail(field, "shape \(type.shape) holds too many elements")
      }
      count = next
    }
    return count
  }

  private mutating func value(_ message: MILValueMessage, field: String) throws -> MILValue {
    guard let typeMessage = message.type else { throw fail(field, "a value without a type") }
    let type = try valueType(typeMessage.pointee, field: field)
    if typeMessage.pointee.type_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_LIST_TYPE {
      return try list(message, field: field)
    }
    guard type.isTensor else { throw fail(field, "tuple and dictionary values are not supported") }
    let count = try elementCount(type, field: field)
    switch message.value_case {
    case CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_IMMEDIATE_VALUE:
      guard let immediate = message.immediatevalue?.pointee,
        immediate.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__IMMEDIATE_VALUE__VALUE_TENSOR,
        let tensor = immediate.tensor?.pointee
      else { throw fail(field, "an immediate value that is not a tensor") }
      return try immediateTensor(tensor, type: type, count: count, field: field)
    case CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_BLOB_FILE_VALUE:
      guard let blob = message.blobfilevalue?.pointee else { throw fail(field, "an empty blob file value") }
      return try blobValue(
        fileName: CoreMLSpecReader.text(blob.filename), offset: blob.offset, type: type, count: count, field: field)
    default: throw fail(field, "a value with neither immediate data nor a blob file reference")
    }
  }

  /// A list of scalars (a `classify` operation's classes) as a rank-1 tensor of the element type.
  private mutating func list(_ message: MILValueMessage, field: String) throws -> MILValue {
    guard message.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_IMMEDIATE_VALUE,
      let immediate = message.immediatevalue?.pointee,
      immediate.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__IMMEDIATE_VALUE__VALUE_LIST,
      let list = immediate.list?.pointee
    else { throw fail(field, "a list value without immediate list data") }
    guard list.n_values <= Self.maximumElements else { throw fail(field, "a list of \(list.n_values) values") }
    var result: MILValue?
    for element in CoreMLSpecReader.buffer(list.values, list.n_values) {
      guard let element else { throw fail(field, "an empty list element") }
      let value = try self.value(element.pointee, field: "\(field) element")
      guard value.type.isTensor, value.count == 1 else { throw fail(field, "list elements must be scalars") }
      if result == nil { result = MILValue(type: MILTensorType(dataType: value.type.dataType, shape: [0])) }
      guard result!.type.dataType == value.type.dataType else { throw fail(field, "list elements of different types") }
      result!.floats += value.floats
      result!.integers += value.integers
      result!.strings += value.strings
      result!.type.shape[0] += 1
    }
    return result ?? MILValue(type: MILTensorType(dataType: .float32, shape: [0]))
  }

  private func immediateTensor(
    _ tensor: CoreML__Specification__MILSpec__TensorValue, type: MILTensorType, count: Int, field: String
  ) throws -> MILValue {
    func checked<T>(_ values: [T], _ what: String) throws -> [T] {
      guard values.count == count else {
        throw fail(field, "\(values.count) \(what) for shape \(type.shape) (\(count) elements)")
      }
      return values
    }
    var result = MILValue(type: type)
    switch tensor.value_case {
    case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_FLOATS:
      guard type.dataType.isFloat else { throw fail(field, "floats for a \(type.dataType) tensor") }
      let values = tensor.floats.map { CoreMLSpecReader.buffer($0.pointee.values, $0.pointee.n_values) } ?? []
      result.floats = try checked(values, "floats")
    case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_DOUBLES:
      guard type.dataType.isFloat else { throw fail(field, "doubles for a \(type.dataType) tensor") }
      let values = tensor.doubles.map { CoreMLSpecReader.buffer($0.pointee.values, $0.pointee.n_values) } ?? []
      result.floats = try checked(values, "doubles").map { Float($0) }
    case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_INTS:
      let values = tensor.ints.map { CoreMLSpecReader.buffer($0.pointee.values, $0.pointee.n_values) } ?? []
      if type.dataType.isFloat {
        result.floats = try checked(values, "ints").map { Float($0) }
      } else {
        result.integers = try checked(values, "ints").map { Int64($0) }
      }
    case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_LONG_INTS:
      let values = tensor.longints.map { CoreMLSpecReader.buffer($0.pointee.values, $0.pointee.n_values) } ?? []
      if type.dataType.isFloat {
        result.floats = try checked(values, "long ints").map { Float($0) }
      } else {
        result.integers = try checked(values, "long ints")
      }
    case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_BOOLS:
      let values = tensor.bools.map { CoreMLSpecReader.buffer($0.pointee.values, $0.pointee.n_values) } ?? []
      result.integers = try checked(values, "bools").map { $0 != 0 ? 1 : 0 }
    case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_STRINGS:
      guard type.dataType == .string else { throw fail(field, "strings for a \(type.dataType) tensor") }
      let values = tensor.strings.map { CoreMLSpecReader.buffer($0.pointee.values, $0.pointee.n_values) } ?? []
      result.strings = try checked(values, "strings").map { CoreMLSpecReader.text($0) }
    case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_BYTES:
      let data = tensor.bytes?.pointee.values
      let bytes: [UInt8] =
        data.flatMap { $0.data.map { Array(UnsafeBufferPointer(start: $0, count: data!.len)) } } ?? []
      try unpack(bytes, into: &result, count: count, field: field)
    default:
      // An empty tensor has no value case set.
      guard count == 0 else { throw fail(field, "no data for shape \(type.shape)") }
    }
    return result
  }

  /// Unpacks little-endian storage of `result.type.dataType` (sub-byte types least significant bits first).
  private func unpack(_ bytes: [UInt8], into result: inout MILValue, count: Int, field: String) throws {
    let dataType = result.type.dataType
    let bits = dataType.bits
    guard bits > 0 else { throw fail(field, "bytes for a \(dataType) tensor") }
    let needed = (count * bits + 7) / 8
    guard bytes.count == needed else {
      throw fail(field, "\(bytes.count) bytes for \(count) \(dataType) elements (needs \(needed))")
    }
    func word(_ index: Int, _ size: Int) -> UInt64 {
      (0..<size).reduce(UInt64(0)) { $0 | UInt64(bytes[index * size + $1]) << (8 * UInt64($1)) }
    }
    // Whole little-endian words, loaded directly (weights are most of a package: keep this loop plain).
    func floats<Word: FixedWidthInteger>(_: Word.Type, _ convert: (Word) -> Float) -> [Float] {
      [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
        bytes.withUnsafeBytes { raw in
          for index in 0..<count {
            buffer[index] = convert(
              Word(littleEndian: raw.loadUnaligned(fromByteOffset: index * MemoryLayout<Word>.size, as: Word.self)))
          }
        }
        initialized = count
      }
    }
    switch dataType {
    case .float16: result.floats = floats(UInt16.self) { Float(Float16(bitPattern: $0)) }
    case .bfloat16: result.floats = floats(UInt16.self) { Float(bitPattern: UInt32($0) << 16) }
    case .float32: result.floats = floats(UInt32.self) { Float(bitPattern: $0) }
    case .float64: result.floats = floats(UInt64.self) { Float(Double(bitPattern: $0)) }
    default:
      var integers = [Int64](repeating: 0, count: count)
      for index in 0..<count {
        var code: UInt64 = 0
        if bits % 8 == 0 {
          code = word(index, bits / 8)
        } else {
          for bit in 0..<bits {
            let position = index * bits + bit
            code |= UInt64(bytes[position / 8] >> (position % 8) & 1) << UInt64(bit)
          }
        }
        if dataType.isSigned && bits < 64 && code >> UInt64(bits - 1) & 1 == 1 {
          integers[index] = Int64(bitPattern: code | ~((1 << UInt64(bits)) - 1))
        } else {
          integers[index] = Int64(bitPattern: code)
        }
      }
      result.integers = integers
    }
  }

  private mutating func blobValue(fileName: String, offset: UInt64, type: MILTensorType, count: Int, field: String)
    throws -> MILValue
  {
    guard fileName == ModelPackage.programWeightFileName else {
      throw fail(
        field, "blob file '\(fileName)' is not \(ModelPackage.programWeightFileName), the package's weight file")
    }
    if weights == nil {
      guard let weightsURL else {
        throw fail(field, "refers to \(fileName), but a bare .mlmodel file has no weights folder")
      }
      let url = weightsURL.appendingPathComponent(ModelPackage.weightFileName)
      do { weights = try MILBlobStorage.Reader(contentsOf: url) } catch let error as MILBlobStorage.FormatError {
        throw CoreMLReaderError.invalidProgram(path: path, operation: context, detail: "\(field): \(error.description)")
      }
    }
    guard let weights else { throw fail(field, "no weight file") }
    let blob: MILBlobStorage.Blob
    // The bytes the value needs: a blob declaring more (a sparse 8 GiB weight file whose one blob claims it
    // all) is refused before its data is read.
    let (bits, overflow) = count.multipliedReportingOverflow(by: max(type.dataType.bits, 0))
    let neededBytes = overflow ? Int.max : (bits + 7) / 8
    do { blob = try weights.blob(at: offset, expectedBytes: type.dataType.bits > 0 ? neededBytes : nil) } catch let
      error as MILBlobStorage.FormatError
    {
      throw CoreMLReaderError.invalidProgram(path: path, operation: context, detail: "\(field): \(error.description)")
    }
    let expected: MILBlobStorage.BlobDataType?
    switch type.dataType {
    case .float16: expected = .float16
    case .float32: expected = .float32
    case .bfloat16: expected = .bfloat16
    case .uint8: expected = .uint8
    case .int8: expected = .int8
    case .int16: expected = .int16
    case .uint16: expected = .uint16
    case .int32: expected = .int32
    case .uint32: expected = .uint32
    case .int4: expected = .int4
    case .uint4: expected = .uint4
    case .uint1: expected = .uint1
    case .uint2: expected = .uint2
    case .uint3: expected = .uint3
    case .uint6: expected = .uint6
    default: expected = nil
    }
    guard let expected, blob.dataType == expected else {
      throw fail(field, "blob at offset \(offset) holds \(blob.dataType), the value is declared \(type.dataType)")
    }
    var result = MILValue(type: type)
    try unpack(blob.bytes, into: &result, count: count, field: "\(field) (blob at offset \(offset))")
    return result
  }
}
