import CoreMLReader
import CoreMLTestSupport
import Foundation
import TestSupport
import Testing

/// The reader's typed layer parameters, checked against a file coremltools wrote: the expected numbers are the
/// Keras model's configuration (Samples/Digits/digits_cnn.h5: Conv2D 8 and 16 filters, 3x3, padding "same";
/// MaxPooling2D 2x2 stride 2; Dense 32 and 10 units on the 4 * 4 * 16 = 256 flattened values), not our code's output.
@Suite struct LayerParameterTests {
  @Test func coremltoolsDigitsLayersHaveTheKerasConfiguration() throws {
    let spec = try CoreMLSpecReader.read(contentsOf: Fixtures.url("coremltools/digits_cnn.mlmodel"))
    let convolutions = spec.layers.compactMap(\.convolution)
    try #require(convolutions.count == 2)
    for (conv, (filters, inputs)) in zip(convolutions, [(8, 1), (16, 8)]) {
      #expect(conv.outputChannels == filters)
      #expect(conv.kernelChannels == inputs)
      #expect(conv.kernelSize == [3, 3])
      #expect(conv.stride == [1, 1])
      #expect(max(conv.nGroups, 1) == 1)
      #expect(!conv.isDeconvolution)
      #expect(conv.padding == .same(asymmetryMode: .known(.bottomRightHeavy)))
      #expect(conv.hasBias)
      #expect(conv.weights?.count == filters * inputs * 9)
      #expect(conv.bias?.count == filters)
    }

    let pool = try #require(spec.layers.compactMap(\.pooling).first)
    #expect(pool.type == .known(.max))
    #expect(pool.kernelSize == [2, 2] && pool.stride == [2, 2])
    #expect(!pool.globalPooling)

    let dense = spec.layers.compactMap(\.innerProduct)
    #expect(dense.map(\.inputChannels) == [256, 32])
    #expect(dense.map(\.outputChannels) == [32, 10])
    #expect(dense.allSatisfy { $0.hasBias && !$0.int8DynamicQuantize })
    #expect(dense.map { $0.weights?.count } == [256 * 32, 32 * 10])
    #expect(dense.map { $0.bias?.count } == [32, 10])

    // Keras' relu activations are ReLU activation layers; the softmax is softmaxND over the last axis.
    #expect(spec.layers.filter { $0.activation == .relu }.count == 3)
    #expect(
      spec.layers.contains { if case .softmaxND(let p) = $0.parameters { p.axis == -1 || p.axis == 1 } else { false } })
  }
}
