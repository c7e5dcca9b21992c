import CoreMLCommon
import ModelIR

extension MILProgramImporter {
  mutating func transpose() throws -> ValueID {
    let x = try tensor("x")
    let rank = shape(x).count
    guard let perm = try ints("perm"), perm.count == rank else { throw invalid("perm must list all \(rank) axes") }
    let order = try perm.map { try axis($0, rank: rank) }
    guard Set(order).count == rank else { throw invalid("perm \(perm) is not a permutation") }
    if order == Array(0..<rank) { return x }
    if order == [0, 2, 3, 1], let source = channelsLastSource[x] { return source }
    let result = try add(.permute(order: order), [x])
    if order == [0, 3, 1, 2] { channelsLastSource[result] = x }
    return result
  }

  mutating func reshapeOperation() throws -> ValueID {
    let x = try tensor("x")
    guard let given = try ints("shape") else { throw invalid("required parameter 'shape' is missing") }
    let total = try elementCount(shape(x), "input shape")
    guard given.filter({ $0 == -1 }).count <= 1, given.allSatisfy({ $0 == -1 || $0 > 0 }) else {
      throw unsupported("shape \(given) (positive sizes and at most one -1 are supported)")
    }
    var target = given
    if let unknown = given.firstIndex(of: -1) {
      let known = given.filter { $0 != -1 }.reduce(1) {
        $0.multipliedReportingOverflow(by: $1).overflow ? Int.max : $0 * $1
      }
      guard known > 0, known <= total, total % known == 0 else {
        throw invalid("cannot reshape \(shape(x)) to \(given)")
      }
      target[unknown] = total / known
    }
    guard try elementCount(target.isEmpty ? [1] : target, "shape") == total else {
      throw invalid("cannot reshape \(shape(x)) to \(given)")
    }
    return try reshape(x, to: target.isEmpty ? [1] : target)
  }

  mutating func pad() throws -> ValueID {
    let x = try tensor("x")
    let s = shape(x)
    let mode = try string("mode", "constant")
    guard mode == "constant" else { throw unsupported("mode '\(mode)' (constant is supported)") }
    guard let pads = try ints("pad"), pads.count % 2 == 0, pads.count <= 2 * s.count,
      GraphLimits.areSizes(pads, minimum: 0)
    else {
      throw invalid("pad must be non-negative [begin, end] pairs for at most \(s.count) axes")
    }
    // The pairs pad the last pads.count / 2 axes.
    let leading = s.count - pads.count / 2
    let before = [Int](repeating: 0, count: leading) + stride(from: 0, to: pads.count, by: 2).map { pads[$0] }
    let after = [Int](repeating: 0, count: leading) + stride(from: 1, to: pads.count, by: 2).map { pads[$0] }
    return try add(
      .constantPad(ConstantPadding(before: before, after: after, value: try float("constant_val", 0))), [x])
  }

  mutating func sliceByIndex() throws -> ValueID {
    let x = try tensor("x")
    let s = shape(x)
    let rank = s.count
    guard let begin = try ints("begin"), let end = try ints("end"), begin.count == rank, end.count == rank else {
      throw invalid("begin and end must have \(rank) values")
    }
    let strides = try ints("stride") ?? [Int](repeating: 1, count: rank)
    func mask(_ key: String) throws -> [Bool] {
      guard let value = try constant(key) else { return [Bool](repeating: false, count: rank) }
      guard value.count == rank else { throw invalid("\(key) must have \(rank) values") }
      return value.asFloats.map { $0 != 0 }
    }
    let beginMask = try mask("begin_mask")
    let endMask = try mask("end_mask")
    let squeezeMask = try mask("squeeze_mask")
    guard strides.count == rank, strides.allSatisfy({ $0 >= 1 }) else {
      throw unsupported("strides \(strides) (positive strides are supported)")
    }
    var b: [Int] = []
    var e: [Int] = []
    for i in 0..<rank {
      func resolve(_ v: Int) -> Int { min(max(v < 0 ? v + s[i] : v, 0), s[i]) }
      var first = beginMask[i] ? 0 : resolve(begin[i])
      var last = endMask[i] ? s[i] : resolve(end[i])
      if squeezeMask[i] {
        first = resolve(begin[i])
        last = first + 1
      }
      guard first < last, last <= s[i] else {
        throw invalid("slice \(begin)..<\(end) selects nothing on axis \(i) of \(s)")
      }
      b.append(first)
      e.append(last)
    }
    var result = x
    if b != [Int](repeating: 0, count: rank) || e != s || strides.contains(where: { $0 != 1 }) {
      result = try add(
        .slice(StridedSlice(begin: b, end: e, strides: strides)), [x],
        suffix: squeezeMask.contains(true) ? "__slice" : "")
    }
    if squeezeMask.contains(true) {
      let r = shape(result)
      var target = r.indices.filter { !squeezeMask[$0] }.map { r[$0] }
      if target.isEmpty { target = [1] }
      result = try reshape(result, to: target)
    }
    return result
  }

