import CProtobufC
import CoreMLSpec
import ModelIR

/// Compares a model written at its default input size with the same model written at another size, to
/// prove its layers compute every allowed size: every neural-network layer and every ML Program operation
/// must be the same message (weights, attributes, constants) at both sizes; only the sizes of an ML
/// Program's value types may differ (those become unknown dimensions). A layer that bakes a size is
/// refused by name.
public enum WrittenModelComparison {
  /// The declared shapes of a written model's features: multiarrays their shape, images `[height, width]`.
  public struct Features: Sendable, Equatable {
    public var inputs: [String: [Int]]
    public var outputs: [String: [Int]]
  }

  /// The feature shapes `model` declares.
  public static func features(of model: EncodedModel) throws -> Features {
    try withUnpacked(model) { spec in
      var features = Features(inputs: [:], outputs: [:])
      guard let description = spec.pointee.description else { return features }
      for (list, count, isInput) in [
        (description.pointee.input, description.pointee.n_input, true),
        (description.pointee.output, description.pointee.n_output, false),
      ] {
        for index in 0..<count {
          guard let feature = list?[index], let name = feature.pointee.name, let type = feature.pointee.type else {
            continue
          }
          var shape: [Int]?
          switch type.pointee.type_case {
          case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE:
            if let array = type.pointee.multiarraytype {
              shape = (0..<array.pointee.n_shape).map { Int(array.pointee.shape[$0]) }
            }
          case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE:
            if let image = type.pointee.imagetype { shape = [Int(image.pointee.height), Int(image.pointee.width)] }
          default: break
          }
          guard let shape else { continue }
          if isInput {
            features.inputs[String(cString: name)] = shape
          } else {
            features.outputs[String(cString: name)] = shape
          }
        }
      }
      return features
    }
  }

  /// The ML Program value dimensions whose sizes differ between `base` and `other` (empty for a neural
  /// network); throws `CoreMLWriterError.fixedSizeLayer` naming the first layer or operation that differs
  /// in anything else.
  public static func varyingDimensions(_ base: EncodedModel, _ other: EncodedModel) throws -> Variation {
    guard base.format == other.format else {
      throw CoreMLWriterError.invalidOption("the models compared are written in different formats")
    }
    return try withUnpacked(base) { a in
      try withUnpacked(other) { b in
        var varying = Variation()
        switch (a.pointee.type_case, b.pointee.type_case) {
        case (CORE_ML__SPECIFICATION__MODEL__TYPE_ML_PROGRAM, CORE_ML__SPECIFICATION__MODEL__TYPE_ML_PROGRAM):
          guard let programA = a.pointee.mlprogram, let programB = b.pointee.mlprogram,
            programA.pointee.n_functions == programB.pointee.n_functions
          else { throw fixed("program", "its functions differ") }
          for index in 0..<programA.pointee.n_functions {
            guard let entryA = programA.pointee.functions[index], let entryB = programB.pointee.functions[index],
              let functionA = entryA.pointee.value, let functionB = entryB.pointee.value,
              string(entryA.pointee.key) == string(entryB.pointee.key),
              functionA.pointee.n_inputs == functionB.pointee.n_inputs,
              functionA.pointee.n_block_specializations == functionB.pointee.n_block_specializations
            else { throw fixed("program", "its functions differ") }
            try compareTypes(
              functionA.pointee.inputs, functionB.pointee.inputs, count: functionA.pointee.n_inputs, owner: "inputs",
              into: &varying.dimensions)
            for block in 0..<functionA.pointee.n_block_specializations {
              guard let blockA = functionA.pointee.block_specializations[block]?.pointee.value,
                let blockB = functionB.pointee.block_specializations[block]?.pointee.value
              else { throw fixed("program", "its blocks differ") }
              try compareBlock(blockA, blockB, depth: 0, into: &varying)
            }
          }
          try varying.checkInferredSizes()
          if base.weights != other.weights {
            try compareWeights(a, base: base, other: other)
          }
        default:
          let (layersA, countA) = layers(a)
          let (layersB, countB) = layers(b)
          guard countA == countB, let layersA, let layersB, a.pointee.type_case == b.pointee.type_case else {
            let shared = min(countA, countB)
            let index =
              (0..<shared).first {
                string(layersA?[$0]?.pointee.name) != string(layersB?[$0]?.pointee.name)
              } ?? shared
            let layer = index < countA ? layersA?[index] : layersB?[index]
            throw fixed(
              layer.map { string($0.pointee.name) } ?? "network",
              "the network has other layers here at another input size (a layer added or left out for one size)")
          }
          for index in 0..<countA {
            guard let layerA = layersA[index], let layerB = layersB[index] else { continue }
            if packed(
              layerA, core_ml__specification__neural_network_layer__get_packed_size,
              core_ml__specification__neural_network_layer__pack)
              != packed(
                layerB, core_ml__specification__neural_network_layer__get_packed_size,
                core_ml__specification__neural_network_layer__pack)
            {
              throw fixed(
                string(layerA.pointee.name),
                "its parameters change with the input size (a size is written into the layer)")
            }
          }
        }
        return varying
      }
    }
  }

