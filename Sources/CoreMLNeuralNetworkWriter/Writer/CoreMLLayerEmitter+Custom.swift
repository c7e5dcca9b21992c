import CoreMLCommon
import CProtobufC
import CoreMLSpec
import ModelIR

extension CoreMLLayerEmitter {
  /// A `custom` layer: the class name, parameter dictionary and weights the app's `MLCustomLayer` reads.
  mutating func emitCustom(_ custom: CustomLayer, name: String, inputs: [String], output: String) throws {
    let params = arena.message(core_ml__specification__custom_layer_params__init)
    params.pointee.classname = arena.string(custom.className)
    params.pointee.description = arena.string(custom.description)
    let weights = try custom.weights.map { try self.weights($0.values, layer: name) }
    params.pointee.n_weights = weights.count
    params.pointee.weights = arena.pointerArray(weights)
    // Sorted keys keep the file the same from run to run.
    let entries = custom.parameters.keys.sorted().map { key -> UnsafeMutablePointer<CoreML__Specification__CustomLayerParams__ParametersEntry> in
      let value = arena.message(core_ml__specification__custom_layer_params__custom_layer_param_value__init)
      switch custom.parameters[key]! {
      case .double(let number):
        value.pointee.value_case = CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_DOUBLE_VALUE
        value.pointee.doublevalue = number
      case .string(let text):
        value.pointee.value_case = CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_STRING_VALUE
        value.pointee.stringvalue = arena.string(text)
      case .int(let number):
        value.pointee.value_case = CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_LONG_VALUE
        value.pointee.longvalue = number
      case .bool(let flag):
        value.pointee.value_case = CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_BOOL_VALUE
        value.pointee.boolvalue = flag ? 1 : 0
      }
      let entry = arena.message(core_ml__specification__custom_layer_params__parameters_entry__init)
      entry.pointee.key = arena.string(key)
      entry.pointee.value = value
      return entry
    }
    params.pointee.n_parameters = entries.count
    params.pointee.parameters = arena.pointerArray(entries)
    let layer = layer(name, inputs: inputs, output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CUSTOM
    layer.pointee.custom = params
    // Custom layers arrived with Core ML 1.2 (specification 2).
    raiseSpecificationVersion(to: 2)
  }
}
