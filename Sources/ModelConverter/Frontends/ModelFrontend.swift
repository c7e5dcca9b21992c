import Foundation
import ModelFormats
import ModelIR

/// A reader of one source format: it recognises its files (by the sniffer's kind), imports them into
/// the IR with the source options, and describes them for `inspect`.
///
/// A frontend's graph is in the IR's own conventions (channels-last `[H, W, C]` images, `[T, D]`
/// sequences and `[D]` vectors, no batch axis), whatever its format keeps, so that the converter,
/// the passes, the writers and the verifier never ask which format a graph came from. Its tensors
/// carry the source's own names (layer outputs, blobs), which is what layer-by-layer `verify` pairs.
public protocol ModelFrontend: Sendable {
  /// The format's name in messages and metadata: "keras", "coreml".
  var name: String { get }
  /// The format as users name it: "Keras".
  var displayName: String { get }
  /// The file name extensions its files usually have, without the dot (files are recognised by their
  /// content; these are for messages and help): ["h5", "keras"].
  var fileExtensions: [String] { get }
  /// How its models convert, for the command line's help: a sentence or two (what it reads, what the
  /// converted model keeps at its interface).
  var summary: String { get }
  /// The file kinds this frontend reads.
  var kinds: Set<ModelFileKind> { get }
  /// Whether this frontend reads a file the sniffer found to be of `kind`, whose first bytes (up to
  /// `FormatSniffer.headerSize`, as the sniffer read them; none for a folder) are `header`. By default, whether `kinds` holds `kind`; a format the
  /// sniffer does not know recognises its own signature.
  func recognizes(kind: ModelFileKind, header: [UInt8]) -> Bool
  /// Reads the model at `url` into the IR.
  func importSource(at url: URL, options: SourceOptions) throws -> ImportedSource
  /// Describes the model without converting it.
  func inspect(at url: URL, options: SourceOptions) throws -> ModelInspection
}

extension ModelFrontend {
  public func recognizes(kind: ModelFileKind, header: [UInt8]) -> Bool { kinds.contains(kind) }

  /// The format as users name it, for messages: "Keras (.h5, .keras)".
  public var formatDescription: String {
    "\(displayName) (" + fileExtensions.map { "." + $0 }.joined(separator: ", ") + ")"
  }
}

/// How a source model is read: names and shapes for its inputs and outputs and what to do with parts
/// the reader does not know. These options mean the same for every frontend.
public struct SourceOptions: Sendable, Equatable {
  /// New names for the inputs, in the source's order; nil keeps the frontend's default.
  public var inputNames: [String]?
  /// New names for the outputs, in the source's order.
  public var outputNames: [String]?
  /// Shapes for inputs with unknown dimensions, by source or new name.
  public var inputShapes: [String: [Int]]
  /// Whether layers or operators the reader does not know become custom layers (their code lives in the
  /// app) instead of an error.
  public var unknownLayersAsCustom: Bool
  /// Settings that only one frontend understands (the Keras reader's conversions for its custom layer
  /// classes), by type; a frontend refuses settings it cannot apply.
  public var settings: FrontendSettings
  /// The architecture file when the model file holds weights only (Keras' `model.to_json()`).
  public var architecture: URL?

  public init(
    inputNames: [String]? = nil, outputNames: [String]? = nil, inputShapes: [String: [Int]] = [:],
    unknownLayersAsCustom: Bool = false, settings: FrontendSettings = FrontendSettings(), architecture: URL? = nil
  ) {
    self.inputNames = inputNames
    self.outputNames = outputNames
    self.inputShapes = inputShapes
    self.unknownLayersAsCustom = unknownLayersAsCustom
    self.settings = settings
    self.architecture = architecture
  }
}

/// A setting only one frontend understands, carried through the neutral options by its type.
public protocol FrontendSetting: Sendable {
  /// Whether two settings of this type mean the same (closures cannot be compared: by what they name).
  func isSame(as other: any FrontendSetting) -> Bool
}

extension FrontendSetting where Self: Equatable {
  public func isSame(as other: any FrontendSetting) -> Bool { (other as? Self) == self }
}

/// Frontend settings by type: at most one of each.
public struct FrontendSettings: Sendable, Equatable {
  private var values: [ObjectIdentifier: any FrontendSetting] = [:]

  public init(_ settings: [any FrontendSetting] = []) {
    for setting in settings { values[ObjectIdentifier(type(of: setting))] = setting }
  }

  /// The setting of type `type`, if one was given.
  public subscript<Setting: FrontendSetting>(_ type: Setting.Type) -> Setting? {
    get { values[ObjectIdentifier(type)] as? Setting }
    set { values[ObjectIdentifier(type)] = newValue }
  }

  public var isEmpty: Bool { values.isEmpty }

