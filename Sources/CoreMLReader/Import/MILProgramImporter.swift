import CoreMLCommon
import Foundation
import ModelIR

/// Builds the IR graph of an ML Program's `main` function.
///
/// Values keep MIL's layout (`[N, C, H, W]` for images, batch axis included). Convolution, pooling and the
/// other spatial operations run in the IR's channels-last form, so each is wrapped in transposes; a transpose
/// back to channels-last reuses the value it came from, so chains of spatial operations stay channels-last.
/// Each operation follows Apple's MIL operation documentation; an operation type or parameter value outside
/// what the importer runs is a `CoreMLReaderError.unsupportedOperation` naming the operation.
public struct MILProgramImporter {
  let spec: CoreMLModelSpec
  let program: MILProgram
  let path: String
  var builder = GraphBuilder()
  /// MIL value name to IR value (tensors computed at run time, and constants once a tensor operand).
  var values: [String: ValueID] = [:]
  /// MIL value name to its constant value (`const` and `constexpr_*` outputs).
  var constants: [String: MILValue] = [:]
  /// The operation that made each constant, for the origin of its node.
  var constantOrigins: [String: LayerOrigin] = [:]
  /// A channels-first value to the channels-last value it was transposed from.
  var channelsLastSource: [ValueID: ValueID] = [:]
  /// Tensor lists by MIL value name: the IR value of each element written so far (control flow).
  var lists: [String: [ValueID?]] = [:]
  /// Operations imported from loop blocks so far (bounded by `maxLoopOperations`).
  var unrolledOperations = 0
  /// The operation being imported.
  var operation = MILOperation(type: "", name: "", inputs: [:], outputs: [])

  /// Builds the IR graph of a decoded ML Program specification.
  public static func importModel(_ spec: CoreMLModelSpec, path: String) throws -> CoreMLModel {
    guard let program = spec.program else {
      throw CoreMLReaderError.invalidProgram(
        path: path, operation: "program", detail: "the specification holds no ML Program")
    }
    var importer = MILProgramImporter(spec: spec, program: program, path: path)
    do { return try importer.run() } catch let error as GraphError {
      // Graph errors outside an operation (inputs, outputs) name the program.
      throw CoreMLReaderError.invalidProgram(path: path, operation: "program", detail: "\(error)")
    }
  }

  init(spec: CoreMLModelSpec, program: MILProgram, path: String) {
    self.spec = spec
    self.program = program
    self.path = path
  }