  mutating func split() throws {
    let x = try tensor("x")
    let s = shape(x)
    let axis = try axis(try int("axis", 0), rank: s.count)
    var sizes: [Int]
    if let given = try ints("split_sizes") {
      sizes = given
    } else {
      let count = try int("num_splits", operation.outputs.count)
      guard count >= 1, s[axis] % count == 0 else {
        throw invalid("num_splits \(count) does not divide axis \(axis) of \(s)")
      }
      sizes = [Int](repeating: s[axis] / count, count: count)
    }
    guard sizes.allSatisfy({ $0 >= 1 }), sizes.reduce(0, +) == s[axis], sizes.count == operation.outputs.count else {
      throw invalid("split sizes \(sizes) do not cover axis \(axis) of \(s) with \(operation.outputs.count) outputs")
    }
    var start = 0
    for (index, size) in sizes.enumerated() {
      var begin = [Int](repeating: 0, count: s.count)
      var end = s
      begin[axis] = start
      end[axis] = start + size
      let name = try outputName(index)
      values[name] = try builder.add(
        .slice(StridedSlice(begin: begin, end: end, strides: [Int](repeating: 1, count: s.count))),
        name: builder.uniqueName(name), inputs: [x])
      start += size
    }
  }

  /// `gather` with constant indices: slices along the axis, concatenated, then shaped as the indices require.
  mutating func gather() throws -> ValueID {
    if case .name(let name)? = argument("indices"), values[name] != nil, constants[name] == nil {
      // Computed indices into a constant [rows, width] table along axis 0: a row lookup.
      guard let table = try constant("x"), table.type.shape.count == 2, try int("axis", 0) == 0 else {
        throw unsupported("computed indices are supported for a constant [rows, width] table gathered along axis 0")
      }
      return try add(
        .embedding(table: Constant(shape: table.type.shape, values: table.asFloats)), [try tensor("indices")])
    }
    let x = try tensor("x")
    let s = shape(x)
    let axis = try axis(try int("axis", 0), rank: s.count)
    let indicesValue = try requiredConstant("indices")
    guard let indices = indicesValue.asInts, !indices.isEmpty, indices.count <= 4096 else {
      throw unsupported("indices must be 1 to 4096 constant integers")
    }
    let resolved = try indices.map { index -> Int in
      let i = index < 0 ? index + s[axis] : index
      guard i >= 0, i < s[axis] else { throw invalid("index \(index) is outside axis \(axis) of \(s)") }
      return i
    }
    let pieces = try resolved.map { i -> ValueID in
      var begin = [Int](repeating: 0, count: s.count)
      var end = s
      begin[axis] = i
      end[axis] = i + 1
      return try add(
        .slice(StridedSlice(begin: begin, end: end, strides: [Int](repeating: 1, count: s.count))), [x],
        suffix: "__\(i)")
    }
    let joined = pieces.count == 1 ? pieces[0] : try add(.concatenate(axis: axis), pieces, suffix: "__joined")
    var target = Array(s[..<axis]) + indicesValue.type.shape + Array(s[(axis + 1)...])
    if target.isEmpty { target = [1] }
    return try reshape(joined, to: target)
  }

