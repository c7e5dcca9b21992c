import CoreMLFormat
import Foundation
import ModelIR

/// A Rescaling or Normalization layer right after an image input, expressed as Core ML's image scaler.
///
/// Core ML's scaler is `scale * pixel + bias[channel]`: one scale for every channel. A first layer
/// `y = a * x + o[channel]` (Rescaling, or a Normalization whose variance is the same for every
/// channel) merges into it, so the model runs on raw pixels and the layer disappears.
struct InputPreprocessingFold {
  /// The node that is folded away.
  let nodeIndex: Int
  let scale: Float
  /// One offset per channel in the network's channel order, or a single shared one.
  let offsets: [Float]

  /// The foldable first layer of graph input `input`, if it has one.
  static func find(input: ValueID, in graph: Graph) -> InputPreprocessingFold? {
    let readers = graph.nodes.indices.filter { graph.nodes[$0].inputs.contains(input) }
    guard readers.count == 1, !graph.outputs.contains(input), let index = readers.first,
      !graph.outputs.contains(graph.nodes[index].output)
    else { return nil }
    switch graph.nodes[index].operation {
    case .activation(.linear(let scale, let offset)) where scale != 0:
      return InputPreprocessingFold(nodeIndex: index, scale: scale, offsets: [offset])
    case .batchNormalization(let norm):
      let factors = (0..<norm.channels).map {
        norm.gamma.values[$0] / (norm.variance.values[$0] + norm.epsilon).squareRoot()
      }
      guard let first = factors.first, first != 0, factors.allSatisfy({ abs($0 - first) <= 1e-6 * abs(first) }) else {
        return nil
      }
      let offsets = (0..<norm.channels).map { norm.beta.values[$0] - factors[$0] * norm.mean.values[$0] }
      return InputPreprocessingFold(nodeIndex: index, scale: first, offsets: offsets)
    default:
      return nil
    }
  }

  /// `preprocessing` followed by this layer, as one scaler.
  func combined(with preprocessing: ImagePreprocessing, channels: Int) -> ImagePreprocessing {
    var result = preprocessing
    func offset(_ channel: Int) -> Float { offsets.count == 1 ? offsets[0] : offsets[min(channel, offsets.count - 1)] }
    result.scale = scale * preprocessing.scale
    if channels == 1 {
      result.grayBias = scale * preprocessing.grayBias + offset(0)
    } else {
      // Network channel 0 is red for RGB, blue for BGR.
      let (first, last) =
        preprocessing.isBGR ? (\ImagePreprocessing.blueBias, \ImagePreprocessing.redBias) : (\.redBias, \.blueBias)
      result[keyPath: first] = scale * preprocessing[keyPath: first] + offset(0)
      result.greenBias = scale * preprocessing.greenBias + offset(1)
      result[keyPath: last] = scale * preprocessing[keyPath: last] + offset(2)
    }
    return result
  }

  /// The preprocessing the Keras model expects before this layer, given the converted model's scaler
  /// (`verify` feeds the source that, since the Keras model still applies the layer itself).
  func undone(scale convertedScale: Float, biases convertedBiases: [Float]) -> (scale: Float, biases: [Float]) {
    let biases = convertedBiases.enumerated().map { channel, bias in
      (bias - (offsets.count == 1 ? offsets[0] : offsets[min(channel, offsets.count - 1)])) / scale
    }
    return (convertedScale / scale, biases)
  }
}

/// The image inputs of a conversion and their preprocessing, which `InputPreprocessingFoldPass` updates
/// as it folds a first layer into an input's scaler.
final class ImageInputLedger: @unchecked Sendable {
  private let lock = NSLock()
  private var preprocessing: [String: ImagePreprocessing]
  private var folded: Set<String> = []

  init(_ preprocessing: [String: ImagePreprocessing]) { self.preprocessing = preprocessing }

  /// Every image input's preprocessing, with what was folded into it.
  var current: [String: ImagePreprocessing] { lock.withLock { preprocessing } }

  /// The inputs not folded yet, by name.
  var unfolded: [(String, ImagePreprocessing)] {
    lock.withLock { preprocessing.filter { !folded.contains($0.key) }.sorted { $0.key < $1.key } }
  }

  func record(_ name: String, _ combined: ImagePreprocessing) {
    lock.withLock {
      preprocessing[name] = combined
      folded.insert(name)
    }
  }
}

/// Folds a scale-and-offset first layer (Keras Rescaling or Normalization, a Core ML scale) of each image
/// input into Core ML's image scaler, once per input (`verify` undoes one such layer on the source side).
struct InputPreprocessingFoldPass: GraphPass {
  let name = "fold-input-preprocessing"
  let ledger: ImageInputLedger

  func run(_ graph: inout Graph) throws {
    for (name, given) in ledger.unfolded {
      guard let id = graph.inputs.first(where: { graph[$0].name == name }),
        let fold = InputPreprocessingFold.find(input: id, in: graph)
      else { continue }
      ledger.record(name, fold.combined(with: given, channels: graph[id].type.shape.last ?? 1))
      graph = graph.bypassing(nodeAt: fold.nodeIndex)
    }
  }
}