  /// What differs between a model written at its default size and at another: the dimensions of ML
  /// Program values whose sizes differ, and the constants whose one differing entry can be inferred.
  public struct Variation: Sendable, Equatable {
    /// Value names and the dimensions of their tensor types that differ.
    public var dimensions: [String: Set<Int>] = [:]
    /// `const` operations (by output name) read only as reshape targets, and the entry that differs.
    public var inferred: [String: Set<Int>] = [:]
    /// Each value name's readers, as `operation type.argument`.
    var uses: [String: Set<String>] = [:]

    public init() {}

    public mutating func merge(_ other: Variation) {
      dimensions.merge(other.dimensions) { $0.union($1) }
      inferred.merge(other.inferred) { $0.union($1) }
      uses.merge(other.uses) { $0.union($1) }
    }

    /// The constants to write with an inferred (-1) entry, by output name; refused when a constant is read by
    /// anything but a reshape's `shape`, or differs in more than one entry.
    public func inferredSizes() throws -> [String: Int] {
      try checkInferredSizes()
      return inferred.compactMapValues { $0.count == 1 ? $0.first : nil }
    }

    func checkInferredSizes() throws {
      for (name, indices) in inferred.sorted(by: { $0.key < $1.key }) {
        guard indices.count == 1, let readers = uses[name], !readers.isEmpty, readers == ["reshape.shape"] else {
          throw WrittenModelComparison.fixed(
            name,
            "the 'const' operation's values change with the input size (a size is written into it) and \(indices.count > 1 ? "differ in more than one place" : "are read by more than a reshape's target")"
          )
        }
      }
    }

    mutating func recordUses(_ op: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>) {
      let type = WrittenModelComparison.string(op.pointee.type)
      for index in 0..<op.pointee.n_inputs {
        guard let entry = op.pointee.inputs[index], let argument = entry.pointee.value else { continue }
        let key = WrittenModelComparison.string(entry.pointee.key)
        for binding in 0..<argument.pointee.n_arguments {
          guard let bound = argument.pointee.arguments[binding],
            bound.pointee.binding_case == CORE_ML__SPECIFICATION__MILSPEC__ARGUMENT__BINDING__BINDING_NAME
          else { continue }
          uses[WrittenModelComparison.string(bound.pointee.name), default: []].insert("\(type).\(key)")
        }
      }
    }
  }

  /// The one entry in which two `const` operations' int32 values differ (both positive sizes there), else nil.
  static func inferableIndex(
    _ a: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>,
    _ b: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>
  ) -> Int? {
    guard string(a.pointee.type) == "const", let valuesA = intValues(a), let valuesB = intValues(b),
      valuesA.count == valuesB.count
    else { return nil }
    let differing = valuesA.indices.filter { valuesA[$0] != valuesB[$0] }
    guard differing.count == 1, let index = differing.first, valuesA[index] > 0, valuesB[index] > 0,
      !valuesA.contains(-1)
    else { return nil }
    return index
  }

  /// A `const` operation's immediate int32 tensor, when that is its value.
  static func intValues(_ op: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>) -> [Int32]? {
    for index in 0..<op.pointee.n_attributes {
      guard let entry = op.pointee.attributes[index], string(entry.pointee.key) == "val",
        let value = entry.pointee.value,
        value.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_IMMEDIATE_VALUE,
        let immediate = value.pointee.immediatevalue,
        immediate.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__IMMEDIATE_VALUE__VALUE_TENSOR,
        let tensor = immediate.pointee.tensor,
        tensor.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__TENSOR_VALUE__VALUE_INTS,
        let ints = tensor.pointee.ints
      else { continue }
      return (0..<ints.pointee.n_values).map { ints.pointee.values[$0] }
    }
    return nil
  }

  // MARK: Helpers

  static func fixed(_ layer: String, _ detail: String) -> CoreMLWriterError {
    .fixedSizeLayer(layer: layer, detail: detail)
  }