  mutating func run() throws -> CoreMLModel {
    guard program.opsetVersion != nil else {
      throw CoreMLReaderError.invalidProgram(
        path: path, operation: "program",
        detail:
          "unknown opset '\(program.opset)' (CoreML\(MILProgram.knownOpsets.lowerBound) to CoreML\(MILProgram.knownOpsets.upperBound) are read)"
      )
    }
    guard spec.specificationVersion >= 6 else {
      // [rule MLPROGRAM-SPEC] ML Programs exist from specification version 6 (iOS 15) on.
      throw CoreMLReaderError.invalidProgram(
        path: path, operation: "program",
        detail: "specification version \(spec.specificationVersion); ML Programs need 6 or later")
    }
    var inputs: [CoreMLInput] = []
    var imageValues: [String: String] = [:]
    for input in program.inputs {
      let (description, last) = try addInput(input)
      inputs.append(description)
      if let last { imageValues[input.name] = last }
    }
    var probabilitiesValue: String?
    for op in program.operations {
      operation = op
      builder.origin = LayerOrigin(name: op.name, type: op.type)
      do {
        if op.type == "classify" {
          guard case .name(let probabilities)? = op.inputs["probabilities"]?.first,
            values[probabilities] != nil || constants[probabilities] != nil
          else {
            throw unsupported("needs a probabilities tensor computed before it")
          }
          probabilitiesValue = probabilities
          if op.outputs.count == 2 { values[op.outputs[1].name] = try tensor("probabilities") }
          continue
        }
        try importOperation(op)
      } catch let error as GraphError {
        throw CoreMLReaderError.invalidProgram(
          path: path, operation: "\(op.type) operation '\(op.name)'", detail: "\(error)")
      }
    }
    builder.origin = nil
    operation = MILOperation(type: "", name: "", inputs: [:], outputs: [])

    var blobs = values
    for (input, last) in imageValues { blobs[input] = values[last] }

    let labels = spec.stringClassLabels.isEmpty ? spec.int64ClassLabels.map(String.init) : spec.stringClassLabels
    let isClassifier = probabilitiesValue != nil
    var outputs: [ValueID] = []
    var names: [String] = []
    var probabilities: String?
    for feature in spec.outputs {
      if isClassifier && feature.name == spec.predictedFeatureName { continue }
      var name = feature.name
      if isClassifier, case .dictionary = feature.kind, let probabilitiesValue {
        name = probabilitiesValue
        probabilities = feature.name
      }
      guard var value = values[name] else {
        throw CoreMLReaderError.invalidProgram(
          path: path, operation: "program", detail: "output '\(feature.name)' is not produced by any operation")
      }
      if outputs.contains(value) || program.inputs.contains(where: { $0.name == feature.name }) {
        value = try builder.add(
          .reshape(targetShape: builder.type(of: value).shape), name: builder.uniqueName(feature.name + "__copy"),
          inputs: [value])
      }
      outputs.append(value)
      names.append(feature.name)
    }
    guard !outputs.isEmpty else {
      throw CoreMLReaderError.invalidProgram(
        path: path, operation: "program", detail: "the model has no tensor outputs")
    }
    var graph = builder.build(outputs: outputs).pruned()
    for (name, id) in zip(names, outputs) where graph[id].name != name {
      try graph.claimName(name, for: id)
    }
    return CoreMLModel(
      spec: spec, graph: graph, inputs: inputs, classLabels: labels, probabilitiesOutput: probabilities, blobs: blobs,
      channelsLastValues: channelsLastSource)
  }

  /// The default shape a flexible input's description declares (an image's `[1, C, height, width]`);
  /// nil for a fixed input or one without a default.
  static func defaultShape(of feature: CoreMLModelSpec.Feature) -> [Int]? {
    switch feature.kind {
    case .multiArray(let shape, _):
      guard !(feature.sizeRanges.isEmpty && feature.enumeratedShapes.isEmpty), !shape.isEmpty else { return nil }
      return shape
    case .image(let width, let height, let colorSpace):
      guard !(feature.imageSizeRanges.isEmpty && feature.enumeratedImageSizes.isEmpty), width > 0, height > 0,
        let space = ImageColorSpace(rawValue: colorSpace)
      else { return nil }
      return [1, space.channels, height, width]
    default: return nil
    }
  }

