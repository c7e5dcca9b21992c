import CoreMLCommon

// Typed parameters of the classic recurrent layers.

/// One gate's weights: the input matrix `W` `[outputVectorSize, inputVectorSize]`, the recursion matrix `R`
/// `[outputVectorSize, outputVectorSize]` and the bias vector `b` `[outputVectorSize]`.
public struct RecurrentGateWeights: Sendable, Equatable {
  public var weightMatrix: [Float]?
  public var recursionMatrix: [Float]?
  public var biasVector: [Float]?
  public init(weightMatrix: [Float]? = nil, recursionMatrix: [Float]? = nil, biasVector: [Float]? = nil) {
    (self.weightMatrix, self.recursionMatrix, self.biasVector) = (weightMatrix, recursionMatrix, biasVector)
  }
}

public struct SimpleRecurrentParameters: Sendable, Equatable {
  public var inputVectorSize = 0
  public var outputVectorSize = 0
  /// The single `activation` (empty when the message has none).
  public var activations: [ActivationParameters] = []
  public var sequenceOutput = false
  public var hasBiasVector = false
  /// Gate `x`.
  public var gate = RecurrentGateWeights()
  public var reverseInput = false
  public init() {}
}

public struct GRUParameters: Sendable, Equatable {
  public var inputVectorSize = 0
  public var outputVectorSize = 0
  /// The recurrent (gate) activation, then the output activation.
  public var activations: [ActivationParameters] = []
  public var sequenceOutput = false
  public var hasBiasVectors = false
  public var updateGate = RecurrentGateWeights()
  public var resetGate = RecurrentGateWeights()
  public var outputGate = RecurrentGateWeights()
  public var reverseInput = false
  public init() {}

  /// Gates `z r o`, in the order the importer lays them out.
  public var gates: [RecurrentGateWeights] { [updateGate, resetGate, outputGate] }
}

/// `LSTMParams` (an absent message reads as all defaults).
public struct LSTMSettings: Sendable, Equatable {
  public var sequenceOutput = false
  public var hasBiasVectors = false
  public var forgetBias = false
  public var hasPeepholeVectors = false
  public var coupledInputAndForgetGate = false
  public var cellClipThreshold: Float = 0
  public init() {}
}

/// `LSTMWeightParams`: gates `i f z o` (input, forget, block input, output).
public struct LSTMWeights: Sendable, Equatable {
  public var inputGate = RecurrentGateWeights()
  public var forgetGate = RecurrentGateWeights()
  public var blockInput = RecurrentGateWeights()
  public var outputGate = RecurrentGateWeights()
  /// Whether the message holds an input-gate peephole vector (the vectors themselves are not decoded).
  public var hasPeepholeVector = false
  public init() {}

  public var gates: [RecurrentGateWeights] { [inputGate, forgetGate, blockInput, outputGate] }
}

public struct UniDirectionalLSTMParameters: Sendable, Equatable {
  public var inputVectorSize = 0
  public var outputVectorSize = 0
  /// Gate activation, cell activation, output activation.
  public var activations: [ActivationParameters] = []
  public var params = LSTMSettings()
  public var weightParams = LSTMWeights()
  public var reverseInput = false
  public init() {}
}

public struct BiDirectionalLSTMParameters: Sendable, Equatable {
  public var inputVectorSize = 0
  public var outputVectorSize = 0
  public var activationsForwardLSTM: [ActivationParameters] = []
  public var activationsBackwardLSTM: [ActivationParameters] = []
  public var params = LSTMSettings()
  public var forwardWeights = LSTMWeights()
  public var backwardWeights = LSTMWeights()
  public init() {}
}
