import CoreMLFormat
import ModelConverter
import ModelIR
import ReferenceRuntime

/// How much a mutation changes what a Core ML file computes, in our float32 runtime.
public enum MutationEffect {
  /// Runs the original and the mutated file on the same random inputs and returns the largest absolute
  /// difference at the mutation's blob (at the model outputs for model-level mutations, or when the blob
  /// is not computed), divided by max(1, largest |original value|) there.
  ///
  /// 0 means the mutation is equivalent on these inputs. A mutated file that no longer reads, imports
  /// or has the original's shapes counts as `infinity`. For `swappedLabels` the result is 1 when the
  /// label lists differ, else 0.
  ///
  /// - Parameters:
  ///   - sequenceLengths: time steps of classic-mapping sequence inputs, by input name (1 when absent).
  ///   - samples: how many random inputs to try.
  public static func measure(
    original: [UInt8], mutated: [UInt8], mutation: CoreMLMutation, sequenceLengths: [String: Int] = [:],
    samples: Int = 4, seed: UInt64 = 1
  ) throws -> Float {
    let originalSpec = try CoreMLSpecReader.read(original, path: "<original>")
    guard let mutatedSpec = try? CoreMLSpecReader.read(mutated, path: "<mutated>") else { return .infinity }
    if mutation.kind == .swappedLabels {
      let same =
        originalSpec.stringClassLabels == mutatedSpec.stringClassLabels
        && originalSpec.int64ClassLabels == mutatedSpec.int64ClassLabels
      return same ? 0 : 1
    }
    let a = try CoreMLGraphImporter.importModel(originalSpec, path: "<original>", sequenceLengths: sequenceLengths)
    let unsupported = Interpreter.unsupportedOperations(in: a.graph)
    guard unsupported.isEmpty else { throw CoreMLMutationError.notRunnable(unsupported) }
    guard
      let b = try? CoreMLGraphImporter.importModel(mutatedSpec, path: "<mutated>", sequenceLengths: sequenceLengths),
      Interpreter.unsupportedOperations(in: b.graph).isEmpty,
      a.graph.inputs.map({ a.graph[$0].type.shape }) == b.graph.inputs.map({ b.graph[$0].type.shape }),
      a.graph.outputs.count == b.graph.outputs.count
    else { return .infinity }

    // A blob between two spatial layers is computed only in its channels-last form (the transpose is pruned).
    func resolve(_ model: CoreMLModel, _ name: String) -> ValueID? {
      guard let id = model.blobs[name] else { return nil }
      let computed = model.graph.inputs.contains(id) || model.graph.nodes.contains { $0.output == id }
      if !computed, let hwc = model.channelsLastValues[id] { channelsLast.insert(hwc) }
      return computed ? id : model.channelsLastValues[id]
    }
    var channelsLast = Set<ValueID>()
    // Preprocessing mutations change the network input itself: measure them there, since a saturated
    // output can hide them (the blob of an image input is its value after the scaler).
    let preprocessing: Set<CoreMLMutation.Kind> = [.doubledImageScale, .movedImageBias, .swappedColorOrder]
    let blob = mutation.blob ?? (preprocessing.contains(mutation.kind) ? a.inputs.first { $0.image != nil }?.name : nil)
    let blobs = blob.flatMap { name in resolve(a, name).flatMap { x in resolve(b, name).map { (x, $0) } } }
    let (lastA, lastB) = (
      blobs.map { channelsLast.contains($0.0) } ?? false, blobs.map { channelsLast.contains($0.1) } ?? false
    )
    let runA = Interpreter(graph: a.graph, observed: blobs.map { [$0.0] } ?? [])
    let runB = Interpreter(graph: b.graph, observed: blobs.map { [$0.1] } ?? [])
    var generator = SplitMix64(seed: seed)
    var largestDifference: Float = 0
    var largestValue: Float = 0
    for _ in 0..<max(samples, 1) {
      let drawn = draw(a, &generator)
      let (outputsA, observedA) = runA.runObserving(zip(drawn, a.inputs).map { channelOrder($0, $1) })
      let (outputsB, observedB) = runB.runObserving(zip(drawn, b.inputs).map { channelOrder($0, $1) })
      var pairs = zip(outputsA, outputsB).map { ($0, $1) }
      if let (x, y) = blobs, let valueA = observedA[x], let valueB = observedB[y] {
        // Compare in the blob's own [..., C, H, W] order, whichever form each import computed.
        pairs = [(lastA ? channelsFirst(valueA) : valueA, lastB ? channelsFirst(valueB) : valueB)]
      }
      for (x, y) in pairs {
        // Size-1 axes do not change the element order (the importer may keep or drop a leading one).
        guard x.shape.filter({ $0 != 1 }) == y.shape.filter({ $0 != 1 }) else { return .infinity }
        for (p, q) in zip(x.values, y.values) {
          if p.isNaN || q.isNaN {
            if p.isNaN != q.isNaN { return .infinity }
            continue
          }
          if p.isFinite { largestValue = max(largestValue, abs(p)) }
          let difference = p == q ? 0 : abs(p - q)
          if difference.isNaN { return .infinity }
          largestDifference = max(largestDifference, difference)
        }
      }
    }
    return largestDifference / max(1, largestValue)
  }

