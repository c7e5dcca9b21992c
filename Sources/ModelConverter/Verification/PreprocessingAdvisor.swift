import ModelIR
import ReferenceRuntime

/// Looks for signs that an image input's preprocessing does not fit the model, when no expected
/// preprocessing was given to check it against.
///
/// Two signs: the scaler leaves pixels at 0-255 or blows them past that range (most image networks are
/// trained on 0-1 or -1..1 inputs); and the first BatchNormalization sees activations whose spread or
/// centre is an order of magnitude away from its own moving variance and mean, which record what the
/// layer saw in training.
enum PreprocessingAdvisor {
  /// How far (as a ratio of standard deviations, or of offsets to the moving standard deviation) the
  /// first BatchNormalization's input may be from its training statistics before a warning.
  static let factor: Float = 10

  /// Warnings for image input `input` of `graph` (the IR's channels-last layout) given its preprocessing and the channel
  /// order the network receives.
  static func warnings(
    graph: Graph, input: ValueID, preprocessing image: ImagePreprocessing, colorSpace: ImageColorSpace
  ) -> [String] {
    var warnings: [String] = []
    let biases = image.networkBiases(channels: colorSpace.channels)
    let description = PreprocessingParity.describe(colorSpace: colorSpace.rawValue, scale: image.scale, biases: biases)
    if image.scale == 1 && biases.allSatisfy({ $0 == 0 }) {
      warnings.append(
        "no image scale or bias: the network sees raw pixels 0-255 (\(description)); image networks are usually trained on x / 255 or x / 127.5 - 1"
      )
    } else {
      let ends = biases.flatMap { [$0, 255 * image.scale + $0] }
      if let largest = ends.map(abs).max(), largest > 300 {
        warnings.append(
          "the network input reaches \(PreprocessingParity.format(largest)), beyond the pixel range (\(description)); is the image scale inverted?"
        )
      }
    }
    if let statistics = firstBatchNormalization(graph: graph, input: input, image: image, colorSpace: colorSpace) {
      warnings += statistics
    }
    return warnings
  }

  /// Compares what the first BatchNormalization after `input` sees on smooth synthetic images with its
  /// moving statistics.
  static func firstBatchNormalization(
    graph: Graph, input: ValueID, image: ImagePreprocessing, colorSpace: ImageColorSpace
  ) -> [String]? {
    guard
      let node = graph.nodes.first(where: { node in
        if case .batchNormalization = node.operation { return depends(node.inputs[0], on: input, in: graph) }
        return false
      }), case .batchNormalization(let norm) = node.operation
    else { return nil }
    let observed = node.inputs[0]
    let part = graph.truncated(at: [observed])
    guard part.inputs.count == 1 else { return nil }
    let shape = graph[input].type.shape
    guard shape.count == 3 else { return nil }
    let runtime = Interpreter(graph: part)
    var generator = SplitMix64(seed: 0x5EED)
    let c = norm.channels
    let biases = image.networkBiases(channels: colorSpace.channels)
    var sum = [Double](repeating: 0, count: c)
    var squares = [Double](repeating: 0, count: c)
    var count = 0.0
    for _ in 0..<4 {
      let pixels = smoothImage(shape: shape, &generator)
      let x = Tensor(shape: shape, values: pixels.enumerated().map { image.scale * $1 + biases[$0 % biases.count] })
      let y = runtime.run([x])[0]
      guard y.shape.last == c else { return nil }
      for (index, value) in y.values.enumerated() {
        sum[index % c] += Double(value)
        squares[index % c] += Double(value) * Double(value)
      }
      count += Double(y.values.count / c)
    }
    var spreadRatios: [Float] = []
    var offsets: [Float] = []
    for k in 0..<c where norm.variance.values[k] > 0 {
      let mean = sum[k] / count
      let variance = max(squares[k] / count - mean * mean, 0)
      let trained = Double(norm.variance.values[k] + norm.epsilon).squareRoot()
      spreadRatios.append(Float(variance.squareRoot() / trained))
      offsets.append(Float(abs(mean - Double(norm.mean.values[k])) / trained))
    }
    guard !spreadRatios.isEmpty else { return nil }
    let spread = median(spreadRatios)
    let offset = median(offsets)
    let layer = node.origin?.name ?? node.name
    let description = PreprocessingParity.describe(colorSpace: colorSpace.rawValue, scale: image.scale, biases: biases)
    var warnings: [String] = []
    if spread >= factor || spread <= 1 / factor {
      warnings.append(
        "the first BatchNormalization ('\(layer)') sees activations \(PreprocessingParity.format(spread)) times as spread as in training "
          + "(its moving variance) on typical pixels: the image scale looks wrong (\(description))")
    }
    if offset >= factor {
      warnings.append(
        "the first BatchNormalization ('\(layer)') sees activations centred \(PreprocessingParity.format(offset)) training standard deviations "
          + "from its moving mean on typical pixels: the image bias looks wrong (\(description))")
    }
    return warnings
  }

  static func depends(_ value: ValueID, on input: ValueID, in graph: Graph) -> Bool {
    graph.truncated(at: [value]).nodes.contains { $0.inputs.contains(input) } || value == input
  }

  static func median(_ values: [Float]) -> Float { values.sorted()[values.count / 2] }

  /// Photo-like pixels: a random 4x4 grid per channel, bilinearly enlarged, plus a little noise.
  static func smoothImage(shape: [Int], _ generator: inout SplitMix64) -> [Float] {
    let (h, w, c) = (shape[0], shape[1], shape[2])
    let grid = (0..<(16 * c)).map { _ in generator.nextUnit() * 255 }
    var pixels = [Float](repeating: 0, count: h * w * c)
    for y in 0..<h {
      let gy = Float(y) / Float(max(h - 1, 1)) * 3
      let y0 = min(Int(gy), 2)
      let fy = gy - Float(y0)
      for x in 0..<w {
        let gx = Float(x) / Float(max(w - 1, 1)) * 3
        let x0 = min(Int(gx), 2)
        let fx = gx - Float(x0)
        for k in 0..<c {
          func at(_ a: Int, _ b: Int) -> Float { grid[(a * 4 + b) * c + k] }
          let top = at(y0, x0) * (1 - fx) + at(y0, x0 + 1) * fx
          let bottom = at(y0 + 1, x0) * (1 - fx) + at(y0 + 1, x0 + 1) * fx
          let noise = (generator.nextUnit() - 0.5) * 32
          pixels[(y * w + x) * c + k] = min(max(top * (1 - fy) + bottom * fy + noise, 0), 255)
        }
      }
    }
    return pixels
  }
}
