import CoreMLCommon
import ModelIR

extension CoreMLLayerEmitter {
  /// A `custom` layer: the class name, parameter dictionary and weights the app's `MLCustomLayer` reads.
  mutating func emitCustom(_ custom: CustomLayer, name: String, inputs: [String], output: String) throws {
    // Sorted keys keep the file the same from run to run.
    let parameters = custom.parameters.keys.sorted().map { key -> (key: String, value: NeuralNetworkCustomParameter) in
      switch custom.parameters[key]! {
      case .double(let number): return (key, .double(number))
      case .string(let text): return (key, .string(text))
      case .int(let number): return (key, .int(number))
      case .bool(let flag): return (key, .bool(flag))
      }
    }
    try builder.custom(
      name, inputs: inputs, output: output, className: custom.className, description: custom.description,
      weights: custom.weights.map { .values($0.values) }, parameters: parameters)
  }
}
