import CoreMLCommon
import CProtobufC
import CoreMLSpec
import ModelIR

extension CoreMLLayerEmitter {
  /// Layer normalization over Keras' last axis (Core ML's C) from classic layers: channel means by
  /// `reduce`, broadcasting subtraction and `multiply` (shapes `[1, H, W]` against `[C, H, W]`), `unary` RSQRT
  /// for `1 / sqrt(variance + epsilon)`, then `scale` for gamma and beta.
  mutating func emitLayerNormalization(_ norm: LayerNormalization, name: String, input: String, output: String, channels: Int) throws {
    func blob(_ suffix: String) -> String { "\(name)__\(suffix)__output" }
    func reduceMean(_ source: String, _ target: String, _ step: String) {
      let params = arena.message(core_ml__specification__reduce_layer_params__init)
      params.pointee.mode = CORE_ML__SPECIFICATION__REDUCE_LAYER_PARAMS__REDUCE_OPERATION__AVG
      params.pointee.axis = CORE_ML__SPECIFICATION__REDUCE_LAYER_PARAMS__REDUCE_AXIS__C
      let added = self.layer("\(name)__\(step)__", inputs: [source], output: target)
      added.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE
      added.pointee.reduce = params
    }
    func unary(_ source: String, _ target: String, _ step: String, _ configure: (UnsafeMutablePointer<CoreML__Specification__UnaryFunctionLayerParams>) -> Void) {
      let params = arena.message(core_ml__specification__unary_function_layer_params__init)
      params.pointee.scale = 1
      configure(params)
      let added = self.layer("\(name)__\(step)__", inputs: [source], output: target)
      added.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY
      added.pointee.unary = params
    }

    reduceMean(input, blob("mean"), "mean")
    try emitElementwise(.subtract, name: "\(name)__centered__", inputs: [input, blob("mean")], output: blob("centered"))
    try emitElementwise(.multiply, name: "\(name)__squared__", inputs: [blob("centered"), blob("centered")], output: blob("squared"))
    reduceMean(blob("squared"), blob("variance"), "variance")
    unary(blob("variance"), blob("rsqrt"), "rsqrt") {
      $0.pointee.type = CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__RSQRT
      $0.pointee.epsilon = norm.epsilon
    }
    let normalized = norm.gamma == nil && norm.beta == nil ? output : blob("normalized")
    try emitElementwise(.multiply, name: "\(name)__normalized__", inputs: [blob("centered"), blob("rsqrt")], output: normalized)
    guard normalized != output else { return }
    let params = arena.message(core_ml__specification__scale_layer_params__init)
    params.pointee.n_shapescale = 1
    params.pointee.shapescale = uint64s([channels])
    params.pointee.scale = try weights(norm.gamma?.values ?? [Float](repeating: 1, count: channels), layer: name)
    if let beta = norm.beta {
      params.pointee.hasbias = 1
      params.pointee.n_shapebias = 1
      params.pointee.shapebias = uint64s([channels])
      params.pointee.bias = try weights(beta.values, layer: name)
    }
    let scaled = layer(name, inputs: [normalized], output: output)
    scaled.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SCALE
    scaled.pointee.scale = params
  }

  /// `x / sqrt(sum over C of x^2 + epsilon)` for images: `reduce` SUMSQUARE over C, `unary` RSQRT, and a
  /// broadcasting `multiply`.
  mutating func emitChannelL2Normalize(epsilon: Float, name: String, input: String, output: String) throws {
    let reduce = arena.message(core_ml__specification__reduce_layer_params__init)
    reduce.pointee.mode = CORE_ML__SPECIFICATION__REDUCE_LAYER_PARAMS__REDUCE_OPERATION__SUMSQUARE
    reduce.pointee.axis = CORE_ML__SPECIFICATION__REDUCE_LAYER_PARAMS__REDUCE_AXIS__C
    let sum = layer("\(name)__sumsquare__", inputs: [input], output: "\(name)__sumsquare___output")
    sum.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE
    sum.pointee.reduce = reduce
    let unary = arena.message(core_ml__specification__unary_function_layer_params__init)
    unary.pointee.type = CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__RSQRT
    unary.pointee.epsilon = epsilon
    unary.pointee.scale = 1
    let inverse = layer("\(name)__rsqrt__", inputs: ["\(name)__sumsquare___output"], output: "\(name)__rsqrt___output")
    inverse.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY
    inverse.pointee.unary = unary
    try emitElementwise(.multiply, name: name, inputs: [input, "\(name)__rsqrt___output"], output: output)
  }
}
