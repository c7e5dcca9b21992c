import Foundation
import ModelIR

/// A signal cut into overlapping frames by a GATHER of constant indices (what `tf.signal.frame` and
/// `tf.signal.stft` become in a TFLite file), kept unmaterialized until a real DFT reads it: the frames, a
/// window and the DFT are together one strided convolution of the signal (its kernel `window[n] ·
/// cos(2πkn/N)` for the real part, `-window[n] · sin(2πkn/N)` for the imaginary part).
struct FramedSignal {
  /// The signal, an IR value of any shape read flat.
  var signal: ValueID
  var start: Int
  var step: Int
  var length: Int
  var count: Int
  /// Per-sample factors (a Hann window), or nil.
  var window: [Float]?
  /// The DFT length once RFFT2D has read the frames (`length` samples, zero-padded to it), else nil.
  var fftLength: Int?
}

extension TFLiteContext {
  /// GATHER: rows of a constant table by computed indices (an embedding); or frames of a computed signal by
  /// constant indices `a · f + b + j` (frame f, sample j), kept for the DFT that reads them.
  mutating func gatherAny() throws {
    if isConstant(0) {
      try gather()
      return
    }
    let x = try value(0)
    let shape = builder.type(of: x).shape
    let indices = try constant(1)
    let options = try options(23)
    var axis = Int(try options?.i32(0, "GatherOptions.axis") ?? 0)
    if axis < 0 { axis += shape.count + 1 }
    guard axis == 1, shape.count == 2, indices.shape.count == 2 || (indices.shape.count == 3 && indices.shape[0] == 1)
    else {
      throw fail(
        "gathering axis \(axis) of a computed \(shape) tensor by constant \(indices.shape) indices (frames of a signal only)"
      )
    }
    let (frames, samples) = (indices.shape[indices.shape.count - 2], indices.shape[indices.shape.count - 1])
    let width = shape[1]
    let values = try indices.values.map { try integer($0) }
    guard frames >= 1, samples >= 1, let base = values.first else { throw fail("no frames") }
    let step = frames > 1 ? values[samples] - base : 1
    for f in 0..<frames {
      for j in 0..<samples where values[f * samples + j] != base + step * f + j {
        throw fail("indices that are not frames (a · f + b + j) of the signal")
      }
    }
    guard base >= 0, step >= 1, base + step * (frames - 1) + samples <= shape[0] else {
      throw fail("frames beyond the signal's \(shape[0]) rows")
    }
    framed[op.outputs[0]] = FramedSignal(
      signal: x, start: base * width, step: step * width, length: samples * width, count: frames, window: nil,
      fftLength: nil)
  }

  /// RESHAPE, SQUEEZE, EXPAND_DIMS of frames: the same frames (only their unit axes, or one frame's rows
  /// joined, may change). True when the input was frames.
  mutating func framedReshape(code: Int) throws -> Bool {
    guard let frames = framed[op.inputs[0]] else { return false }
    // SQUEEZE and EXPAND_DIMS move unit axes only; a RESHAPE must keep one frame (or spectrum) per row:
    // its last axis the frame's samples (the bins), the others holding the frames.
    if code == 22, op.inputs.count > 1, op.inputs[1] >= 0 {
      let target = try ints(1)
      let last = frames.fftLength.map { $0 / 2 + 1 } ?? frames.length
      let rows = target.dropLast()
      let known = rows.filter { $0 >= 0 }.reduce(1) { $0 * max($1, 1) }
      guard target.last == last, rows.filter({ $0 < 0 }).count <= 1,
        rows.contains(-1) ? frames.count % max(known, 1) == 0 : known == frames.count
      else { throw fail("a reshape of \(frames.count) frames of \(last) values to \(target) (one frame per row only)") }
    }
    framed[op.outputs[0]] = frames
    return true
  }

  /// MUL of frames by a constant window (one factor per sample of a frame).
  mutating func framedMultiply() throws -> Bool {
    for (position, other) in [(0, 1), (1, 0)] {
      guard position < op.inputs.count, var frames = framed[op.inputs[position]] else { continue }
      let window = try constant(other)
      guard frames.fftLength == nil, window.values.count == frames.length,
        window.shape.dropLast().allSatisfy({ $0 == 1 })
      else { throw fail("frames multiplied by a \(window.shape) constant (a window of \(frames.length) samples only)") }
      frames.window = zip(frames.window ?? window.values.map { _ in 1 }, window.values).map { $0 * $1 }
      framed[op.outputs[0]] = frames
      return true
    }
    return false
  }

  /// RFFT2D of frames: `fft_length` `[1, N]` (one DFT per frame, N at least the frame), read by a later
  /// CAST/REAL, IMAG or COMPLEX_ABS.
  mutating func rfft() throws {
    guard var frames = framed[op.inputs[0]], frames.fftLength == nil else {
      throw fail("an FFT of a tensor that is not frames of a signal (tf.signal.stft's form is converted)")
    }
    let lengths = try ints(1)
    guard lengths.count == 2, lengths[0] == 1, lengths[1] >= frames.length else {
      throw fail("fft_length \(lengths) for frames of \(frames.length) samples (one DFT per frame)")
    }
    frames.fftLength = lengths[1]
    framed[op.outputs[0]] = frames
  }

