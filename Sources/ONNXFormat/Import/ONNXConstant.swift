import ModelIR

/// A value the importer knows at import time: an initializer, a `Constant` node's tensor, or a shape
/// computation folded on the way (`Shape`, `Gather` of a shape, `Concat` of shapes, ...).
public struct ONNXConstant: Equatable, Sendable {
  public var shape: [Int]
  /// The values as floats (exact for every float and small integer; what the IR's constants hold).
  public var floats: [Float]
  /// The exact values of an integer (or boolean) tensor.
  public var ints: [Int]?

  public init(shape: [Int], floats: [Float], ints: [Int]? = nil) {
    self.shape = shape
    self.floats = floats
    self.ints = ints
  }

  public init(shape: [Int], ints: [Int]) {
    self.init(shape: shape, floats: ints.map { Float($0) }, ints: ints)
  }

  /// An initializer or attribute tensor, with every value checked (`ONNXTensor.roundedFloatValues`/`intValues`).
  public init(_ tensor: ONNXTensor) throws {
    if tensor.dataType.isInteger || tensor.dataType == .bool {
      self.init(shape: tensor.dims, ints: try tensor.intValues())
    } else {
      self.init(shape: tensor.dims, floats: try tensor.roundedFloatValues())
    }
  }

  public var count: Int { floats.count }

  /// The most elements an operator computes at import time (shape arithmetic, masks exporters build from
  /// shapes: Swin's attention masks are 64 x 49 x 49); larger results stay IR nodes or are refused.
  public static let maxFoldedCount = 1 << 20
}

/// What an ONNX value name stands for while importing: an IR value (in ONNX's layout, batch axis
/// kept) or a constant.
enum ONNXValue {
  case tensor(ValueID)
  case constant(ONNXConstant)
}
