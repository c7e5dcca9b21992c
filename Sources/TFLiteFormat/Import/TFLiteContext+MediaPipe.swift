import Foundation
import ModelIR

/// MediaPipe's landmark operators (`mediapipe/util/tflite/operations/`, version 2, as face_landmark_with_attention
/// uses them: a crop of a feature map around some landmarks, sampled under a rotation, and landmarks found in
/// the crop mapped back), written with the IR's general operations: a selection product, elementwise arithmetic,
/// reductions and a matrix product. Their options are FlexBuffers maps.
extension TFLiteContext {
  /// The operator's FlexBuffers options.
  func flexOptions() throws -> FlexBufferMap {
    guard let range = op.customOptions else { throw fail("no custom options") }
    do {
      return try FlexBufferMap(Array(model.file.bytes[range]))
    } catch let failure as FlexBufferMap.Failure {
      throw fail("custom options: \(failure.detail)")
    }
  }

  func requireVersion(_ version: Int) throws {
    let found = model.operatorCodes[op.opcodeIndex].version
    guard found == version else { throw fail("version \(found) (version \(version) is converted)") }
  }

  func flexInt(_ options: FlexBufferMap, _ key: String, in range: ClosedRange<Int>) throws -> Int {
    guard case .int(let value) = options[key], value >= Int64(range.lowerBound), value <= Int64(range.upperBound)
    else { throw fail("custom option '\(key)' is \(String(describing: options[key])), not an integer in \(range)") }
    return Int(value)
  }

  func flexFloat(_ options: FlexBufferMap, _ key: String) throws -> Float {
    let value: Double
    switch options[key] {
    case .float(let v): value = v
    case .int(let v): value = Double(v)
    default: throw fail("custom option '\(key)' is \(String(describing: options[key])), not a number")
    }
    guard value.isFinite, abs(value) < 1e30 else { throw fail("custom option '\(key)' is \(value)") }
    return Float(value)
  }

  /// An intermediate operation of the operator.
  mutating func step(_ operation: ModelIR.Operation, _ inputs: [ValueID]) throws -> ValueID {
    try add(operation, inputs, final: false)
  }

  mutating func constantValue(_ values: [Float], _ shape: [Int]) throws -> ValueID {
    try builder.add(
      .constant(Constant(shape: shape, values: values)), name: builder.uniqueName(output.name + "__constant"),
      inputs: [])
  }

  mutating func binary(_ kind: ElementwiseKind, _ a: ValueID, _ b: ValueID) throws -> ValueID {
    try step(.elementwise(kind), [a, b])
  }

  mutating func scaled(_ x: ValueID, _ scale: Float, _ offset: Float = 0) throws -> ValueID {
    try step(.activation(.linear(scale: scale, offset: offset)), [x])
  }

  /// `x[rows, columns]` of a rank-2 value.
  mutating func block(_ x: ValueID, rows: Range<Int>, columns: Range<Int>) throws -> ValueID {
    try step(
      .slice(
        StridedSlice(
          begin: [rows.lowerBound, columns.lowerBound], end: [rows.upperBound, columns.upperBound], strides: [1, 1])),
      [x])
  }

