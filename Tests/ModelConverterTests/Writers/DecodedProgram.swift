import CProtobufC
import CoreMLFormat
import CoreMLSpec
import CoreMLTestSupport
import Foundation

/// A written ML Program model decoded through protobuf-c into plain Swift values, for structural tests.
struct DecodedProgram {
  struct TensorInfo: Equatable {
    var dataType: Int  // MIL DataType number
    var shape: [Int]
  }

  struct Constant {
    var type: TensorInfo
    var blobOffset: UInt64?
    var fileName: String?
    var floats: [Float]?
    var bytes: [UInt8]?
    var ints: [Int32]?
    var strings: [String]?
  }

  struct Op {
    var type: String
    var name: String
    /// Parameter name → bound value names (a given-in-place value appears as "<value>").
    var inputs: [String: [String]]
    var outputs: [(name: String, type: TensorInfo?)]
    var value: Constant?
    /// Strings or int64 labels of an in-place list value (classify's classes).
    var listStrings: [String] = []
    var listInts: [Int64] = []
  }

  struct Feature {
    var name: String
    /// "multiArray", "image", "dictionary", "string", "int64".
    var kind: String
    var shape: [Int] = []
    var imageSize: (height: Int, width: Int)?
    var colorSpace: Int?
  }

  var specificationVersion: Int
  var modelType: Int
  var functionNames: [String] = []
  var opset = ""
  var blockKeys: [String] = []
  var functionInputs: [(name: String, type: TensorInfo)] = []
  var blockOutputs: [String] = []
  var ops: [Op] = []
  var inputs: [Feature] = []
  var outputs: [Feature] = []
  var predictedFeatureName = ""
  var predictedProbabilitiesName = ""

  static let fp16 = 10, fp32 = 11, fp64 = 12, int32 = 23, int64 = 24, bool = 1, string = 2

  /// The operation producing `name`.
  func producer(of name: String) -> Op? { ops.first { $0.outputs.contains { $0.name == name } } }
  /// The const operation named `name`'s value.
  func constant(_ name: String) -> Constant? { producer(of: name)?.value }

  init(_ bytes: [UInt8]) throws {
    guard
      let model = bytes.withUnsafeBufferPointer({ core_ml__specification__model__unpack(nil, $0.count, $0.baseAddress) }
      )
    else {
      throw CocoaError(.coderReadCorrupt)
    }
    defer { core_ml__specification__model__free_unpacked(model, nil) }
    specificationVersion = Int(model.pointee.specificationversion)
    modelType = Int(model.pointee.type_case.rawValue)
    if let description = model.pointee.description {
      inputs = (0..<description.pointee.n_input).map { Self.feature(description.pointee.input[$0]!) }
      outputs = (0..<description.pointee.n_output).map { Self.feature(description.pointee.output[$0]!) }
      predictedFeatureName = String(cString: description.pointee.predictedfeaturename)
      predictedProbabilitiesName = String(cString: description.pointee.predictedprobabilitiesname)
    }
    guard model.pointee.type_case == CORE_ML__SPECIFICATION__MODEL__TYPE_ML_PROGRAM,
      let program = model.pointee.mlprogram
    else { return }
    for f in 0..<program.pointee.n_functions {
      let entry = program.pointee.functions[f]!
      functionNames.append(String(cString: entry.pointee.key))
      guard String(cString: entry.pointee.key) == "main", let function = entry.pointee.value else { continue }
      opset = String(cString: function.pointee.opset)
      functionInputs = (0..<function.pointee.n_inputs).map {
        let input = function.pointee.inputs[$0]!
        return (String(cString: input.pointee.name), Self.tensorInfo(input.pointee.type)!)
      }
      for b in 0..<function.pointee.n_block_specializations {
        let blockEntry = function.pointee.block_specializations[b]!
        blockKeys.append(String(cString: blockEntry.pointee.key))
        let block = blockEntry.pointee.value!
        blockOutputs = (0..<block.pointee.n_outputs).map { String(cString: block.pointee.outputs[$0]!) }
        ops = (0..<block.pointee.n_operations).map { Self.op(block.pointee.operations[$0]!) }
      }
    }
  }