  /// A channels-last `[..., H, W, C]` tensor in `[..., C, H, W]` order.
  static func channelsFirst(_ x: Tensor) -> Tensor {
    guard x.shape.count >= 3 else { return x }
    let (h, w, c) = (x.shape[x.shape.count - 3], x.shape[x.shape.count - 2], x.shape[x.shape.count - 1])
    let image = h * w * c
    var values = x.values
    for start in stride(from: 0, to: x.values.count, by: image) {
      for y in 0..<h {
        for xx in 0..<w {
          for k in 0..<c { values[start + (k * h + y) * w + xx] = x.values[start + (y * w + xx) * c + k] }
        }
      }
    }
    return Tensor(shape: Array(x.shape.dropLast(3)) + [c, h, w], values: values)
  }

  /// One random input per graph input, in the original model's layout: pixels 0-255 (RGB order for colour
  /// images), token ids below an Embedding's vocabulary, or values uniform in [-1, 1].
  static func draw(_ model: CoreMLModel, _ generator: inout SplitMix64) -> [Tensor] {
    zip(model.graph.inputs, model.inputs).map { id, input in
      let shape = model.graph[id].type.shape
      let count = shape.reduce(1, *)
      let values: [Float]
      if input.image != nil {
        values = (0..<count).map { _ in Float(generator.next() % 256) }
      } else if let vocabulary = vocabulary(of: id, in: model.graph), vocabulary > 0 {
        values = (0..<count).map { _ in Float(generator.next() % UInt64(vocabulary)) }
      } else {
        values = (0..<count).map { _ in generator.nextUnit() * 2 - 1 }
      }
      return Tensor(shape: shape, values: values)
    }
  }

  /// The RGB pixels as the model's network receives them: reversed along the channel axis for BGR.
  static func channelOrder(_ tensor: Tensor, _ input: CoreMLInput) -> Tensor {
    guard input.colorSpace == .bgr, tensor.shape.count >= 3 else { return tensor }
    let axis = tensor.shape.count - 3
    let channels = tensor.shape[axis]
    let inner = tensor.shape[(axis + 1)...].reduce(1, *)
    let outer = tensor.shape[..<axis].reduce(1, *)
    var values = tensor.values
    for o in 0..<outer {
      for c in 0..<channels {
        let from = (o * channels + (channels - 1 - c)) * inner
        let to = (o * channels + c) * inner
        for i in 0..<inner { values[to + i] = tensor.values[from + i] }
      }
    }
    return Tensor(shape: tensor.shape, values: values)
  }

  /// The vocabulary size of the Embedding that reads this input (through reshapes), if any.
  static func vocabulary(of id: ValueID, in graph: Graph) -> Int? {
    var frontier: Set<ValueID> = [id]
    for _ in 0..<8 {
      var next: Set<ValueID> = []
      for node in graph.nodes where node.inputs.contains(where: frontier.contains) {
        switch node.operation {
        case .embedding(let table): return table.shape.first
        case .reshape: next.insert(node.output)
        default: break
        }
      }
      guard !next.isEmpty else { return nil }
      frontier = next
    }
    return nil
  }
}