  /// Landmarks2TransformMatrix (version 2): from landmarks `[1, N, 3]`, the `[1, 4, 4]` matrix mapping a crop of
  /// `output_width` x `output_height` cells to the landmarks' frame. The rotation `r` is `target_rotation_radians`
  /// minus the angle of the line from landmark `left_rotation_idx` to `right_rotation_idx`; the landmarks
  /// `subset_idxs`, rotated by `r`, bound a box (its size times `scale_x`, `scale_y`); the matrix is
  /// `shift(box centre rotated back) · rotate(-r) · scale(size · scale / output size) · shift(-output size / 2)`.
  /// The rotation's cosine and sine come from the line's direction (dx, dy) / |(dx, dy)| (an angle of 0 when
  /// the two landmarks coincide, as atan2(0, 0)).
  mutating func landmarksToTransformMatrix() throws {
    try requireVersion(2)
    let x = try value(0)
    let shape = builder.type(of: x).shape
    guard shape.count == 2, shape[0] >= 1, shape[1] == 3 else {
      throw fail("landmarks of shape \(shape) ([1, N, 3] only)")
    }
    let reason =
      "\(opName) (operator \(index) and any other) turns the difference of two landmarks' coordinates into a "
      + "rotation, whose sine float16's rounding of the coordinates (2^-11 of a position in pixels) moves far when "
      + "the two lie nearly level"
    if !float32Reasons.contains(where: { $0.hasPrefix(opName + " ") }) { float32Reasons.append(reason) }
    let count = shape[0]
    let options = try flexOptions()
    let left = try flexInt(options, "left_rotation_idx", in: 0...(count - 1))
    let right = try flexInt(options, "right_rotation_idx", in: 0...(count - 1))
    let width = try flexInt(options, "output_width", in: 1...(1 << 16))
    let height = try flexInt(options, "output_height", in: 1...(1 << 16))
    let scaleX = try flexFloat(options, "scale_x")
    let scaleY = try flexFloat(options, "scale_y")
    let target = options["target_rotation_radians"] == nil ? 0 : try flexFloat(options, "target_rotation_radians")
    guard scaleX > 0, scaleY > 0 else { throw fail("scales \(scaleX), \(scaleY) (both must be positive)") }
    guard case .ints(let subset) = options["subset_idxs"], !subset.isEmpty, subset.count <= 1 << 12,
      subset.allSatisfy({ $0 >= 0 && $0 < Int64(count) })
    else {
      throw fail(
        "custom option 'subset_idxs' is \(String(describing: options["subset_idxs"])), not 1 to 4096 indices below \(count)"
      )
    }
    // The x and y of the two rotation landmarks, then of the subset, by a product with a selection.
    let picks = [left, right] + subset.map { Int($0) }
    var selection = [Float](repeating: 0, count: count * picks.count)
    for (column, row) in picks.enumerated() { selection[row * picks.count + column] = 1 }
    let rows = try step(.permute(order: [1, 0]), [x])
    let picked = try step(
      .dense(Dense(kernel: Constant(shape: [count, picks.count], values: selection), bias: nil)), [rows])
    let xs = try block(picked, rows: 0..<1, columns: 0..<picks.count)
    let ys = try block(picked, rows: 1..<2, columns: 0..<picks.count)
    let dx = try binary(
      .subtract, try block(xs, rows: 0..<1, columns: 1..<2), try block(xs, rows: 0..<1, columns: 0..<1))
    let dy = try binary(
      .subtract, try block(ys, rows: 0..<1, columns: 1..<2), try block(ys, rows: 0..<1, columns: 0..<1))
    let length = try step(
      .activation(.unary(UnaryFunction(kind: .sqrt))),
      [try binary(.add, try binary(.multiply, dx, dx), try binary(.multiply, dy, dy))])
    let zero = try constantValue([0], [1, 1])
    let coincide = try binary(.equal, length, zero)
    let divisor = try binary(.add, length, coincide)
    let cosLine = try binary(.divide, try binary(.add, dx, coincide), divisor)
    let sinLine = try binary(.divide, dy, divisor)
    // r = target - line angle: cos r = cos t cos a + sin t sin a, sin r = sin t cos a - cos t sin a.
    let (cosTarget, sinTarget) = (Float(cos(Double(target))), Float(sin(Double(target))))
    let c = try binary(.add, try scaled(cosLine, cosTarget), try scaled(sinLine, sinTarget))
    let s = try binary(.add, try scaled(cosLine, sinTarget), try scaled(sinLine, -cosTarget))
    // The subset rotated by r, and its bounds.
    let sx = try block(xs, rows: 0..<1, columns: 2..<picks.count)
    let sy = try block(ys, rows: 0..<1, columns: 2..<picks.count)
    let rx = try binary(.subtract, try binary(.multiply, sx, c), try binary(.multiply, sy, s))
    let ry = try binary(.add, try binary(.multiply, sx, s), try binary(.multiply, sy, c))
    func bound(_ kind: ReductionKind, _ v: ValueID) throws -> ValueID {
      try step(.reduce(Reduction(kind: kind, axes: [1], keepDims: true)), [v])
    }
    let (maxX, minX, maxY, minY) = (try bound(.max, rx), try bound(.min, rx), try bound(.max, ry), try bound(.min, ry))
    let middleX = try scaled(try binary(.add, minX, maxX), 0.5)
    let middleY = try scaled(try binary(.add, minY, maxY), 0.5)
    // The box centre rotated back by -r.
    let centreX = try binary(.add, try binary(.multiply, middleX, c), try binary(.multiply, middleY, s))
    let centreY = try binary(.subtract, try binary(.multiply, middleY, c), try binary(.multiply, middleX, s))
    let sizeX = try scaled(try binary(.subtract, maxX, minX), scaleX / Float(width))
    let sizeY = try scaled(try binary(.subtract, maxY, minY), scaleY / Float(height))
    let m00 = try binary(.multiply, c, sizeX)
    let m01 = try binary(.multiply, s, sizeY)
    let m10 = try scaled(try binary(.multiply, s, sizeX), -1)
    let m11 = try binary(.multiply, c, sizeY)
    let (shiftX, shiftY) = (-Float(width) / 2, -Float(height) / 2)
    let m03 = try binary(.add, centreX, try binary(.add, try scaled(m00, shiftX), try scaled(m01, shiftY)))
    let m13 = try binary(.add, centreY, try binary(.add, try scaled(m10, shiftX), try scaled(m11, shiftY)))
    let row0 = try step(.concatenate(axis: 1), [m00, m01, zero, m03])
    let row1 = try step(.concatenate(axis: 1), [m10, m11, zero, m13])
    let rest = try constantValue([0, 0, 1, 0, 0, 0, 0, 1], [2, 4])
    _ = try add(.concatenate(axis: 0), [row0, row1, rest])
  }