  private static func feature(_ f: UnsafeMutablePointer<CoreML__Specification__FeatureDescription>) -> Feature {
    var result = Feature(name: String(cString: f.pointee.name), kind: "other")
    guard let type = f.pointee.type else { return result }
    switch type.pointee.type_case {
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE:
      result.kind = "multiArray"
      let array = type.pointee.multiarraytype!
      result.shape = (0..<array.pointee.n_shape).map { Int(array.pointee.shape[$0]) }
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE:
      result.kind = "image"
      let image = type.pointee.imagetype!
      result.imageSize = (Int(image.pointee.height), Int(image.pointee.width))
      result.colorSpace = Int(image.pointee.colorspace.rawValue)
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_DICTIONARY_TYPE: result.kind = "dictionary"
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_STRING_TYPE: result.kind = "string"
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_INT64_TYPE: result.kind = "int64"
    default: break
    }
    return result
  }

  private static func tensorInfo(_ type: UnsafeMutablePointer<CoreML__Specification__MILSpec__ValueType>?)
    -> TensorInfo?
  {
    guard let type, type.pointee.type_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_TENSOR_TYPE,
      let tensor = type.pointee.tensortype
    else { return nil }
    let shape = (0..<tensor.pointee.n_dimensions).map {
      Int(tensor.pointee.dimensions[$0]!.pointee.constant?.pointee.size ?? 0)
    }
    return TensorInfo(dataType: Int(tensor.pointee.datatype.rawValue), shape: shape)
  }

  private static func constant(_ value: UnsafeMutablePointer<CoreML__Specification__MILSpec__Value>) -> Constant? {
    guard let info = tensorInfo(value.pointee.type) else { return nil }
    var result = Constant(type: info)
    if value.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_BLOB_FILE_VALUE {
      result.blobOffset = value.pointee.blobfilevalue.pointee.offset
      result.fileName = String(cString: value.pointee.blobfilevalue.pointee.filename)
    } else if value.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_IMMEDIATE_VALUE,
      let tensor = value.pointee.immediatevalue.pointee.tensor
    {
      switch tensor.pointee.value_case {
      case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_FLOATS:
        result.floats = Array(
          UnsafeBufferPointer(
            start: tensor.pointee.floats.pointee.values, count: tensor.pointee.floats.pointee.n_values))
      case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_BYTES:
        let data = tensor.pointee.bytes.pointee.values
        result.bytes = Array(UnsafeBufferPointer(start: data.data, count: data.len))
      case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_INTS:
        result.ints = Array(
          UnsafeBufferPointer(start: tensor.pointee.ints.pointee.values, count: tensor.pointee.ints.pointee.n_values))
      case CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_STRINGS:
        result.strings = (0..<tensor.pointee.strings.pointee.n_values).map {
          String(cString: tensor.pointee.strings.pointee.values[$0]!)
        }
      default: break
      }
    }
    return result
  }

  private static func op(_ o: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>) -> Op {
    var result = Op(type: String(cString: o.pointee.type), name: "", inputs: [:], outputs: [])
    for i in 0..<o.pointee.n_inputs {
      let entry = o.pointee.inputs[i]!
      let argument = entry.pointee.value!
      result.inputs[String(cString: entry.pointee.key)] = (0..<argument.pointee.n_arguments).map { a in
        let binding = argument.pointee.arguments[a]!
        if binding.pointee.binding_case == CORE_ML__SPECIFICATION__MILSPEC__ARGUMENT__BINDING__BINDING_NAME {
          return String(cString: binding.pointee.name)
        }
        if let list = binding.pointee.value.pointee.immediatevalue?.pointee.list {
          for v in 0..<list.pointee.n_values {
            if let c = constant(list.pointee.values[v]!) {
              result.listStrings += c.strings ?? []
            }
            if let tensor = list.pointee.values[v]!.pointee.immediatevalue?.pointee.tensor,
              tensor.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_LONG_INTS
            {
              result.listInts += Array(
                UnsafeBufferPointer(
                  start: tensor.pointee.longints.pointee.values, count: tensor.pointee.longints.pointee.n_values))
            }
          }
        }
        return "<value>"
      }
    }
    result.outputs = (0..<o.pointee.n_outputs).map {
      let output = o.pointee.outputs[$0]!
      return (String(cString: output.pointee.name), tensorInfo(output.pointee.type))
    }
    for a in 0..<o.pointee.n_attributes {
      let entry = o.pointee.attributes[a]!
      let key = String(cString: entry.pointee.key)
      if key == "name" { result.name = constant(entry.pointee.value)?.strings?.first ?? "" }
      if key == "val" { result.value = constant(entry.pointee.value) }
    }
    return result
  }
}
