import ModelIR

/// A TFLite model's first subgraph in the IR.
public struct TFLiteImportedGraph: Sendable {
  public var graph: Graph
  /// The TFLite input and output tensor names, in the graph's order.
  public var inputNames: [String]
  public var outputNames: [String]
  /// The file's shapes of the inputs and outputs (batch axis included).
  public var inputShapes: [[Int]]
  public var outputShapes: [[Int]]
  /// What the import decided where the file left something open.
  public var notes: [String] = []
  /// The IR shape each computed tensor got, by tensor name.
  public var tensorShapes: [String: [Int]] = [:]
  /// The variables carried from one invocation to the next, as the last inputs and outputs (in that order).
  public var states: [TFLiteStreamingState] = []
  /// Why the graph needs float32 (an ML Program computes in float32 unless float16 is asked for).
  public var float32Reasons: [String] = []
}

/// Imports subgraph 0 of a `TFLiteModel`, operator by operator through `TFLiteOperatorRegistry`.
///
/// TFLite is channels last like the IR; its tensors carry a batch axis the IR leaves out, so every tensor
/// computed at run time must have a batch of 1 and loses that axis (`[1, H, W, C]` is `[H, W, C]`), and
/// operator axes are shifted by one. Constants keep their shapes (weights), and a constant an elementwise
/// operator broadcasts against an activation of its rank loses its leading 1 too. Weights stored as float16,
/// or as int8 with scales (dynamic-range quantization, a DEQUANTIZE of a constant), are read as the float32
/// values they stand for, exactly.
public enum TFLiteGraphImporter {
  public static func importGraph(_ model: TFLiteModel) throws -> TFLiteImportedGraph {
    var context = try TFLiteContext(model: model)
    // Every operator the registry does not know is named at once (custom ones by their code).
    var unknown: [String] = []
    for op in model.subgraph.operators {
      let code = model.operatorCodes[op.opcodeIndex]
      if TFLiteOperatorRegistry.entry(for: code) == nil {
        if !unknown.contains(code.name) { unknown.append(code.name) }
      }
    }
    guard unknown.isEmpty else { throw TFLiteFormatError.unsupportedOperators(path: model.path, operators: unknown) }
    for (index, op) in model.subgraph.operators.enumerated() {
      let code = model.operatorCodes[op.opcodeIndex]
      guard let entry = TFLiteOperatorRegistry.entry(for: code), !context.absorbed.contains(index) else {
        continue
      }
      context.index = index
      context.op = op
      context.opName = code.name
      if try context.foldIfConstant(code: code.builtin) { continue }
      try entry.handler(&context)
    }
    var outputs: [ValueID] = []
    for index in model.subgraph.outputs {
      guard var value = context.values[index] else {
        throw TFLiteFormatError.invalid(
          path: model.path, field: "SubGraph.outputs",
          detail: "output '\(model.subgraph.tensors[index].name)' is computed by no operator")
      }
      // A quantized output gives the integers' scale back (q = real / scale + zero point), unrounded.
      let tensor = model.subgraph.tensors[index]
      if let q = tensor.quantization, tensor.type != .float32, q.scales.count == 1, q.scales[0] > 0 {
        value = try context.builder.add(
          .activation(.linear(scale: 1 / q.scales[0], offset: Float(q.zeroPoints[0]))),
          name: context.builder.uniqueName(tensor.name + "__quantized"), inputs: [value])
        context.notes.append(
          "output '\(tensor.name)' is \(tensor.type.name) in the file: the converted model gives real / \(q.scales[0]) + \(q.zeroPoints[0]), unrounded, in float32"
        )
      }
      outputs.append(value)
    }
    // Each variable read before it is assigned is a state: its value after the invocation is an output.
    var states: [TFLiteStreamingState] = []
    for (name, _, inputName) in context.stateInputs {
      guard let assigned = context.variableValues[name], let initial = context.initialValues[name] else { continue }
      let outputName = context.builder.uniqueName(name + "_out")
      outputs.append(try context.builder.add(.activation(.identity), name: outputName, inputs: [assigned]))
      states.append(TFLiteStreamingState(variable: name, input: inputName, output: outputName, initial: initial))
    }
    var shapes: [String: [Int]] = [:]
    for (index, id) in context.values {
      shapes[model.subgraph.tensors[index].name] = context.builder.type(of: id).shape
    }
    var graph = context.builder.build(outputs: outputs)
    let tensors = model.subgraph.tensors
    for (id, index) in zip(graph.outputs, model.subgraph.outputs) where graph[id].name != tensors[index].name {
      try? graph.claimName(tensors[index].name, for: id)
    }
    let stateShapes = states.map { [1] + $0.initial.shape }
    return TFLiteImportedGraph(
      graph: graph.pruned(), inputNames: model.subgraph.inputs.map { tensors[$0].name } + states.map(\.input),
      outputNames: model.subgraph.outputs.map { tensors[$0].name } + states.map(\.output),
      inputShapes: model.subgraph.inputs.map { tensors[$0].shape } + stateShapes,
      outputShapes: model.subgraph.outputs.map { tensors[$0].shape } + stateShapes, notes: context.notes,
      tensorShapes: shapes, states: states, float32Reasons: context.float32Reasons)
  }
}