  /// Adds a function input; for an image input also finds the scale and bias operations coremltools puts
  /// first (`mul` by a scalar, then `add` or `sub` of a scalar or per-channel constant) and returns the name
  /// of the value after them.
  mutating func addInput(_ input: MILNamedType) throws -> (CoreMLInput, String?) {
    guard let feature = spec.inputs.first(where: { $0.name == input.name }) else {
      throw CoreMLReaderError.invalidProgram(
        path: path, operation: "program", detail: "function input '\(input.name)' has no model input description")
    }
    var shape = input.type.shape
    // A flexible input (ranges or enumerated sizes in the description) leaves the function's dimensions
    // unknown: the program is read at the description's default size (the one Core ML uses when the app
    // gives no other), each size the function does fix kept.
    if input.type.isTensor, shape.contains(where: { $0 <= 0 }), let fallback = Self.defaultShape(of: feature),
      fallback.count == shape.count, zip(shape, fallback).allSatisfy({ $0 <= 0 || $0 == $1 })
    {
      shape = fallback
    }
    guard input.type.isTensor, !shape.isEmpty, shape.allSatisfy({ $0 > 0 }) else {
      throw CoreMLReaderError.invalidProgram(
        path: path, operation: "program", detail: "function input '\(input.name)' has no fixed tensor shape (\(shape))")
    }
    _ = try elementCount(shape, "input '\(input.name)' shape")
    // A float16 input (iOS 16 and later) is rounded to float16 like every float16 value.
    let value = try builder.addInput(
      name: input.name, type: TensorType(shape, dataType: input.type.dataType == .float16 ? .float16 : .float32),
      optional: feature.isOptional)
    values[input.name] = value
    guard case .image(let width, let height, let colorSpace) = feature.kind else {
      return (CoreMLInput(name: input.name, shape: shape), nil)
    }
    guard let space = ImageColorSpace(rawValue: colorSpace), shape == [1, space.channels, height, width] else {
      throw CoreMLReaderError.invalidProgram(
        path: path, operation: "program",
        detail: "image input '\(input.name)' (\(colorSpace), \(width)x\(height)) has MIL shape \(shape)")
    }
    let channels = space.channels
    var scale: Float = 1
    var biases = [Float](repeating: 0, count: channels)
    var last = input.name
    func consumer(of name: String) -> MILOperation? {
      program.operations.first { op in op.inputs.values.contains { $0.contains(.name(name)) } }
    }
    func otherOperand(_ op: MILOperation, _ name: String) -> MILValue? {
      for key in ["x", "y"] {
        guard let argument = op.inputs[key]?.first, argument != .name(name) else { continue }
        switch argument {
        case .value(let value): return value
        case .name(let other): return program.producer(of: other)?.value
        }
      }
      return nil
    }
    if let op = consumer(of: last), op.type == "mul", let factor = otherOperand(op, last), factor.count == 1,
      let output = op.outputs.first
    {
      scale = factor.asFloats[0]
      last = output.name
    }
    if let op = consumer(of: last), op.type == "add" || (op.type == "sub" && op.inputs["x"]?.first == .name(last)),
      let bias = otherOperand(op, last), bias.count == 1 || bias.count == channels, let output = op.outputs.first
    {
      let sign: Float = op.type == "sub" ? -1 : 1
      biases =
        bias.count == 1 ? [Float](repeating: sign * bias.asFloats[0], count: channels) : bias.asFloats.map { sign * $0 }
      last = output.name
    }
    return (CoreMLInput(name: input.name, shape: shape, colorSpace: space, scale: scale, networkBiases: biases), last)
  }

  // MARK: Helpers

  func unsupported(_ detail: String) -> CoreMLReaderError {
    .unsupportedOperation(path: path, type: operation.type, name: operation.name, detail: detail)
  }

  func invalid(_ detail: String) -> CoreMLReaderError {
    .invalidProgram(path: path, operation: "\(operation.type) operation '\(operation.name)'", detail: detail)
  }

  func shape(_ value: ValueID) -> [Int] { builder.type(of: value).shape }

  /// The number of elements of a shape, or an error when it is not a plausible size.
  func elementCount(_ shape: [Int], _ name: String) throws -> Int {
    var count = 1
    for size in shape {
      let (next, overflow) = count.multipliedReportingOverflow(by: size)
      guard size > 0, size <= GraphLimits.maxSize, !overflow, next <= GraphLimits.maxElementCount else {
        throw invalid("\(name) \(shape) is not a valid shape")
      }
      count = next
    }
    return count
  }

  /// The name of output `index` of the current operation.
  func outputName(_ index: Int = 0) throws -> String {
    guard index < operation.outputs.count else {
      throw invalid("has \(operation.outputs.count) outputs, needs \(index + 1)")
    }
    return operation.outputs[index].name
  }

  /// Adds an IR node named after the operation's first output (plus `suffix` for helper nodes).
  mutating func add(_ op: ModelIR.Operation, _ inputs: [ValueID], suffix: String = "") throws -> ValueID {
    let base = (operation.outputs.first?.name ?? operation.name) + suffix
    return try builder.add(op, name: builder.uniqueName(base), inputs: inputs)
  }

