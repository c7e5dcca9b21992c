/// Size limits every graph keeps, so that hostile or corrupt models fail with an error instead of
/// trapping on overflow or exhausting memory. Every real model we know of fits well inside them.
public enum GraphLimits {
  /// The most elements one tensor (or one weight) may hold: 2^31. The largest real tensors (ImageNet
  /// activations, a 50k x 4096 embedding table) have about 2^28.
  public static let maxElementCount = 1 << 31
  /// The most weight values one model may hold, and so one weight: 2^29 (2 GiB of float32). The Keras
  /// reader refuses more when it reads a file, and the ML Program reader accepts a constant of this size.
  public static let maxWeightCount = 1 << 29
  /// The largest size any one axis of a tensor, or any size-like parameter of an operation (kernel size,
  /// stride, dilation, padding, crop, upsampling or repeat factor, group count, units) may have: 2^24
  /// (16 777 216). One limit for every frontend, every writer and both Core ML readers: a value at most
  /// this converts into a file our readers (and verify) read back, a larger one is refused when the source
  /// is imported, naming the layer and field. Real models stay far below it (224-pixel images, a 50 000-word
  /// vocabulary, VGG's 25 088-wide flattened features).
  public static let maxSize = 1 << 24

  /// Whether every value is a size in `minimum...maxSize`.
  public static func areSizes(_ values: [Int], minimum: Int = 1) -> Bool {
    values.allSatisfy { $0 >= minimum && $0 <= maxSize }
  }
  /// The most copies `RepeatVector` may make (`n`): 10 000.
  public static let maxRepeatCount = 10_000
  /// The most time steps a recurrent layer may have when the writer unrolls it step by step
  /// (GRU with `reset_after`, backward sequences, bidirectional GRU/SimpleRNN): 10 000. Each step is
  /// a handful of Core ML layers; 10^5 steps took over 1 GB to convert.
  public static let maxUnrolledSteps = 10_000

  /// The product of sizes, or nil on overflow or beyond `maxElementCount`; nil for negative sizes.
  public static func elementCount(_ shape: [Int]) -> Int? {
    var count = 1
    for size in shape {
      guard size >= 0 else { return nil }
      let (product, overflow) = count.multipliedReportingOverflow(by: size)
      guard !overflow, product <= maxElementCount else { return nil }
      count = product
    }
    return count
  }
}

/// Overflow-checked arithmetic for shape inference: every result throws `GraphError.tooLarge` rather than trapping.
struct CheckedShape {
  let node: String

  func tooLarge(_ detail: String) -> GraphError { .tooLarge(node: node, detail: detail) }

  func add(_ values: Int...) throws -> Int {
    var total = 0
    for value in values {
      let (sum, overflow) = total.addingReportingOverflow(value)
      guard !overflow, sum <= GraphLimits.maxElementCount else {
        throw tooLarge("a size of more than \(GraphLimits.maxElementCount)")
      }
      total = sum
    }
    return total
  }

  func multiply(_ a: Int, _ b: Int) throws -> Int {
    let (product, overflow) = a.multipliedReportingOverflow(by: b)
    guard !overflow, product <= GraphLimits.maxElementCount else {
      throw tooLarge("a size of more than \(GraphLimits.maxElementCount)")
    }
    return product
  }

  func count(_ shape: [Int]) throws -> Int {
    guard let count = GraphLimits.elementCount(shape) else {
      throw tooLarge("shape \(shape) has negative sizes or more than \(GraphLimits.maxElementCount) elements")
    }
    return count
  }
}