  static func string(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

  static func withUnpacked<T>(
    _ model: EncodedModel, _ body: (UnsafeMutablePointer<CoreML__Specification__Model>) throws -> T
  ) throws -> T {
    let bytes = model.specification
    guard
      let spec = bytes.withUnsafeBufferPointer({
        core_ml__specification__model__unpack(nil, $0.count, $0.baseAddress)
      })
    else { throw CoreMLWriterError.invalidOption("a written specification could not be read back") }
    defer { core_ml__specification__model__free_unpacked(spec, nil) }
    return try body(spec)
  }

  static func layers(_ spec: UnsafeMutablePointer<CoreML__Specification__Model>) -> (
    UnsafeMutablePointer<UnsafeMutablePointer<CoreML__Specification__NeuralNetworkLayer>?>?, Int
  ) {
    switch spec.pointee.type_case {
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK:
      return (spec.pointee.neuralnetwork?.pointee.layers, spec.pointee.neuralnetwork?.pointee.n_layers ?? 0)
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER:
      return (
        spec.pointee.neuralnetworkclassifier?.pointee.layers,
        spec.pointee.neuralnetworkclassifier?.pointee.n_layers ?? 0
      )
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_REGRESSOR:
      return (
        spec.pointee.neuralnetworkregressor?.pointee.layers, spec.pointee.neuralnetworkregressor?.pointee.n_layers ?? 0
      )
    default: return (nil, 0)
    }
  }

  static func packed<M>(
    _ message: UnsafeMutablePointer<M>, _ size: (UnsafePointer<M>?) -> Int,
    _ pack: (UnsafePointer<M>?, UnsafeMutablePointer<UInt8>?) -> Int
  ) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: size(message))
    _ = bytes.withUnsafeMutableBufferPointer { pack(message, $0.baseAddress) }
    return bytes
  }

  /// The operations of two blocks in order: the same messages but for their outputs' sizes (recorded in
  /// `varying`) and their nested blocks (compared the same way).
  static func compareBlock(
    _ a: UnsafeMutablePointer<CoreML__Specification__MILSpec__Block>,
    _ b: UnsafeMutablePointer<CoreML__Specification__MILSpec__Block>, depth: Int, into varying: inout Variation
  ) throws {
    guard depth < 64 else { throw fixed("program", "its blocks are nested more than 64 deep") }
    guard a.pointee.n_operations == b.pointee.n_operations, a.pointee.n_inputs == b.pointee.n_inputs,
      a.pointee.n_outputs == b.pointee.n_outputs
    else {
      // The first operation that is not the same one at both sizes is the layer written for one size.
      func label(_ op: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>?) -> String {
        guard let op else { return "" }
        return string(op.pointee.type) + ":"
          + (op.pointee.n_outputs > 0 ? string(op.pointee.outputs[0]?.pointee.name) : "")
      }
      let shared = min(a.pointee.n_operations, b.pointee.n_operations)
      let index = (0..<shared).first { label(a.pointee.operations[$0]) != label(b.pointee.operations[$0]) } ?? shared
      let op = index < a.pointee.n_operations ? a.pointee.operations[index] : b.pointee.operations[index]
      let name =
        op.map { $0.pointee.n_outputs > 0 ? string($0.pointee.outputs[0]?.pointee.name) : "program" } ?? "program"
      throw fixed(
        name,
        "the program has other operations here at another input size (an operation added or left out for one size, such as a broadcast that sizes of 1 make needless)"
      )
    }
    try compareTypes(
      a.pointee.inputs, b.pointee.inputs, count: a.pointee.n_inputs, owner: "block", into: &varying.dimensions)
    for index in 0..<a.pointee.n_operations {
      guard let opA = a.pointee.operations[index], let opB = b.pointee.operations[index] else { continue }
      let name = opA.pointee.n_outputs > 0 ? string(opA.pointee.outputs[0]?.pointee.name) : string(opA.pointee.type)
      guard opA.pointee.n_outputs == opB.pointee.n_outputs, opA.pointee.n_blocks == opB.pointee.n_blocks else {
        throw fixed(name, "it has other outputs at another input size")
      }
      // The operation without its outputs and nested blocks: type, inputs, attributes, constants.
      func bare(_ op: UnsafeMutablePointer<CoreML__Specification__MILSpec__Operation>) -> [UInt8] {
        let (outputs, blocks) = (op.pointee.n_outputs, op.pointee.n_blocks)
        op.pointee.n_outputs = 0
        op.pointee.n_blocks = 0
        defer {
          op.pointee.n_outputs = outputs
          op.pointee.n_blocks = blocks
        }
        return packed(
          op, core_ml__specification__milspec__operation__get_packed_size,
          core_ml__specification__milspec__operation__pack)
      }
      varying.recordUses(opA)
      if bare(opA) != bare(opB) {
        // A constant of sizes differing in one place (a reshape's target with the steps or the height in
        // it) can leave that size to be inferred (-1), when only reshapes read it as their shape.
        if let index = inferableIndex(opA, opB) {
          varying.inferred[name, default: []].insert(index)
          try compareTypes(
            opA.pointee.outputs, opB.pointee.outputs, count: opA.pointee.n_outputs, owner: name,
            into: &varying.dimensions)
          continue
        }
        throw fixed(
          name,
          "the '\(string(opA.pointee.type))' operation's inputs or constants change with the input size (a size is written into it)"
        )
      }
      try compareTypes(
        opA.pointee.outputs, opB.pointee.outputs, count: opA.pointee.n_outputs, owner: name, into: &varying.dimensions)
      for block in 0..<opA.pointee.n_blocks {
        guard let blockA = opA.pointee.blocks[block], let blockB = opB.pointee.blocks[block] else { continue }
        try compareBlock(blockA, blockB, depth: depth + 1, into: &varying)
      }
    }
  }

  /// Named value types of the same names, data types and ranks; the dimensions whose sizes differ recorded.
  static func compareTypes(
    _ a: UnsafeMutablePointer<UnsafeMutablePointer<CoreML__Specification__MILSpec__NamedValueType>?>?,
    _ b: UnsafeMutablePointer<UnsafeMutablePointer<CoreML__Specification__MILSpec__NamedValueType>?>?, count: Int,
    owner: String, into varying: inout [String: Set<Int>]
  ) throws {
    for index in 0..<count {
      guard let namedA = a?[index], let namedB = b?[index] else { continue }
      let name = string(namedA.pointee.name)
      guard name == string(namedB.pointee.name) else { throw fixed(owner, "its values are named otherwise") }
      guard let typeA = namedA.pointee.type, let typeB = namedB.pointee.type else { continue }
      guard typeA.pointee.type_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_TENSOR_TYPE,
        typeB.pointee.type_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE_TYPE__TYPE_TENSOR_TYPE,
        let tensorA = typeA.pointee.tensortype, let tensorB = typeB.pointee.tensortype
      else {
        let size = core_ml__specification__milspec__value_type__get_packed_size
        let pack = core_ml__specification__milspec__value_type__pack
        if packed(typeA, size, pack) != packed(typeB, size, pack) { throw fixed(owner, "value '\(name)' changes type") }
        continue
      }
      guard tensorA.pointee.datatype == tensorB.pointee.datatype,
        tensorA.pointee.n_dimensions == tensorB.pointee.n_dimensions
      else { throw fixed(owner, "value '\(name)' changes type or rank with the input size") }
      for dimension in 0..<tensorA.pointee.n_dimensions {
        guard let dimA = tensorA.pointee.dimensions[dimension], let dimB = tensorB.pointee.dimensions[dimension] else {
          continue
        }
        let constant = CORE_ML__SPECIFICATION__MILSPEC__DIMENSION__DIMENSION_CONSTANT
        let sizeA = dimA.pointee.dimension_case == constant ? dimA.pointee.constant?.pointee.size : nil
        let sizeB = dimB.pointee.dimension_case == constant ? dimB.pointee.constant?.pointee.size : nil
        if sizeA != sizeB { varying[name, default: []].insert(dimension) }
      }
    }
  }

  /// Weight files that differ: the first constant whose stored values differ is named.
  static func compareWeights(
    _ spec: UnsafeMutablePointer<CoreML__Specification__Model>, base: EncodedModel, other: EncodedModel
  ) throws {
    let readerA = try MILBlobStorage.Reader(bytes: base.weights ?? [], path: "weight.bin")
    let readerB = try MILBlobStorage.Reader(bytes: other.weights ?? [], path: "weight.bin")
    var culprit = "weights"
    if let program = spec.pointee.mlprogram {
      search: for index in 0..<program.pointee.n_functions {
        guard let function = program.pointee.functions[index]?.pointee.value else { continue }
        for block in 0..<function.pointee.n_block_specializations {
          guard let body = function.pointee.block_specializations[block]?.pointee.value else { continue }
          for op in 0..<body.pointee.n_operations {
            guard let operation = body.pointee.operations[op] else { continue }
            for attribute in 0..<operation.pointee.n_attributes {
              guard let value = operation.pointee.attributes[attribute]?.pointee.value,
                value.pointee.value_case == CORE_ML__SPECIFICATION__MILSPEC__VALUE__VALUE_BLOB_FILE_VALUE,
                let offset = value.pointee.blobfilevalue?.pointee.offset
              else { continue }
              if (try? readerA.blob(at: offset)) != (try? readerB.blob(at: offset)) {
                culprit =
                  operation.pointee.n_outputs > 0 ? string(operation.pointee.outputs[0]?.pointee.name) : "weights"
                break search
              }
            }
          }
        }
      }
    }
    throw fixed(culprit, "its stored values change with the input size (a size is written into a constant)")
  }
}
