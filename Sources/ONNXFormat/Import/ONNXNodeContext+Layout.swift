import ModelIR

/// ONNX's spatial tensors are channels first (`[N, C, H, W]`); the IR's spatial operations read
/// channels last. A spatial operator moves its input to channels last, computes, and moves the result
/// back; between two such operators the transposes meet and `CancelTransposesPass` removes them.
extension ONNXNodeContext {
  /// `[N, C, d1, ...]` as `[N, d1, ..., C]`.
  mutating func channelsLast(_ x: ValueID) throws -> ValueID {
    let rank = builder.type(of: x).shape.count
    return try add(.permute(order: [0] + Array(2..<rank) + [1]), [x], suffix: "__to_nhwc")
  }

  /// `[N, d1, ..., C]` as `[N, C, d1, ...]`.
  mutating func channelsFirst(_ x: ValueID) throws -> ValueID {
    let rank = builder.type(of: x).shape.count
    return try add(.permute(order: [0, rank - 1] + Array(1..<(rank - 1))), [x], suffix: "")
  }

  /// Input `index` as a rank-4 `[N, C, H, W]` tensor: a 1-D signal `[N, C, L]` becomes `[N, C, 1, L]`.
  /// Returns the tensor and whether it was 1-D.
  mutating func spatialInput(_ index: Int) throws -> (ValueID, oneDimensional: Bool) {
    let x = try tensor(index)
    let shape = builder.type(of: x).shape
    switch shape.count {
    case 4: return (x, false)
    case 3: return (try add(.reshape(targetShape: [shape[0], shape[1], 1, shape[2]]), [x], suffix: "__as_2d"), true)
    default:
      throw invalid("input of shape \(shape): 1-D and 2-D spatial inputs ([N, C, L] or [N, C, H, W]) are supported")
    }
  }

  /// A rank-4 result back to `[N, C, L]` when the input was 1-D.
  mutating func spatialOutput(_ y: ValueID, oneDimensional: Bool) throws -> ValueID {
    guard oneDimensional else { return y }
    let shape = builder.type(of: y).shape
    return try add(.reshape(targetShape: [shape[0], shape[1], shape[3]]), [y], suffix: "__as_1d")
  }

  /// A 2-D window attribute (`kernel_shape`, `strides`, `dilations`) for a 1-D or 2-D input, checked.
  func window(_ key: String, _ fallback: [Int], oneDimensional: Bool, positive: Bool = true) throws -> [Int] {
    guard var values = try ints(key) else { return fallback }
    guard values.count == (oneDimensional ? 1 : 2) else {
      throw invalid("attribute '\(key)' \(values) must have \(oneDimensional ? 1 : 2) values")
    }
    if oneDimensional { values = [1] + values }
    guard values.allSatisfy({ positive ? ($0 >= 1 && $0 <= GraphLimits.maxElementCount) : $0 >= 0 }) else {
      throw invalid("attribute '\(key)' \(values) must be \(positive ? "1 or more" : "0 or more")")
    }
    return values
  }

  /// Explicit padding `(top, left, bottom, right)` for a window, from `pads` and `auto_pad`.
  func padding(input: [Int], kernel: [Int], strides: [Int], dilations: [Int], oneDimensional: Bool) throws -> [Int] {
    let autoPad = try string("auto_pad", "NOTSET")
    switch autoPad {
    case "NOTSET":
      guard let pads = try ints("pads") else { return [0, 0, 0, 0] }
      guard pads.count == (oneDimensional ? 2 : 4), pads.allSatisfy({ $0 >= 0 && $0 <= GraphLimits.maxElementCount })
      else {
        throw invalid("attribute 'pads' \(pads) must be \(oneDimensional ? 2 : 4) non-negative values")
      }
      return oneDimensional ? [0, pads[0], 0, pads[1]] : pads
    case "VALID": return [0, 0, 0, 0]
    case "SAME_UPPER", "SAME_LOWER":
      var result = [0, 0, 0, 0]
      for axis in 0..<2 {
        let output = (input[axis] + strides[axis] - 1) / strides[axis]
        let total = max((output - 1) * strides[axis] + (kernel[axis] - 1) * dilations[axis] + 1 - input[axis], 0)
        let small = total / 2
        (result[axis], result[axis + 2]) = autoPad == "SAME_UPPER" ? (small, total - small) : (total - small, small)
      }
      return result
    default: throw invalid("attribute 'auto_pad' '\(autoPad)' (NOTSET, VALID, SAME_UPPER or SAME_LOWER)")
    }
  }

  /// Whether explicit `pads` are what TensorFlow's (and the IR's) same padding puts around this window at
  /// any input size: only with strides of 1, where the total is the dilated kernel's extent minus one
  /// whatever the size (with a larger stride, same padding's pads follow the size's parity, and the
  /// explicit pads are kept so that the written layer computes every size a flexible input allows).
  static func isSamePadding(_ pads: [Int], input: [Int], kernel: [Int], strides: [Int], dilations: [Int]) -> Bool {
    strides.allSatisfy { $0 == 1 }
      && (0..<2).allSatisfy { axis in
        let output = (input[axis] + strides[axis] - 1) / strides[axis]
        let total = max((output - 1) * strides[axis] + (kernel[axis] - 1) * dilations[axis] + 1 - input[axis], 0)
        return pads[axis] == total / 2 && pads[axis + 2] == total - total / 2
      }
  }
}