  mutating func tile() throws -> ValueID {
    var x = try tensor("x")
    let s = shape(x)
    guard let reps = try ints("reps"), reps.count == s.count, reps.allSatisfy({ $0 >= 1 && $0 <= 4096 }) else {
      throw invalid("reps must be \(s.count) positive values")
    }
    _ = try elementCount(zip(s, reps).map { $0 * $1 }, "tiled shape")
    for (axis, count) in reps.enumerated() where count > 1 {
      x = try add(.concatenate(axis: axis), [ValueID](repeating: x, count: count), suffix: "__tile\(axis)")
    }
    return x
  }

  // MARK: Compressed constants

  /// The dense float value of a `constexpr_*` operation.
  func decompress() throws -> MILValue {
    switch operation.type {
    case "constexpr_affine_dequantize":
      let data = try requiredConstant("quantized_data")
      let scale = try requiredConstant("scale")
      let zero = try requiredConstant("zero_point")
      guard data.type.dataType == .int8 || data.type.dataType == .uint8 else {
        throw invalid("quantized_data is \(data.type.dataType), int8 or uint8 are defined")
      }
      let shape = data.type.shape
      guard !shape.isEmpty else { throw invalid("quantized_data must have rank 1 or more") }
      let axis = try self.axis(try int("axis", 0), rank: shape.count)
      func perChannel(_ value: MILValue, _ name: String) throws -> [Float] {
        let values = value.asFloats
        guard values.count == 1 || (value.type.shape.count == 1 && values.count == shape[axis]) else {
          throw invalid(
            "\(name) has shape \(value.type.shape); a scalar or one value per element of axis \(axis) of \(shape) is defined"
          )
        }
        return values
      }
      let scales = try perChannel(scale, "scale")
      let zeros = try perChannel(zero, "zero_point")
      let inner = shape.suffix(from: min(axis + 1, shape.count)).reduce(1, *)
      let codes = data.integers
      let floats = codes.indices.map { i -> Float in
        let channel = shape.isEmpty ? 0 : (i / inner) % shape[axis]
        return scales[scales.count == 1 ? 0 : channel] * (Float(codes[i]) - zeros[zeros.count == 1 ? 0 : channel])
      }
      return MILValue(type: MILTensorType(dataType: scale.type.dataType, shape: shape), floats: floats)

    case "constexpr_lut_to_dense":
      let indices = try requiredConstant("indices")
      let lut = try requiredConstant("lut")
      if let shapeValue = try constant("shape") {
        // iOS 16: indices packed in uint8 bytes, lut [2^n], the output shape given.
        guard let shape = shapeValue.asInts, shape.allSatisfy({ $0 > 0 }) else {
          throw invalid("shape must be positive sizes")
        }
        let count = try elementCount(shape, "shape")
        let entries = lut.count
        guard lut.type.shape.count == 1, [2, 4, 16, 64, 256].contains(entries), indices.type.dataType == .uint8 else {
          throw invalid("lut must hold 2, 4, 16, 64 or 256 values and indices be uint8 bytes")
        }
        let bits = Int.bitWidth - (entries - 1).leadingZeroBitCount
        guard indices.count == (count * bits + 7) / 8 else {
          throw invalid("\(indices.count) index bytes for \(count) \(bits)-bit indices")
        }
        let table = lut.asFloats
        let bytes = indices.integers
        let floats = (0..<count).map { index -> Float in
          var code = 0
          for bit in 0..<bits {
            let position = index * bits + bit
            code |= Int(bytes[position / 8] >> Int64(position % 8) & 1) << bit
          }
          return table[code]
        }
        return MILValue(type: MILTensorType(dataType: lut.type.dataType, shape: shape), floats: floats)
      }
      // iOS 18: indices [shape] of uintN, lut [blocks per axis..., 2^n, vector size 1].
      let shape = indices.type.shape
      let l = lut.type.shape
      guard l.count == shape.count + 2, l.last == 1, !indices.type.dataType.isFloat else {
        throw unsupported("lut of shape \(l) for indices \(shape) (scalar palettes, vector size 1, are supported)")
      }
      let entries = l[shape.count]
      var blocks: [Int] = []
      for i in shape.indices {
        guard l[i] >= 1, shape[i] % l[i] == 0 else {
          throw invalid("lut \(l) does not divide indices \(shape) into blocks")
        }
        blocks.append(shape[i] / l[i])
      }
      let table = lut.asFloats
      var floats = [Float](repeating: 0, count: indices.count)
      var coordinates = [Int](repeating: 0, count: shape.count)
      for index in 0..<indices.count {
        var remainder = index
        for i in shape.indices.reversed() {
          coordinates[i] = remainder % shape[i]
          remainder /= shape[i]
        }
        var palette = 0
        for i in shape.indices { palette = palette * l[i] + coordinates[i] / blocks[i] }
        let code = Int(indices.integers[index])
        guard code >= 0, code < entries else { throw invalid("index \(code) is outside the \(entries)-entry palette") }
        floats[index] = table[palette * entries + code]
      }
      return MILValue(type: MILTensorType(dataType: lut.type.dataType, shape: shape), floats: floats)

    case "constexpr_blockwise_shift_scale":
      let data = try requiredConstant("data")
      let scale = try requiredConstant("scale")
      let offset = try constant("offset")
      let shape = data.type.shape
      guard scale.type.shape.count == shape.count, offset.map({ $0.type.shape == scale.type.shape }) ?? true else {
        throw invalid("scale \(scale.type.shape) and offset must have the rank of data \(shape) and the same shape")
      }
      var blocks: [Int] = []
      for i in shape.indices {
        let n = scale.type.shape[i]
        guard n >= 1, shape[i] % n == 0 else {
          throw invalid("scale \(scale.type.shape) does not divide data \(shape) into blocks")
        }
        blocks.append(shape[i] / n)
      }
      let scales = scale.asFloats
      let offsets = offset?.asFloats
      let codes = data.asFloats
      var floats = [Float](repeating: 0, count: codes.count)
      var coordinates = [Int](repeating: 0, count: shape.count)
      for index in codes.indices {
        var remainder = index
        for i in shape.indices.reversed() {
          coordinates[i] = remainder % shape[i]
          remainder /= shape[i]
        }
        var block = 0
        for i in shape.indices { block = block * scale.type.shape[i] + coordinates[i] / blocks[i] }
        floats[index] = scales[block] * (codes[index] - (offsets?[block] ?? 0))
      }
      return MILValue(type: MILTensorType(dataType: scale.type.dataType, shape: shape), floats: floats)

    case "constexpr_sparse_to_dense":
      // iOS 16: the non-zero values in order, a bit per element (least significant bit first within each
      // byte, padding bits zero), and the output shape.
      let data = try requiredConstant("nonzero_data")
      let mask = try requiredConstant("mask")
      let shapeValue = try requiredConstant("shape")
      guard let shape = shapeValue.asInts, !shape.isEmpty, shape.allSatisfy({ $0 > 0 }) else {
        throw invalid("shape must be positive sizes")
      }
      let count = try elementCount(shape, "shape")
      guard mask.type.dataType == .uint8, mask.type.shape.count == 1, data.type.shape.count == 1 else {
        throw invalid("mask must be uint8 bytes and nonzero_data a vector")
      }
      let bytes = mask.integers
      guard bytes.count == (count + 7) / 8 else {
        throw invalid("\(bytes.count) mask bytes for \(count) elements (needs \((count + 7) / 8))")
      }
      let values = data.asFloats
      var floats = [Float](repeating: 0, count: count)
      var next = 0
      for index in 0..<(bytes.count * 8) where (bytes[index / 8] >> Int64(index % 8)) & 1 == 1 {
        guard index < count else { throw invalid("mask bit \(index) is set beyond the \(count) elements") }
        guard next < values.count else {
          throw invalid("the mask sets more bits than nonzero_data's \(values.count) values")
        }
        floats[index] = values[next]
        next += 1
      }
      guard next == values.count else {
        throw invalid("the mask sets \(next) bits for \(values.count) values of nonzero_data")
      }
      return MILValue(type: MILTensorType(dataType: data.type.dataType, shape: shape), floats: floats)

    default: throw unsupported("the operation type is not supported")
    }
  }
}
