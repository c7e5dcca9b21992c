import CoreMLCommon
import ModelIR

/// A Core ML neural network read into the IR, with what a caller needs to feed and read it.
///
/// The graph keeps Core ML's own layout (channels first; batch axes kept under exact mapping) for its
/// inputs and outputs; spatial layers inside it are wrapped in transposes to the IR's channels-last form.
public struct CoreMLModel: Sendable {
  /// The decoded specification the graph was built from.
  public var spec: CoreMLModelSpec
  public var graph: Graph
  /// One per graph input, in the same order.
  public var inputs: [CoreMLInput]
  /// The class labels of a classifier (int64 labels as text), else empty.
  public var classLabels: [String]
  /// The graph output holding a classifier's probabilities, if any.
  public var probabilitiesOutput: String?
  /// Every blob the layers write (and each input, after its preprocessing), by name, to its graph value.
  /// Blobs that no output depends on are pruned from the graph and never computed.
  public var blobs: [String: ValueID] = [:]
  /// A channels-first blob value to the channels-last `[H, W, C]` (or `[S, H, W, C]`) value it was
  /// transposed from around a spatial layer; the transpose itself is pruned when nothing reads it.
  public var channelsLastValues: [ValueID: ValueID] = [:]
  /// Optional state inputs (`<layer>_h_in`, `<layer>_c_in`) that the recurrent layers read as zeros, as
  /// Core ML does when they are not given; the graph keeps them as inputs nothing reads.
  public var zeroStateInputs: Set<String> = []

  /// Whether inputs use the classic rank-5 mapping (rank-3 `[C, H, W]` tensors everywhere).
  public var usesRank5Mapping: Bool { !spec.exactArrayMapping }
}