  /// Records the IR value of output `index`.
  mutating func define(_ value: ValueID, _ index: Int = 0) throws {
    values[try outputName(index)] = value
  }

  mutating func reshape(_ value: ValueID, to target: [Int]) throws -> ValueID {
    if shape(value) == target { return value }
    _ = try elementCount(target, "target shape")
    return try add(.reshape(targetShape: target), [value], suffix: "__reshape")
  }

  /// The single argument of parameter `key`.
  func argument(_ key: String) -> MILArgument? {
    guard let arguments = operation.inputs[key], arguments.count == 1 else { return nil }
    return arguments[0]
  }

  /// The constant value of parameter `key`, or nil when it is absent (an error when it is not constant).
  func constant(_ key: String) throws -> MILValue? {
    guard let argument = argument(key) else {
      if let arguments = operation.inputs[key], arguments.count > 1 {
        throw invalid("parameter '\(key)' has \(arguments.count) arguments, takes 1")
      }
      return nil
    }
    switch argument {
    case .value(let value): return value
    case .name(let name):
      guard let value = constants[name] else {
        if values[name] != nil {
          throw unsupported("parameter '\(key)' must be a constant, '\(name)' is computed at run time")
        }
        throw invalid("parameter '\(key)' reads '\(name)', which nothing defined before it")
      }
      return value
    }
  }

  /// Whether parameter `key` is one argument known before run time (an inline value or a const's output).
  func isConstant(_ key: String) -> Bool {
    switch argument(key) {
    case .value?: return true
    case .name(let name)?: return constants[name] != nil
    case nil: return false
    }
  }

  func requiredConstant(_ key: String) throws -> MILValue {
    guard let value = try constant(key) else { throw invalid("required parameter '\(key)' is missing") }
    return value
  }

  func ints(_ key: String) throws -> [Int]? {
    guard let value = try constant(key) else { return nil }
    guard let ints = value.asInts, ints.allSatisfy({ abs($0) <= 1 << 30 }) else {
      throw invalid("parameter '\(key)' is not a list of integers")
    }
    return ints
  }

  func int(_ key: String, _ fallback: Int) throws -> Int {
    guard let values = try ints(key) else { return fallback }
    guard values.count == 1 else { throw invalid("parameter '\(key)' has \(values.count) values, takes 1") }
    return values[0]
  }

  func float(_ key: String, _ fallback: Float) throws -> Float {
    guard let value = try constant(key) else { return fallback }
    guard value.count == 1 else { throw invalid("parameter '\(key)' has \(value.count) values, takes 1") }
    let result = value.asFloats[0]
    guard result.isFinite else { throw invalid("parameter '\(key)' is \(result)") }
    return result
  }

  /// A required float parameter.
  func float(_ key: String) throws -> Float {
    guard try constant(key) != nil else { throw invalid("required parameter '\(key)' is missing") }
    return try float(key, 0)
  }

  func bool(_ key: String, _ fallback: Bool) throws -> Bool {
    guard let value = try constant(key) else { return fallback }
    guard value.type.dataType == .bool, value.count == 1 else { throw invalid("parameter '\(key)' is not a bool") }
    return value.integers[0] != 0
  }

  func string(_ key: String, _ fallback: String) throws -> String {
    guard let value = try constant(key) else { return fallback }
    guard value.type.dataType == .string, value.strings.count == 1 else {
      throw invalid("parameter '\(key)' is not a string")
    }
    return value.strings[0]
  }

  /// The IR value of a tensor parameter; a constant becomes a constant node the first time it is used.
  mutating func tensor(_ key: String) throws -> ValueID {
    guard let argument = argument(key) else {
      throw invalid("required tensor parameter '\(key)' is missing or has several arguments")
    }
    return try tensor(argument, key: key)
  }