  /// TransformTensorBilinear (version 2): a feature map `[1, H, W, C]` sampled at `output_height` x
  /// `output_width` points, point (x, y) at `(m00 x + m01 y + m03', m10 x + m11 y + m13')` of the map, the
  /// matrix's translation moved to pixel centres (`m03' = m03 + (m00 + m01) / 2 - 1/2`); a point outside
  /// `[0, W-1] x [0, H-1]` gives 0, one inside the bilinear mean of its four neighbours. Bilinear weights
  /// are the tent `max(0, 1 - |x - column|)` of every column (and row), so the sampling is one product of the
  /// `[points, H·W]` weights with the map `[H·W, C]`.
  mutating func transformTensorBilinear() throws {
    try requireVersion(2)
    let map = try value(0)
    let matrix = try value(1)
    let shape = builder.type(of: map).shape
    guard shape.count == 3 else { throw fail("a feature map of shape \(shape) ([1, H, W, C] only)") }
    guard builder.type(of: matrix).shape == [4, 4] else {
      throw fail("a matrix of shape \(builder.type(of: matrix).shape) ([1, 4, 4] only)")
    }
    let (h, w, channels) = (shape[0], shape[1], shape[2])
    let options = try flexOptions()
    let outH = try flexInt(options, "output_height", in: 1...(1 << 12))
    let outW = try flexInt(options, "output_width", in: 1...(1 << 12))
    let points = outH * outW
    let (weights, overflow) = points.multipliedReportingOverflow(by: h * w)
    guard !overflow, weights <= 1 << 26 else {
      throw fail("\(points) points of a \(h)x\(w) map are too many to sample by one product")
    }
    func entry(_ row: Int, _ column: Int) throws -> ValueID {
      try block(matrix, rows: row..<(row + 1), columns: column..<(column + 1))
    }
    // The sampling points: gx, gy the point's column and row, [1, points].
    var gx = [Float](repeating: 0, count: points)
    var gy = [Float](repeating: 0, count: points)
    for y in 0..<outH {
      for x in 0..<outW {
        gx[y * outW + x] = Float(x)
        gy[y * outW + x] = Float(y)
      }
    }
    let columnsOut = try constantValue(gx, [1, points])
    let rowsOut = try constantValue(gy, [1, points])
    func coordinate(_ row: Int) throws -> ValueID {
      let (a, b, t) = (try entry(row, 0), try entry(row, 1), try entry(row, 3))
      let centred = try binary(.add, t, try scaled(try binary(.add, a, b), 0.5, -0.5))
      let sum = try binary(.add, try binary(.multiply, a, columnsOut), try binary(.multiply, b, rowsOut))
      return try step(.reshape(targetShape: [points, 1]), [try binary(.add, sum, centred)])
    }
    let (tx, ty) = (try coordinate(0), try coordinate(1))
    /// The tent weights of each point over `size` cells, [points, size], and whether it lies in [0, size - 1].
    func tent(_ t: ValueID, size: Int) throws -> (weights: ValueID, inside: ValueID) {
      let cells = try constantValue((0..<size).map(Float.init), [1, size])
      let distance = try step(.activation(.unary(UnaryFunction(kind: .abs))), [try binary(.subtract, t, cells)])
      let weights = try step(.activation(.relu), [try scaled(distance, -1, 1)])
      let low = try binary(.greaterEqual, t, try constantValue([0], [1, 1]))
      let high = try binary(.lessEqual, t, try constantValue([Float(size - 1)], [1, 1]))
      return (weights, try binary(.multiply, low, high))
    }
    let (wx, insideX) = try tent(tx, size: w)
    let (wy, insideY) = try tent(ty, size: h)
    let inside = try binary(.multiply, insideX, insideY)
    let maskedX = try step(.reshape(targetShape: [points, 1, w]), [try binary(.multiply, wx, inside)])
    let rowsY = try step(.reshape(targetShape: [points, h, 1]), [wy])
    let sampling = try step(.reshape(targetShape: [points, h * w]), [try binary(.multiply, rowsY, maskedX)])
    let flat = try step(.reshape(targetShape: [h * w, channels]), [map])
    let sampled = try step(.matMul, [sampling, flat])
    _ = try add(.reshape(targetShape: [outH, outW, channels]), [sampled])
  }

