/// A TensorFlow Lite model (`schema.fbs`, file identifier `TFL3`) as plain values: its first subgraph's
/// tensors and operators, the operator codes, the buffers (as places in the file, read when a constant is
/// needed), signatures and metadata entries.
public struct TFLiteModel: Sendable {
  public var path: String
  public var version: Int
  public var description: String?
  public var operatorCodes: [TFLiteOperatorCode]
  /// Subgraph 0 (the one `Interpreter` runs); others are control flow bodies.
  public var subgraph: TFLiteSubgraph
  /// Subgraphs 1, 2, ...: a CALL_ONCE's initializer (which assigns the variables' first values), control flow
  /// bodies.
  public var otherSubgraphs: [TFLiteSubgraph]
  public var subgraphCount: Int { 1 + otherSubgraphs.count }
  public var buffers: [TFLiteBuffer]
  public var signatures: [TFLiteSignature]
  /// `Model.metadata`: name and buffer index (`TFLITE_METADATA`, `min_runtime_version`, ...).
  public var metadata: [(name: String, buffer: Int)]
  /// The whole file, which buffers point into.
  public let file: FlatBuffer
}

public struct TFLiteOperatorCode: Sendable, Equatable {
  /// The effective builtin code: the larger of `builtin_code` and `deprecated_builtin_code` (schema.fbs,
  /// OperatorCode: writers store 127, the placeholder, in the byte when the code does not fit it).
  public var builtin: Int
  public var customCode: String?
  public var version: Int

  /// The operator's name: its `BuiltinOperator` name, or a custom operator's code.
  public var name: String {
    if builtin == TFLiteBuiltin.custom { return customCode.map { "CUSTOM(\($0))" } ?? "CUSTOM" }
    return TFLiteBuiltin.name(builtin)
  }
}

public struct TFLiteSubgraph: Sendable {
  public var name: String?
  public var tensors: [TFLiteTensor]
  public var inputs: [Int]
  public var outputs: [Int]
  public var operators: [TFLiteOperator]
}

/// `TensorType` (schema.fbs).
public enum TFLiteTensorType: Int, Sendable, Equatable, CaseIterable {
  case float32 = 0
  case float16, int32, uint8, int64, string, bool, int16, complex64, int8, float64, complex128, uint64,
    resource, variant, uint32, uint16, int4, bfloat16

  /// Bytes per element of a fixed-size type; nil for strings, resources, variants and packed int4.
  public var byteSize: Int? {
    switch self {
    case .float32, .int32, .uint32: return 4
    case .float16, .int16, .uint16, .bfloat16: return 2
    case .uint8, .int8, .bool: return 1
    case .int64, .float64, .uint64, .complex64: return 8
    case .complex128: return 16
    case .string, .resource, .variant, .int4: return nil
    }
  }

  public var name: String {
    switch self {
    case .float32: return "float32"
    case .float16: return "float16"
    case .int32: return "int32"
    case .uint8: return "uint8"
    case .int64: return "int64"
    case .string: return "string"
    case .bool: return "bool"
    case .int16: return "int16"
    case .complex64: return "complex64"
    case .int8: return "int8"
    case .float64: return "float64"
    case .complex128: return "complex128"
    case .uint64: return "uint64"
    case .resource: return "resource"
    case .variant: return "variant"
    case .uint32: return "uint32"
    case .uint16: return "uint16"
    case .int4: return "int4"
    case .bfloat16: return "bfloat16"
    }
  }
}

/// Affine quantization: `real = scale * (quantized - zeroPoint)`, per tensor (one scale) or per channel
/// along `axis` (schema.fbs, QuantizationParameters).
public struct TFLiteQuantization: Sendable, Equatable {
  public var scales: [Float]
  public var zeroPoints: [Int64]
  public var axis: Int

  public var isPerChannel: Bool { scales.count > 1 }
}

public struct TFLiteTensor: Sendable {
  public var name: String
  /// The shape the file gives (batch included); `shapeSignature` has -1 where the size is left open.
  public var shape: [Int]
  public var shapeSignature: [Int]?
  public var type: TFLiteTensorType
  /// Index into `TFLiteModel.buffers`; 0 is the empty buffer (a tensor computed at run time).
  public var buffer: Int
  public var quantization: TFLiteQuantization?
  public var isVariable: Bool
  public var isSparse: Bool { sparsity != nil }
  /// `SparsityParameters`, read when the tensor is densified.
  public var sparsity: FlatTable?
}

public struct TFLiteOperator: Sendable {
  public var opcodeIndex: Int
  /// Tensor indices; -1 marks an optional input left out.
  public var inputs: [Int]
  public var outputs: [Int]
  /// The `BuiltinOptions` union: its tag and table (nil: none).
  public var optionsType: Int
  public var options: FlatTable?
  public var hasOptions2: Bool
  /// A custom operator's options, the bytes' place in the file (`custom_options`), when it has them.
  public var customOptions: Range<Int>? = nil
}

/// Where a buffer's bytes are: inside the FlatBuffer (`data`), or, in a model larger than 2 GiB, at an
/// absolute `offset` of the file (`offset`, `size`, used when offset > 1).
public struct TFLiteBuffer: Sendable, Equatable {
  public var range: Range<Int>
}

public struct TFLiteSignature: Sendable, Equatable {
  public var key: String
  public var subgraph: Int
  public var inputs: [(name: String, tensor: Int)]
  public var outputs: [(name: String, tensor: Int)]

  public static func == (a: TFLiteSignature, b: TFLiteSignature) -> Bool {
    a.key == b.key && a.subgraph == b.subgraph && a.inputs.map(\.name) == b.inputs.map(\.name)
      && a.inputs.map(\.tensor) == b.inputs.map(\.tensor) && a.outputs.map(\.name) == b.outputs.map(\.name)
      && a.outputs.map(\.tensor) == b.outputs.map(\.tensor)
  }
}
