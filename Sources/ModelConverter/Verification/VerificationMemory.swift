import Foundation
import ModelIR

/// What `ParityVerifier` holds in memory for one random sample, planned from the two graphs' shapes
/// before anything runs, and how many samples it runs at once within its limit.
///
/// The layer-by-layer comparison keeps every value of both runs until the sample is accumulated, so one
/// sample holds at most every value of the source graph and of the converted graph (twice the
/// converted one's when compressed weights are compared from the source's values), plus one tensor in
/// a changed layout, plus what the runtimes' kernels hold for the thread that runs it
/// (`Interpreter.kernelBytesPerThread`: oneDNN scratchpads and the largest im2col buffer). A model whose
/// declared input makes that more than the limit is refused before it runs (a hostile file can declare
/// an input of 2^31 elements in a file of a few KB); samples run at once are as many as fit.
public struct VerificationMemory: Sendable, Equatable, Codable {
  /// Bytes of tensors one sample holds at most.
  public var bytesPerSample: Int
  /// Random samples run at the same time (each on its own core).
  public var samplesAtOnce: Int
  /// The bytes of tensors verify may hold: `VerificationOptions.memoryLimit`, or `RuntimeMemory.defaultLimit`.
  public var limit: Int

  /// The plan for `samples` samples on at most `threads` cores; throws when one sample does not fit in `limit`.
  /// `kernelBytes`: what the two runtimes' kernels hold for each thread that runs them (`Interpreter.kernelBytesPerThread`).
  static func plan(
    source: Graph, converted: Graph, convertedPath: String, kernelBytes: Int, comparesLayersLocally: Bool, samples: Int,
    threads: Int, limit: Int
  ) throws -> VerificationMemory {
    let (sourceBytes, sourceLargest) = RuntimeMemory.tensorBytes(in: source)
    let (convertedBytes, convertedLargest) = RuntimeMemory.tensorBytes(in: converted)
    var perSample = sourceBytes
    for part in [
      convertedBytes, comparesLayersLocally ? convertedBytes : 0, max(sourceLargest, convertedLargest), kernelBytes,
    ] {
      perSample = RuntimeMemory.saturating(perSample.addingReportingOverflow(part))
    }
    guard perSample <= limit else {
      throw VerificationError.exceedsMemory(path: convertedPath, bytesPerSample: perSample, limit: limit)
    }
    let fitting = perSample == 0 ? threads : limit / perSample
    return VerificationMemory(
      bytesPerSample: perSample, samplesAtOnce: max(1, min(threads, samples, fitting)), limit: limit)
  }
}