/// What an operator handler reads and writes: the operator's tensors as IR values or constants.
public struct TFLiteContext {
  let model: TFLiteModel
  var builder = GraphBuilder()
  /// Tensor index to IR value, for tensors computed at run time (and graph inputs).
  var values: [Int: ValueID] = [:]
  /// Constant tensors a DEQUANTIZE of a constant made (float16 or int8 weights), or operators on constants
  /// computed here (shape arithmetic), by tensor index; the shapes of those computed here.
  var folded: [Int: [Float]] = [:]
  var foldedShapes: [Int: [Int]] = [:]
  /// Tensors whose first axis is not a batch of 1 (a Tensordot's `[rows, K]` reshape): their IR value holds
  /// every axis.
  var unbatched: Set<Int> = []
  /// Frames of a signal a GATHER cut, kept until a DFT reads them, by tensor index.
  var framed: [Int: FramedSignal] = [:]
  var index = 0
  var op = TFLiteOperator(opcodeIndex: 0, inputs: [], outputs: [], optionsType: 0, options: nil, hasOptions2: false)
  var opName = ""
  var notes: [String] = []
  var float32Reasons: [String] = []
  /// The operators reading each tensor, by tensor index.
  var readers: [Int: [Int]] = [:]
  /// Operators a handler already computed with its own (a slice of an LSTM's last step).
  var absorbed: Set<Int> = []
  /// Resource variables: the variable each VAR_HANDLE tensor names, by tensor index; the variables some
  /// ASSIGN_VARIABLE of subgraph 0 replaces; their values before the first invocation (CALL_ONCE), current
  /// values, and the state inputs of those read before being assigned.
  var handles: [Int: String] = [:]
  var assignedVariables: Set<String> = []
  var initialValues: [String: Constant] = [:]
  var variableValues: [String: ValueID] = [:]
  var stateInputs: [(variable: String, id: ValueID, name: String)] = []

  init(model: TFLiteModel) throws {
    self.model = model
    var names: [Int: String] = [:]
    for (index, op) in model.subgraph.operators.enumerated() {
      for input in Set(op.inputs) where input >= 0 { readers[input, default: []].append(index) }
      let code = model.operatorCodes[op.opcodeIndex].builtin
      if code == TFLiteBuiltin.varHandle, let out = op.outputs.first {
        names[out] = try Self.variableName(op.options, tensor: model.subgraph.tensors[out])
      } else if code == TFLiteBuiltin.assignVariable, let handle = op.inputs.first, let name = names[handle] {
        assignedVariables.insert(name)
      }
    }
    for index in model.subgraph.inputs {
      let tensor = model.subgraph.tensors[index]
      guard tensor.type == .float32 || tensor.type == .int8 || tensor.type == .uint8 || tensor.type == .int32
      else {
        throw TFLiteFormatError.invalid(
          path: model.path, field: "input '\(tensor.name)'", detail: "\(tensor.type.name) inputs are not converted")
      }
      let shape = try activationShape(tensor, role: "input")
      var value = try builder.addInput(name: tensor.name, type: TensorType(shape))
      // A quantized input (a full-integer model) is read as its integers; the graph computes with the real
      // values they stand for: real = scale * (q - zero point).
      if let q = tensor.quantization, tensor.type != .float32, q.scales.count == 1 {
        value = try builder.add(
          .activation(.linear(scale: q.scales[0], offset: -q.scales[0] * Float(q.zeroPoints[0]))),
          name: builder.uniqueName(tensor.name + "__dequantized"), inputs: [value])
      }
      values[index] = value
    }
  }

  var tensors: [TFLiteTensor] { model.subgraph.tensors }

  func fail(_ detail: String) -> TFLiteFormatError {
    .unsupportedOperator(path: model.path, operator: opName, index: index, detail: detail)
  }

  /// The IR shape of a tensor computed at run time: its file shape without the batch axis, which must be 1;
  /// a tensor of the batch axis alone (`x[:, 0]` of a `[1, N]` input) is one value, `[1]`.
  func activationShape(_ tensor: TFLiteTensor, role: String) throws -> [Int] {
    if tensor.shape == [1], role != "input" { return [1] }
    guard tensor.shape.count >= 2, tensor.shape[0] == 1 else {
      throw TFLiteFormatError.invalid(
        path: model.path, field: "\(role) '\(tensor.name)' shape",
        detail: "\(tensor.shape): a batch of 1 first, then at least one axis, is converted")
    }
    if let signature = tensor.shapeSignature, signature.dropFirst().contains(where: { $0 < 0 }) {
      throw TFLiteFormatError.invalid(
        path: model.path, field: "\(role) '\(tensor.name)' shape_signature",
        detail: "\(signature) leaves a size open; this reader converts the sizes the file gives")
    }
    return Array(tensor.shape.dropFirst())
  }

