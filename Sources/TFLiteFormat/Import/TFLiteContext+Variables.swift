import ModelIR

/// A resource variable the model carries from one invocation to the next (a streaming model's ring buffer):
/// in the converted model an input holding its value before the prediction and an output holding the value
/// the prediction assigns, which the app feeds back as the next prediction's input.
public struct TFLiteStreamingState: Sendable, Equatable {
  /// The variable's `shared_name`.
  public var variable: String
  /// The graph input (its value before the invocation) and output (after).
  public var input: String
  public var output: String
  /// The value CALL_ONCE's initializer assigns, real values (dequantized), in the IR's shape.
  public var initial: Constant
}

/// Resource variables: VAR_HANDLE names one (by `shared_name`), READ_VARIABLE reads it, ASSIGN_VARIABLE
/// replaces it, CALL_ONCE runs the initializer subgraph that assigns their first values (constants) once.
/// Values are real numbers in the IR (a full-integer model's int8 variable is read dequantized).
extension TFLiteContext {
  /// VAR_HANDLE: the resource tensor stands for the variable named by `shared_name` (else `container`, else
  /// the tensor's name).
  mutating func variableHandle() throws {
    let name = try Self.variableName(options(111), tensor: output)
    handles[op.outputs[0]] = name
  }

  public static func variableName(_ table: FlatTable?, tensor: TFLiteTensor) throws -> String {
    let shared = try table?.string(1, "VarHandleOptions.shared_name") ?? ""
    let container = try table?.string(0, "VarHandleOptions.container") ?? ""
    return !shared.isEmpty ? shared : !container.isEmpty ? container : tensor.name
  }

  func variable(_ position: Int) throws -> String {
    guard position < op.inputs.count, op.inputs[position] >= 0, let name = handles[op.inputs[position]] else {
      throw fail("input \(position) is not a variable a VAR_HANDLE names")
    }
    return name
  }

  /// READ_VARIABLE: the variable's current value: assigned earlier in this invocation, else its value
  /// before the invocation (a state input, or its initial value when nothing ever assigns it).
  mutating func readVariable() throws {
    let name = try variable(0)
    if let current = variableValues[name] {
      values[op.outputs[0]] = current
      return
    }
    let shape = try activationShape(output, role: "variable '\(name)'")
    guard let initial = initialValues[name] else {
      throw fail("variable '\(name)' is read before any value is assigned to it (no CALL_ONCE initializer does)")
    }
    guard initial.shape == shape else {
      throw fail("variable '\(name)' is initialized with shape \(initial.shape), read as \(shape)")
    }
    let id: ValueID
    if assignedVariables.contains(name) {
      let inputName = builder.uniqueName(name + "_in")
      id = try builder.addInput(name: inputName, type: TensorType(shape))
      stateInputs.append((name, id, inputName))
    } else {
      // Never assigned: its initial value for ever.
      id = try builder.add(.constant(initial), name: builder.uniqueName(name), inputs: [])
    }
    variableValues[name] = id
    values[op.outputs[0]] = id
  }

  /// ASSIGN_VARIABLE: the variable's value from here on (and after the invocation).
  mutating func assignVariable() throws {
    let name = try variable(0)
    let value = try value(1)
    let shape = builder.type(of: value).shape
    if let initial = initialValues[name], initial.shape != shape {
      throw fail("variable '\(name)' is initialized with shape \(initial.shape), assigned \(shape)")
    }
    variableValues[name] = value
  }

  /// CALL_ONCE: the initializer subgraph may only give variables constant values (what TensorFlow's converter
  /// writes for a model's `tf.Variable`s); those are each variable's value before the first invocation.
  mutating func callOnce() throws {
    let index = Int(try options(103)?.i32(0, "CallOnceOptions.init_subgraph_index") ?? 0)
    guard index >= 1, index <= model.otherSubgraphs.count else {
      throw fail("init_subgraph_index \(index) of \(model.subgraphCount) subgraphs (the initializer is not subgraph 0)")
    }
    let subgraph = model.otherSubgraphs[index - 1]
    var handles: [Int: String] = [:]
    for (position, op) in subgraph.operators.enumerated() {
      let code = model.operatorCodes[op.opcodeIndex]
      let field = "subgraph \(index) operator \(position) (\(code.name))"
      switch code.builtin {
      case TFLiteBuiltin.varHandle:
        guard op.optionsType == 0 || op.optionsType == 111, let out = op.outputs.first else {
          throw fail("\(field): a VAR_HANDLE without its output or options")
        }
        handles[out] = try Self.variableName(op.options, tensor: subgraph.tensors[out])
      case TFLiteBuiltin.assignVariable:
        guard op.inputs.count == 2, op.inputs[0] >= 0, op.inputs[1] >= 0, let name = handles[op.inputs[0]] else {
          throw fail("\(field): assigns to no variable a VAR_HANDLE names")
        }
        let tensor = subgraph.tensors[op.inputs[1]]
        guard model.isConstant(tensor) else {
          throw fail("\(field): variable '\(name)' is initialized with a computed value; only constants are converted")
        }
        let values = try model.floatValues(of: tensor)
        guard values.allSatisfy(\.isFinite) else { throw fail("\(field): a value that is not finite") }
        guard tensor.shape.count >= 2, tensor.shape[0] == 1 else {
          throw fail("\(field): variable '\(name)' has shape \(tensor.shape) (a batch of 1, then at least one axis)")
        }
        initialValues[name] = Constant(shape: Array(tensor.shape.dropFirst()), values: values)
      default:
        throw fail("\(field): an initializer may only assign constants to variables")
      }
    }
  }
}