  public static func == (a: Self, b: Self) -> Bool {
    a.values.count == b.values.count
      && a.values.allSatisfy { key, value in b.values[key].map { value.isSame(as: $0) } ?? false }
  }
}

/// A source model read into the IR, with what it declares that a conversion keeps by default.
/// A value a stateful model keeps between predictions, as an input (its value before) and an output (after)
/// of the graph, by position, with the value a stream starts from (in the graph input's shape).
public struct StreamingState: Sendable, Equatable {
  public var input: Int
  public var output: Int
  public var initial: [Float]

  public init(input: Int, output: Int, initial: [Float]) {
    self.input = input
    self.output = output
    self.initial = initial
  }
}

public struct ImportedSource: Sendable {
  /// The frontend that read it ("keras", "coreml").
  public var format: String
  /// What kind of model it is, in the format's terms: "keras", "neuralNetwork", "mlProgram".
  public var modelKind: String
  /// Whether the format declares image inputs with their own preprocessing (Core ML); in one that does
  /// not (Keras), an input takes network values and the preprocessing comes from the user.
  public var declaresImageInputs = false
  public var path: String
  /// Files and folders besides `path` that the import read (external data, an architecture file):
  /// no output may replace or lie inside any of them.
  public var additionalPaths: [String] = []
  /// Every file or folder the import read, `path` first.
  public var readPaths: [String] { [path] + additionalPaths }
  /// The inputs' names in the source file, in the graph's input order (the graph holds the names given
  /// in `SourceOptions.inputNames`); empty when they are the graph's.
  public var inputSourceNames: [String] = []
  /// Inputs the source itself declares with several sizes (a flexible Core ML model), in the terms
  /// `SourceOptions.inputShapes` takes for them; the graph is at the size read (the default unless given).
  public var flexibleInputs: [String: FlexibleInputShape] = [:]
  /// The model in the IR's conventions, with the final input and output names.
  public var graph: Graph
  /// Image inputs the source already declares, by (new) input name, with their preprocessing; the
  /// graph input is the tensor after it.
  public var imageInputs: [String: ImagePreprocessing] = [:]
  /// Outputs the source declares as images, by (new) output name, with their colour space; the graph
  /// output is the `[H, W, C]` tensor Core ML turns into pixels.
  public var imageOutputs: [String: ImageColorSpace] = [:]
  /// Multiarray inputs and outputs to declare as the source declared them, by feature name.
  public var declaredArrays: [String: DeclaredArray] = [:]
  /// Whether reference files (`verify --reference`) hold inputs as the source declares them (saved from
  /// the source's own runtime: onnxruntime's `[N, C, H, W]`) rather than in the graph's layout (Keras').
  public var referenceInputsAsDeclared = false
  /// A classifier the source already is: its labels, predicted feature name and probabilities output.
  public var classifier: ClassifierSettings?
  /// The source's own description (author, license, ...), kept unless the options replace it.
  public var metadata = ModelMetadata()
  /// What to record about the source in the converted model's user-defined metadata.
  public var provenance: [String: String] = [:]
  /// The verification rule the source's own storage calls for, when looser than float32's (a Core ML
  /// source with float16 or quantized weights).
  public var tolerance: VerificationTolerance?
  /// The version of the tool that wrote the source, when recorded (Keras' `keras_version`).
  public var producerVersion: String?
  /// What the import decided where the file left something open (a batch size, sizes taken from its
  /// metadata, names Core ML cannot use), said in the conversion's summary.
  public var notes: [String] = []
  /// Why the source's computation needs float32 (values float16's rounding would move too far, in the
  /// frontend's words): an ML Program computes in float32 unless float16 is asked for.
  public var float32Reasons: [String] = []
  /// Values a stateful source keeps from one prediction to the next (a streaming model's buffers), each an
  /// input and an output of the graph; a reference file without those inputs is a stream (`verify`).
  public var streamingStates: [StreamingState] = []
  /// The inputs and outputs as the source declares them, in its order (with the names the options
  /// gave); nil for a format that declares only arrays, whose interface is the graph's own inputs and outputs.
  public var declaredInterface: SourceInterface?

  /// What a conversion must keep: the declared interface, or the graph's inputs and outputs by name.
  public var interface: SourceInterface {
    if let declaredInterface { return declaredInterface }
    func features(_ ids: [ValueID]) -> [InterfaceFeature] {
      ids.map { InterfaceFeature(name: graph[$0].name, kind: .array, shape: graph[$0].type.shape, detail: "float32") }
    }
    return SourceInterface(inputs: features(graph.inputs), outputs: features(graph.outputs), declaresKinds: false)
  }

  public init(format: String, modelKind: String, path: String, graph: Graph) {
    self.format = format
    self.modelKind = modelKind
    self.path = path
    self.graph = graph
  }
}