  /// The real part (CAST of a complex tensor to float, REAL), the imaginary part (IMAG) or the magnitude
  /// (COMPLEX_ABS) of a spectrum: strided convolutions of the signal.
  mutating func spectrum(_ part: SpectrumPart) throws {
    guard let frames = framed[op.inputs[0]], let n = frames.fftLength else {
      if part == .real, tensors[op.inputs[0]].type != .complex64 {
        try cast()
        return
      }
      throw fail("the \(part) of a complex tensor that is not a spectrum of frames")
    }
    let bins = n / 2 + 1
    let (kernelSize, overflow) = frames.length.multipliedReportingOverflow(by: bins)
    guard !overflow, kernelSize <= 1 << 26, n <= 1 << 20 else {
      throw fail("a DFT of \(n) points over frames of \(frames.length) samples is too large to write as weights")
    }
    let total = builder.type(of: frames.signal).shape.reduce(1, *)
    var signal = try add(.reshape(targetShape: [1, total, 1]), [frames.signal], final: false)
    if frames.start > 0 {
      signal = try add(
        .slice(StridedSlice(begin: [0, frames.start, 0], end: [1, total, 1], strides: [1, 1, 1])), [signal],
        final: false)
    }
    let window = frames.window ?? [Float](repeating: 1, count: frames.length)
    func transform(_ sine: Bool) throws -> ValueID {
      var kernel = [Float](repeating: 0, count: frames.length * bins)
      for t in 0..<frames.length {
        for k in 0..<bins {
          let angle = 2 * Double.pi * Double((k * t) % n) / Double(n)
          kernel[t * bins + k] = Float(Double(window[t]) * (sine ? -sin(angle) : cos(angle)))
        }
      }
      let conv = Convolution2D(
        kernel: Constant(shape: [1, frames.length, 1, bins], values: kernel), bias: nil, strides: [1, frames.step],
        dilations: [1, 1], padding: .valid, groups: 1)
      var y = try add(.convolution2D(conv), [signal], final: false)
      let produced = builder.type(of: y).shape[1]
      guard produced >= frames.count else { throw fail("the signal holds \(produced) frames, not \(frames.count)") }
      if produced > frames.count {
        y = try add(
          .slice(StridedSlice(begin: [0, 0, 0], end: [1, frames.count, bins], strides: [1, 1, 1])), [y], final: false)
      }
      return y
    }
    var result: ValueID
    switch part {
    case .real: result = try transform(false)
    case .imaginary: result = try transform(true)
    case .magnitude:
      let (re, im) = (try transform(false), try transform(true))
      let re2 = try add(.elementwise(.multiply), [re, re], final: false)
      let im2 = try add(.elementwise(.multiply), [im, im], final: false)
      let sum = try add(.elementwise(.add), [re2, im2], final: false)
      result = try add(.activation(.unary(UnaryFunction(kind: .sqrt))), [sum], final: false)
    }
    // [1, frames, bins] as the output's axes (its unit axes where the file keeps them).
    let signature = output.shapeSignature ?? output.shape
    var shape = Array(signature.dropFirst()).map { $0 < 0 ? frames.count : $0 }
    if shape.last != bins || shape.reduce(1, *) != frames.count * bins { shape = [frames.count, bins] }
    _ = try add(.reshape(targetShape: shape), [result], checked: false)
  }

  enum SpectrumPart: String {
    case real = "real part"
    case imaginary = "imaginary part"
    case magnitude
  }

  /// MEAN, REDUCE_MAX, REDUCE_MIN and SUM over constant axes (not the batch).
  mutating func reduce(_ kind: ReductionKind) throws {
    let x = try value(0)
    let rank = builder.type(of: x).shape.count + 1
    let axes = try ints(1).map { $0 < 0 ? $0 + rank : $0 }
    guard !axes.isEmpty, axes.allSatisfy({ $0 >= 1 && $0 < rank }) else {
      throw fail("a reduction over axes \(axes) of rank \(rank) (not the batch)")
    }
    let keep = try options(27)?.bool(0, "ReducerOptions.keep_dims") ?? false
    _ = try add(.reduce(Reduction(kind: kind, axes: Set(axes).map { $0 - 1 }.sorted(), keepDims: keep)), [x])
  }

  /// POW by a constant exponent (one value).
  mutating func power() throws {
    let x = try value(0)
    let exponent = try constant(1)
    guard exponent.values.count == 1, let alpha = exponent.values.first, alpha.isFinite else {
      throw fail("an exponent of shape \(exponent.shape) (one constant only)")
    }
    _ = try add(.activation(.unary(UnaryFunction(kind: .power, alpha: alpha))), [x])
  }

  /// REVERSE_V2 along the last axis: a product with the reversing permutation (exact).
  mutating func reverse() throws {
    let x = try value(0)
    let shape = builder.type(of: x).shape
    let axes = try ints(1).map { $0 < 0 ? $0 + shape.count + 1 : $0 }
    guard axes == [shape.count], let size = shape.last else {
      throw fail("reversing axes \(axes) of rank \(shape.count + 1) (the last axis only)")
    }
    var kernel = [Float](repeating: 0, count: size * size)
    for i in 0..<size { kernel[i * size + (size - 1 - i)] = 1 }
    _ = try add(.dense(Dense(kernel: Constant(shape: [size, size], values: kernel), bias: nil)), [x])
  }
}