  mutating func tensor(_ argument: MILArgument, key: String) throws -> ValueID {
    switch argument {
    case .name(let name):
      if let value = values[name] { return value }
      guard let value = constants[name] else {
        throw invalid("parameter '\(key)' reads '\(name)', which nothing defined before it")
      }
      let node = try constantNode(value, name: name, origin: constantOrigins[name])
      values[name] = node
      return node
    case .value(let value):
      return try constantNode(
        value, name: builder.uniqueName("\(operation.outputs.first?.name ?? operation.name)__\(key)"))
    }
  }

  mutating func constantNode(_ value: MILValue, name: String, origin: LayerOrigin? = nil) throws -> ValueID {
    guard value.type.dataType.isFloat || value.type.dataType.bits > 0, value.type.dataType != .string else {
      throw unsupported("a \(value.type.dataType) constant cannot be a tensor operand")
    }
    let shape = value.type.shape.isEmpty ? [1] : value.type.shape
    guard shape.allSatisfy({ $0 > 0 }), shape.reduce(1, *) == value.count else {
      throw invalid("constant '\(name)' of shape \(value.type.shape) is empty")
    }
    let saved = builder.origin
    // A constant operand belongs to its const (or constexpr) operation, an inline value to the operation reading it.
    builder.origin = origin ?? saved ?? LayerOrigin(name: name, type: "const")
    defer { builder.origin = saved }
    return try builder.add(
      .constant(Constant(shape: shape, values: value.asFloats)), name: builder.uniqueName(name), inputs: [])
  }

  /// A possibly negative axis resolved against `rank`.
  func axis(_ value: Int, rank: Int) throws -> Int {
    let resolved = value < 0 ? value + rank : value
    guard resolved >= 0, resolved < rank else { throw invalid("axis \(value) is outside rank \(rank)") }
    return resolved
  }

  // MARK: Layout

  /// A MIL `[N, C, H, W]` value as an IR `[N, H, W, C]` value.
  mutating func channelsLast(_ value: ValueID) throws -> ValueID {
    if let source = channelsLastSource[value] { return source }
    guard shape(value).count == 4 else { throw invalid("needs a rank-4 [N, C, H, W] input, got \(shape(value))") }
    return try add(.permute(order: [0, 2, 3, 1]), [value], suffix: "__to_nhwc")
  }

  /// An IR `[N, H, W, C]` value back as a MIL `[N, C, H, W]` value.
  mutating func channelsFirst(_ value: ValueID) throws -> ValueID {
    let result = try add(.permute(order: [0, 3, 1, 2]), [value])
    channelsLastSource[result] = value
    return result
  }

  /// Runs a channels-last IR operation on a MIL `[N, C, H, W]` value (or `[N, C, L]`, as a height-1 image).
  mutating func spatial(_ input: ValueID, _ makeOperation: (_ nhwc: [Int]) throws -> ModelIR.Operation) throws
    -> ValueID
  {
    let s = shape(input)
    if s.count == 3 {
      let image = try reshape(input, to: [s[0], s[1], 1, s[2]])
      let hwc = try channelsLast(image)
      let result = try add(try makeOperation(shape(hwc)), [hwc], suffix: "__nhwc")
      let r = shape(result)
      let chw = try add(.permute(order: [0, 3, 1, 2]), [result], suffix: "__to_nchw")
      return try add(.reshape(targetShape: [r[0], r[3], r[2]]), [chw])
    }
    let hwc = try channelsLast(input)
    return try channelsFirst(try add(try makeOperation(shape(hwc)), [hwc], suffix: "__nhwc"))
  }

  /// A shape-preserving elementwise operation, run channels-last when every input has a channels-last
  /// source of the same shape (so chains of convolutions and activations need no transposes).
  mutating func layoutPreserving(_ op: ModelIR.Operation, _ inputs: [ValueID]) throws -> ValueID {
    let shapes = inputs.map(shape)
    let sources = inputs.compactMap { channelsLastSource[$0] }
    if sources.count == inputs.count, shapes.allSatisfy({ $0 == shapes[0] }), shapes[0].count == 4 {
      return try channelsFirst(try add(op, sources, suffix: "__nhwc"))
    }
    return try add(op, inputs)
  }
}