  /// The IR shape the file declares for a computed tensor; nil where its `shape_signature` leaves a size beyond
  /// the batch open (a size the graph computes from its input's shape: the size computed here stands).
  func declaredShape(_ tensor: TFLiteTensor, role: String) throws -> [Int]? {
    if let signature = tensor.shapeSignature, signature.dropFirst().contains(where: { $0 < 0 }) { return nil }
    return try activationShape(tensor, role: role)
  }

  /// Whether input `position` of the operator is a constant (stored, or a dequantized stored one).
  func isConstant(_ position: Int) -> Bool {
    guard position < op.inputs.count, op.inputs[position] >= 0 else { return false }
    let index = op.inputs[position]
    // (an empty constant, a scalar's shape, has no bytes)
    let empty = tensors[index].shape.contains(0) && tensors[index].buffer > 0 && values[index] == nil
    return folded[index] != nil || model.isConstant(tensors[index]) || empty
  }

  func tensor(_ position: Int) throws -> TFLiteTensor {
    guard position < op.inputs.count, op.inputs[position] >= 0 else { throw fail("input \(position) is missing") }
    return tensors[op.inputs[position]]
  }

  var output: TFLiteTensor { tensors[op.outputs[0]] }

  /// A constant input's float values (dequantized when stored quantized or as float16).
  func constant(_ position: Int) throws -> Constant {
    let tensor = try tensor(position)
    if let values = folded[op.inputs[position]] {
      return Constant(shape: foldedShapes[op.inputs[position]] ?? tensor.shape, values: values)
    }
    guard isConstant(position) else { throw fail("input \(position) ('\(tensor.name)') must be a constant") }
    let values = try model.floatValues(of: tensor)
    guard values.allSatisfy(\.isFinite) else {
      throw fail("constant '\(tensor.name)' holds a value that is not finite")
    }
    return Constant(shape: tensor.shape, values: values)
  }

  func ints(_ position: Int) throws -> [Int] {
    let tensor = try tensor(position)
    if let values = folded[op.inputs[position]] {
      guard values.allSatisfy({ $0 == $0.rounded() && abs($0) < Float(1 << 24) }) else {
        throw fail("input \(position) ('\(tensor.name)') must hold integers")
      }
      return values.map { Int($0) }
    }
    guard isConstant(position) else { throw fail("input \(position) ('\(tensor.name)') must be a constant") }
    return try model.intValues(of: tensor)
  }

  /// Input `position` as an IR value: a computed tensor, or a constant broadcast against activations of
  /// rank `rank` (its leading 1 dropped when it has that rank).
  mutating func value(_ position: Int, broadcastRank rank: Int? = nil) throws -> ValueID {
    let tensor = try tensor(position)
    if let id = values[op.inputs[position]] { return id }
    if framed[op.inputs[position]] != nil {
      throw fail("reads frames of a signal ('\(tensor.name)'), which only a window, RFFT2D and its parts read")
    }
    var constant = try self.constant(position)
    if let rank, constant.shape.count == rank, constant.shape.first == 1 {
      constant = Constant(shape: Array(constant.shape.dropFirst()), values: constant.values)
    }
    let id = try builder.add(.constant(constant), name: builder.uniqueName(tensor.name), inputs: [])
    values[op.inputs[position]] = id
    return id
  }

  /// Adds an operation; the last one of an operator gets the output tensor's name and is recorded as it.
  mutating func add(_ operation: Operation, _ inputs: [ValueID], final: Bool = true, checked: Bool = true) throws
    -> ValueID
  {
    let name = final ? output.name : output.name + "__" + operation.kindName
    let id = try builder.add(operation, name: builder.uniqueName(name), inputs: inputs)
    if final {
      if checked, let expected = try declaredShape(output, role: "output of operator \(index)"),
        builder.type(of: id).shape != expected
      {
        throw fail("computes \(builder.type(of: id).shape) where the file declares \(expected) for '\(output.name)'")
      }
      values[op.outputs[0]] = id
    }
    return id
  }

  /// The operator's options table when it is the expected `BuiltinOptions` member.
  func options(_ tag: Int) throws -> FlatTable? {
    guard let table = op.options else { return nil }
    guard op.optionsType == tag else {
      throw fail("its options are BuiltinOptions member \(op.optionsType), not \(tag)")
    }
    return table
  }

  /// A fused activation (`ActivationFunctionType`) after `value`, as the final operation.
  mutating func fused(_ code: Int8, after operation: Operation, _ inputs: [ValueID]) throws {
    let activation: Activation?
    switch code {
    case 0: activation = nil
    case 1: activation = .relu
    case 2: activation = .clip(min: -1, max: 1)
    case 3: activation = .clip(min: 0, max: 6)
    case 4: activation = .tanh
    default: throw fail("fused activation \(code) (SIGN_BIT) has no Core ML layer")
    }
    guard let activation else {
      _ = try add(operation, inputs)
      return
    }
    let value = try add(operation, inputs, final: false)
    _ = try add(.activation(activation), [value])
  }
}