  /// TransformLandmarks (version 2): landmarks `[1, N, D]` (D = 2 or 3) mapped by the first two rows of a
  /// `[1, 4, 4]` matrix: `x' = m00 x + m01 y + m03`, `y' = m10 x + m11 y + m13`, z kept.
  mutating func transformLandmarks() throws {
    try requireVersion(2)
    let landmarks = try value(0)
    let matrix = try value(1)
    let shape = builder.type(of: landmarks).shape
    guard shape.count == 2, shape[1] == 2 || shape[1] == 3 else {
      throw fail("landmarks of shape \(shape) ([1, N, 2] or [1, N, 3] only)")
    }
    guard builder.type(of: matrix).shape == [4, 4] else {
      throw fail("a matrix of shape \(builder.type(of: matrix).shape) ([1, 4, 4] only)")
    }
    let count = shape[0]
    let x = try block(landmarks, rows: 0..<count, columns: 0..<1)
    let y = try block(landmarks, rows: 0..<count, columns: 1..<2)
    func mapped(_ row: Int) throws -> ValueID {
      let a = try block(matrix, rows: row..<(row + 1), columns: 0..<1)
      let b = try block(matrix, rows: row..<(row + 1), columns: 1..<2)
      let t = try block(matrix, rows: row..<(row + 1), columns: 3..<4)
      return try binary(.add, try binary(.add, try binary(.multiply, x, a), try binary(.multiply, y, b)), t)
    }
    var parts = [try mapped(0), try mapped(1)]
    if shape[1] == 3 { parts.append(try block(landmarks, rows: 0..<count, columns: 2..<3)) }
    _ = try add(.concatenate(axis: 1), parts)
  }
}
